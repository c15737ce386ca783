import { setTimeout as wait } from "node:timers/promises";
import type { KubeObject, ObjectRef, ResourceType } from "../client/index.js";
import type { Clock } from "../queue/index.js";
import { groupOf } from "../resources/internal.js";
import { type AdaptiveConcurrency, adaptiveDefaults } from "./adaptive-workers.js";
import {
  Controller,
  type ControllerSpec,
  DEFAULT_CONCURRENCY,
  type MapFunc,
  type Reconciler,
  type Source,
} from "./controller.js";
import { type FairnessOptions, spareWorkers } from "./fairness.js";
import { ObjectRateLimiter } from "./object-cap.js";
import {
  type DaemonOptions,
  daemonSpec,
  type ObjectTask,
  type TimerOptions,
  timerSpec,
} from "./object-tasks.js";
import type { Predicate } from "./predicates.js";
import { OWN_VERBS, type PolicyRule, pluralOf } from "./rbac.js";
import { type Duration, parseDuration } from "./result.js";

/**
 * Builds a controller the way controller-runtime's builder does:
 *
 * @example
 * ```ts
 * const nginx = controller(Nginx)
 *   .owns(Deployment)                                  // a child's change reconciles its owner
 *   .watches(Pod, (pod) => ({ namespace: pod.metadata?.namespace, name: pod.metadata?.labels?.app ?? "" }))
 *   .withPredicates(generationChanged())               // ignore status-only updates of Nginx
 *   .concurrency(4)
 *   .reconcile(async (obj, ctx) => done());
 * ```
 */
export class ControllerBuilder<T extends KubeObject> {
  private readonly spec: Omit<ControllerSpec<T>, "reconcile">;

  constructor(primary: ResourceType<T>) {
    this.spec = {
      name: primary.kind.toLowerCase(),
      primary,
      owns: [],
      watches: [],
      sources: [],
      predicates: [],
      concurrency: DEFAULT_CONCURRENCY,
      namespaces: undefined,
      permissions: [],
    };
  }

