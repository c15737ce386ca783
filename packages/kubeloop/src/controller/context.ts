import type { Logger } from "pino";
import type { ApplyOptions, Client, Written } from "../client/index.js";
import {
  type KubeObject,
  kindKeyOf,
  type ObjectKey,
  objectKey,
  type ResourceType,
  type TypedObjectRef,
} from "../client/index.js";
import { type Condition, redactSecrets, setCondition, setControllerReference } from "../resources/index.js";
import { WriteTracker, writtenOf } from "./tracking-client.js";
import type { WriteAwareness } from "./write-awareness.js";

export type { Condition } from "../resources/index.js";

/**
 * What a reconcile gets besides the object: the client, cache reads, a logger that names the
 * object, and write helpers that do the right thing by default (server-side apply as the
 * controller, owner reference to the primary, status with observedGeneration and a Ready condition)
 * and remember what they wrote, so the next reconcile of this key never acts on an older cache.
 */

export interface CacheReader {
  /**
   * A cached object of a watched or owned type, named by a reference (the shape `client.get` takes);
   * `undefined` if it does not exist.
   *
   * @example
   * ```ts
   * import { controller, done } from "kubeloop";
   * import { ConfigMap, Deployment } from "kubeloop/k8s";
   *
   * controller(Deployment)
   *   .owns(ConfigMap)
   *   .reconcile(async (deployment, ctx) => {
   *     const settings = ctx.cache.get({ type: ConfigMap, namespace: ctx.namespace, name: `${ctx.name}-settings` });
   *     ctx.log.info({ found: settings !== undefined }, "settings");
   *     return done();
   *   });
   * ```
   */
  get<U extends KubeObject>(ref: TypedObjectRef<U>): U | undefined;
  /** @deprecated Pass a reference: `get({ type, namespace, name })` or `get(refTo(type, name, namespace))`. */
  get<U extends KubeObject>(type: ResourceType<U>, name: string, namespace?: string): U | undefined;
  /** Cached objects of a watched or owned type, optionally in one namespace and with these labels. */
  list<U extends KubeObject>(
    type: ResourceType<U>,
    filter?: { namespace?: string; labels?: Record<string, string> },
  ): U[];
}

/** Where a reconcile's events go (the manager's `EventRecorder`). */
export interface EventSink {
  event(
    regarding: KubeObject,
    event: { type: "Normal" | "Warning"; reason: string; action: string; note?: string },
  ): void;
}

/** Options of `ctx.status(…)`: the conditions written with the status. */
export interface StatusOptions {
  /**
   * Sets the `Ready` condition: `true`/`false`, or with a reason and message. `Progressing` is set
   * to the opposite when given as a boolean (the object is still converging).
   */
  ready?: boolean | { status: boolean; reason: string; message?: string };
}

/**
 * What a reconciler gets beside the object: the client, the cache, a logger bound to the object,
 * events, status writes, and the signal that aborts when the controller stops.
 */
export interface ReconcileContext<T extends KubeObject> {
  /** `namespace/name` (or `name` for cluster-scoped objects). */
  readonly key: ObjectKey;
  readonly namespace: string | undefined;
  readonly name: string;
  /** Unique per reconcile; in every log line of it. */
  readonly reconcileId: string;
  /**
   * True when the object is gone from the API server (removed, finalizers done): `object` is its
   * last known state. Clean up outside the cluster. Not to be confused with an object being
   * deleted, which still exists with a `deletionTimestamp` while finalizers run (`isDeleting`).
   */
  readonly gone: boolean;
  /** @deprecated Since 0.2: the same as {@link ReconcileContext.gone}, whose name says which "deleted" it is. */
  readonly deleted: boolean;
  /**
   * The manager's client, with every write recorded (create, update, patch, apply, delete, and the
   * helpers that use them, such as `addFinalizer(ctx.client, …)`): the next reconcile of this key
   * waits until the cache shows them, so it never acts on a cache older than its own writes.
   */
  readonly client: Client;
  readonly cache: CacheReader;
  readonly log: Logger;
  /**
   * Aborted when the manager stops and the grace period is over, or when this reconcile runs past
   * the controller's `reconcileTimeout`. `ctx.apply` and `ctx.status` pass it on; pass it to your
   * own client calls and waits too.
   */
  readonly signal: AbortSignal;
  /** Server-side apply as this controller, with the primary set as the object's controller owner. */
  apply<U extends KubeObject>(
    object: U,
    options?: Partial<ApplyOptions> & { owned?: boolean },
  ): Promise<Written<U>>;
  /** Merge-patches the primary's status, with `observedGeneration` and conditions kept right. */
  status(status: Record<string, unknown>, options?: StatusOptions): Promise<T>;
  /** Records an event about the primary (events.k8s.io/v1, aggregated and rate-limited). */
  event(type: "Normal" | "Warning", reason: string, note?: string): void;
  /**
   * The current wall-clock time: the controller's clock (`.clock(…)`) when it has one, so tests of
   * scheduled work move time instead of waiting. Use it, not `new Date()`, for schedules.
   */
  now(): Date;
}