  /** The controller's name: in logs, metrics, events, and as its server-side apply field manager. */
  named(name: string): this {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) {
      throw new TypeError(
        `Controller name "${name}" must be lowercase letters, digits, "-" and "." (it names a field manager)`,
      );
    }
    this.spec.name = name;
    return this;
  }

  /** Children this controller creates: their changes reconcile their controller owner. */
  owns(type: ResourceType, options: { metadataOnly?: boolean; labelSelector?: string } = {}): this {
    this.spec.owns.push({
      type,
      metadataOnly: options.metadataOnly ?? false,
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
    });
    return this;
  }

  /**
   * The kinds a `dependents(…)` declaration makes, in one call: each kind that is always served is
   * owned (as `.owns`: its changes wake the primary, its members are read from the cache); a kind
   * declared `activeWhenServed` gets only the RBAC to make, list and delete it, without a watch (a
   * watch of a kind whose CRD is not installed would keep the caches from syncing).
   *
   * @example
   * ```ts
   * controller(Site)
   *   .dependents(siteChildren) // .owns(ConfigMap).owns(Deployment), and RBAC for a ServiceMonitor
   *   .reconcile(async (site, ctx) => (await siteChildren.reconcile(site, ctx)).result);
   * ```
   */
  dependents(children: DeclaredChildren): this {
    for (const type of children.ownedTypes)
      if (!this.spec.owns.some((owned) => owned.type === type)) this.owns(type);
    for (const type of children.optionalTypes)
      this.permits({
        apiGroups: [groupOf(type.apiVersion)],
        resources: [pluralOf(type)],
        verbs: [...OWN_VERBS],
      });
    return this;
  }

  /**
   * Any other type: `map` says which primary objects a change concerns. `labelSelector` narrows
   * what is watched and cached (e.g. only the pods this operator created).
   */
  watches<U extends KubeObject>(type: ResourceType<U>, map: MapFunc<U>, options: WatchOptions<U> = {}): this {
    this.spec.watches.push({
      type,
      map: map as MapFunc<KubeObject>,
      predicates: (options.predicates ?? []) as Predicate[],
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
    });
    return this;
  }

  /** Filters changes of the primary type before they become reconciles. */
  withPredicates(...predicates: Predicate<T>[]): this {
    this.spec.predicates.push(...predicates);
    return this;
  }

  /** Reconciles running at once (different keys; one key never runs twice at once). Default 8. */
  concurrency(workers: number): this {
    if (!Number.isInteger(workers) || workers < 1)
      throw new RangeError(`concurrency must be a whole number ≥ 1, got ${workers}`);
    this.spec.concurrency = workers;
    return this;
  }

  /**
   * Workers that follow the load between `min` and `max` (off by default): more while keys wait
   * in the queue longer than `targetWaitMs` and the API server is not pushing back (429s, latency
   * above `maxApiLatencyMs`), fewer when idle or pushed back. Each change is logged with its reason
   * and shown as `controller_runtime_max_concurrent_reconciles`. See `adaptive-workers.ts`.
   *
   * @example
   * ```ts
   * controller(Nginx).adaptiveConcurrency({ min: 2, max: 32 }).reconcile(reconcileNginx);
   * ```
   */
  adaptiveConcurrency(options: AdaptiveConcurrency): this {
    adaptiveDefaults(options); // checked now, where the mistake is
    this.spec.adaptive = options;
    this.spec.concurrency = options.min ?? 1;
    return this;
  }

  /** Watches and reconciles in one namespace only (the informers are scoped to it). */
  inNamespace(namespace: string): this {
    return this.inNamespaces([namespace]);
  }

  /**
   * Watches and reconciles in these namespaces only, with one informer per namespace read as one
   * cache (`ctx.cache.list(T)` spans them all), so Roles in them are all the RBAC it needs. Without
   * it, the controller watches the manager's namespaces (`namespaces` / `WATCH_NAMESPACE`), by
   * default all of them. Cluster-scoped types are still watched cluster-wide.
   *
   * @example
   * ```ts
   * controller(ConfigMap).inNamespaces(["team-a", "team-b"]).reconcile(async (cm, ctx) => done());
   * ```
   */
  inNamespaces(namespaces: readonly string[]): this {
    this.spec.namespaces = checkNamespaces(namespaces, "inNamespaces");
    return this;
  }

  /**
   * RBAC the reconciler needs beyond the types declared above (e.g. reading Secrets it is only
   * told the name of); `kubeloop generate` adds these rules to the generated role as they are.
   */
  permits(...rules: PolicyRule[]): this {
    for (const rule of rules) {
      if (!rule.verbs.length || !rule.resources.length || !rule.apiGroups.length)
        throw new TypeError("permits(…): a rule needs apiGroups, resources and verbs");
    }
    this.spec.permissions.push(...rules);
    return this;
  }

  /**
   * How long one reconcile may run: past it, `ctx.signal` aborts, and a reconcile that then fails
   * is retried with backoff under the reason `ReconcileTimeout` and counted in
   * `controller_runtime_reconcile_timeouts_total` (controller-runtime's `ReconciliationTimeout`).
   * Client calls given `ctx.signal` stop at once; the reconciler's own waits must heed it too. No
   * timeout by default.
   *
   * @example
   * ```ts
   * controller(Nginx).reconcileTimeout("30s").reconcile(async (nginx, ctx) => done());
   * ```
   */
  reconcileTimeout(timeout: Duration): this {
    const ms = parseDuration(timeout);
    if (!(ms > 0)) throw new RangeError(`reconcileTimeout must be longer than 0, got ${String(timeout)}`);
    this.spec.reconcileTimeoutMs = ms;
    return this;
  }

  /**
   * The clock of this controller's queue (`after(…)` delays, retry backoff) and of `ctx.now()`.
   * Its `now()` must read wall-clock milliseconds (like `Date.now()`): scheduled work compares it
   * with times kept in status. Default: the system's. Tests pass a `JumpClock` (kubeloop/testing)
   * to move time forward to a schedule's next slot instead of waiting for it.
   */
  clock(clock: Clock): this {
    this.spec.clock = clock;
    return this;
  }

  /** Requests from outside Kubernetes (a queue, a webhook, a timer): each one reconciles its object. */
  source(source: Source): this {
    this.spec.sources.push(source);
    return this;
  }

  /** Reconciles `requests()`'s objects every `interval`, e.g. to poll an external system. */
  every(interval: Duration, requests: () => ObjectRef[] | Promise<ObjectRef[]>): this {
    const ms = parseDuration(interval);
    return this.source(async function* (signal) {
      while (!signal.aborted) {
        // Aborting ends the wait early; the listener goes with each wait (the signal lives on).
        await wait(ms, undefined, { signal }).catch(() => {});
        if (signal.aborted) return;
        yield* await requests();
      }
    });
  }

  /**
   * Fair turns among groups of keys within each priority of the queue, so one busy tenant does not
   * starve the rest. On by default, by namespace; `false` turns it off (FIFO within a priority).
   * `by` picks another group (e.g. a label), `weight` gives a group more reconciles per turn.
   *
   * @example
   * ```ts
   * controller(Nginx).fairness({ weight: (namespace) => (namespace === "gold" ? 4 : 1) }).reconcile(reconcileNginx);
   * ```
   */
  fairness(options: FairnessOptions | false): this {
    spareWorkers(options); // a bad spareWorkers fails here, not when the manager starts
    this.spec.fairness = options;
    return this;
  }

  /**
   * At most `max` reconciles of one object in any `window`, whatever their outcome (apart from
   * failure backoff). Reconciles over the cap are deferred to when the window allows, changes
   * meanwhile merged into that one run; each deferral counts in `kubeloop_reconcile_deferred_total`.
   *
   * @example
   * ```ts
   * controller(Nginx).maxReconcilesPerObject(1, "1s").reconcile(reconcileNginx);
   * ```
   */
  maxReconcilesPerObject(max: number, window: Duration): this {
    const cap = { max, window };
    new ObjectRateLimiter(cap, { now: () => 0 }); // checked now, where the mistake is
    this.spec.objectRateCap = cap;
    return this;
  }

  /**
   * Runs `task` every `interval` for each live object (kopf's `@timer`), on the replica that
   * reconciles it, until it is deleted or the controller stops; `initialDelay` before the first run,
   * `idle` to run only once the object has been unchanged that long. See `object-tasks.ts`.
   *
   * @example
   * ```ts
   * controller(Nginx)
   *   .timer("30s", async (nginx, ctx) => { await probe(nginx, ctx.signal); }, { idle: "1m" })
   *   .reconcile(reconcileNginx);
   * ```
   */
  timer(interval: Duration, task: ObjectTask<T>, options: TimerOptions = {}): this {
    this.spec.tasks = [...(this.spec.tasks ?? []), timerSpec(interval, task, options)];
    return this;
  }

  /**
   * Runs `task` once per live object, for as long as it lives (kopf's `@daemon`): `ctx.signal`
   * aborts on the object's deletion, when it leaves this replica (shard), and when the controller
   * stops (shutdown, leadership lost). Restarted with backoff when it throws. See `object-tasks.ts`.
   *
   * @example
   * ```ts
   * controller(Nginx)
   *   .daemon(async (nginx, ctx) => {
   *     while (!ctx.signal.aborted) await watchEndpoint(nginx, ctx.signal);
   *   })
   *   .reconcile(reconcileNginx);
   * ```
   */
  daemon(task: ObjectTask<T>, options: DaemonOptions = {}): this {
    this.spec.tasks = [...(this.spec.tasks ?? []), daemonSpec(task, options)];
    return this;
  }

  /**
   * Runs only while every kind it reconciles, owns or watches is served: the manager starts (and
   * is Ready) without it while a CRD is missing, starts it when the CRD is established, stops it
   * when the CRD is deleted, and starts it again when it returns, without a restart. `/readyz`
   * (`[+]crds ok: …`) and a log line say what waits and why. Adds the RBAC to watch CRDs.
   *
   * @example
   * ```ts
   * controller(Nginx).followsCrds().reconcile(reconcileNginx);
   * ```
   */
  followsCrds(): this {
    this.spec.followCrds = true;
    this.spec.permissions.push({
      apiGroups: ["apiextensions.k8s.io"],
      resources: ["customresourcedefinitions"],
      verbs: ["get", "list", "watch"],
    });
    return this;
  }

  reconcile(reconciler: Reconciler<T>): Controller<T> {
    return new Controller<T>({ ...this.spec, reconcile: reconciler });
  }
}

/** DNS-1123 labels, as the API server requires of namespace names. */
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * A set of namespaces to watch, checked: at least one, each a valid namespace name, none twice.
 * Returns a copy (the caller's array may change later).
 */
export function checkNamespaces(namespaces: readonly string[], where: string): readonly string[] {
  if (namespaces.length === 0)
    throw new TypeError(`${where}: give at least one namespace (omit it to watch all namespaces)`);
  for (const namespace of namespaces) {
    if (!NAMESPACE_NAME.test(namespace) || namespace.length > 63)
      throw new TypeError(
        `${where}: "${namespace}" is not a namespace name (lowercase letters, digits and "-", at most 63)`,
      );
  }
  const duplicate = namespaces.find((namespace, i) => namespaces.indexOf(namespace) !== i);
  if (duplicate) throw new TypeError(`${where}: namespace "${duplicate}" is given twice`);
  return Object.freeze([...namespaces]);
}

/** Which changes of an owned or watched type reach the controller: predicates, and a label selector for its informer. */
export interface WatchOptions<U extends KubeObject> {
  predicates?: Predicate<U>[];
  labelSelector?: string;
}

/** What `.dependents(…)` reads of a declaration (a `Dependents` from `dependents(…)`). */
export interface DeclaredChildren {
  /** Kinds always served: owned. */
  readonly ownedTypes: readonly ResourceType[];
  /** Kinds only active while served (`activeWhenServed`): RBAC only, no watch. */
  readonly optionalTypes: readonly ResourceType[];
}

/** Starts a controller definition for a primary type. */
export function controller<T extends KubeObject>(primary: ResourceType<T>): ControllerBuilder<T> {
  return new ControllerBuilder(primary);
}