export interface ContextDeps<T extends KubeObject> {
  controller: string;
  primaryType: ResourceType<T>;
  object: T;
  deleted: boolean;
  reconcileId: string;
  client: Client;
  cache: CacheReader;
  log: Logger;
  signal: AbortSignal;
  writes: WriteAwareness;
  events: EventSink | undefined;
  /** Wall-clock time; default the system's. */
  now?: () => Date;
}

export function createContext<T extends KubeObject>(deps: ContextDeps<T>): ReconcileContext<T> {
  const { object, client, controller } = deps;
  const key = objectKey(object);
  const tracker = new WriteTracker(deps.writes, key);
  const namespace = object.metadata?.namespace;
  const name = object.metadata?.name ?? "";
  return {
    key,
    namespace,
    name,
    reconcileId: deps.reconcileId,
    gone: deps.deleted,
    deleted: deps.deleted,
    client: tracker.client(client),
    cache: deps.cache,
    log: deps.log,
    signal: deps.signal,
    async apply(child, options = {}) {
      const { owned = true, ...applyOptions } = options;
      const desired =
        owned && child !== (object as KubeObject) ? withOwner(child, object, deps.primaryType) : child;
      // A controller owns its children's fields outright: force takes them back from a human's edit.
      const apply = () =>
        client.apply(desired, {
          fieldManager: controller,
          force: true,
          signal: deps.signal,
          ...applyOptions,
        });
      return tracker.write(writtenOf(desired), apply);
    },
    async status(status, options = {}) {
      const current = (object as { status?: { conditions?: Condition[] } }).status;
      const patch: Record<string, unknown> = { ...status, observedGeneration: object.metadata?.generation };
      if (options.ready !== undefined) {
        const ready = typeof options.ready === "boolean" ? { status: options.ready } : options.ready;
        let conditions = setCondition(current?.conditions ?? [], {
          type: "Ready",
          status: ready.status ? "True" : "False",
          reason:
            "reason" in ready && ready.reason ? ready.reason : ready.status ? "Reconciled" : "Progressing",
          message: "message" in ready && ready.message ? ready.message : "",
          observedGeneration: object.metadata?.generation,
        });
        if (typeof options.ready === "boolean") {
          conditions = setCondition(conditions, {
            type: "Progressing",
            status: ready.status ? "False" : "True",
            reason: ready.status ? "Reconciled" : "Progressing",
            message: "",
            observedGeneration: object.metadata?.generation,
          });
        }
        patch.conditions = conditions;
      }
      return patchPrimaryStatus(client, tracker, deps.primaryType, object, patch, deps.signal);
    },
    event(type, reason, note) {
      const redacted = note ? redactSecrets(note) : undefined;
      deps.events?.event(object, {
        type,
        reason,
        action: "Reconcile",
        ...(redacted ? { note: redacted } : {}),
      });
    },
    now: deps.now ?? (() => new Date()),
  };
}

/**
 * Merge-patches the primary's status subresource as a write of its own reconcile
 * (write-awareness.ts): its echo does not wake the key, and the next reconcile reads it.
 */
export function patchPrimaryStatus<T extends KubeObject>(
  client: Client,
  tracker: WriteTracker,
  type: ResourceType<T>,
  object: T,
  status: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<T> {
  const namespace = object.metadata?.namespace;
  const name = object.metadata?.name ?? "";
  const target = { kind: kindKeyOf(type), key: objectKey(object) };
  const patch = () =>
    client.patch(
      type,
      name,
      { status },
      { ...(namespace ? { namespace } : {}), subresource: "status", ...(signal ? { signal } : {}) },
    );
  return tracker.write(target, patch);
}

/**
 * Sets the primary as the child's controller owner (garbage collection deletes the child with it),
 * with the checks of `setControllerReference`. Objects from a cache may lack apiVersion and kind.
 */
function withOwner<U extends KubeObject>(child: U, owner: KubeObject, ownerType: ResourceType): U {
  return setControllerReference(child, {
    ...owner,
    apiVersion: owner.apiVersion ?? ownerType.apiVersion,
    kind: owner.kind ?? ownerType.kind,
  });
}
