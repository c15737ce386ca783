import type { Client } from "../client/index.js";
import {
  Forbidden,
  type KubeObject,
  keyOfRef,
  type ObjectRef,
  objectKey,
  type ResourceType,
} from "../client/index.js";
import { WatchForbidden } from "./errors.js";
import { type BackoffOptions, Reflector, type ReflectorState, type ReflectorStats } from "./reflector.js";
import { type IndexFunc, NAMESPACE_INDEX, Store } from "./store.js";

/**
 * An informer: a reflector feeding a store, and handlers told of every change. Reads come from
 * memory (`get`, `list`, `byIndex`); the server is read once per (re)list and then only watched.
 *
 * @example
 * ```ts
 * import { Client } from "kubeloop/client";
 * import { Informer } from "kubeloop/cache";
 * import { ConfigMap } from "kubeloop/k8s";
 *
 * const informer = new Informer(await Client.connect(), ConfigMap, { namespace: "default" });
 * const seen: string[] = [];
 * informer.on({ added: (cm) => seen.push(cm.metadata?.name ?? "") });
 * informer.start();
 * await informer.synced;
 * const all = informer.list(); // every ConfigMap of the namespace, from memory
 * ```
 */

export interface InformerOptions<T extends KubeObject> {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Cache metadata only (PartialObjectMetadata): for owned children whose bodies are not needed. */
  metadataOnly?: boolean;
  /** Extra indexes besides `namespace`. */
  indexes?: Record<string, IndexFunc<T>>;
  /**
   * Applied to every object before it is stored. Default {@link stripManagedFields}: managedFields
   * are often the largest part of an object and a controller never reads them.
   */
  transform?: ((object: T) => T) | null;
  inactivityTimeoutMs?: number;
  backoff?: Partial<BackoffOptions>;
  watchList?: boolean;
}

/** What an added or updated handler learns besides the object. */
export interface ChangeContext {
  /** True for objects delivered by a (re)list rather than a watch event (e.g. at start-up). */
  initial: boolean;
}

/** What a deleted handler learns besides the object. */
export interface DeleteContext {
  /**
   * True when the delete was inferred from a relist (the object vanished while the watch was
   * down): the object is its last known state, not its final one (client-go's DeletedFinalStateUnknown).
   */
  tombstone: boolean;
}

/** Callbacks on each change the informer sees; a handler's throw goes to the `onError` handlers, not to the others. */
export interface InformerHandlers<T> {
  added?: (object: T, context: ChangeContext) => void;
  updated?: (old: T, object: T, context: ChangeContext) => void;
  deleted?: (object: T, context: DeleteContext) => void;
}

/** An informer's state for readiness checks: its reflector's phase, synced or not, and its last error. */
export interface InformerHealth {
  state: ReflectorState;
  synced: boolean;
  /** The last list/watch failure, until the next success. */
  lastError: Error | undefined;
}

/**
 * Drops `metadata.managedFields` (often half of an object's size). It is set to `undefined` rather
 * than deleted: `delete` turns the metadata into a slower dictionary-mode object, and measured on
 * 5,000 server-returned Pods (8.3 KB of JSON each) it takes 6,041 B of heap per Pod against 5,665 B.
 */
export function stripManagedFields<T extends KubeObject>(object: T): T {
  if (object.metadata?.managedFields) object.metadata.managedFields = undefined;
  return object;
}

/** Objects serialised per scrape to estimate an informer's bytes: enough for a stable mean, cheap at any cache size. */
export const SIZE_SAMPLE = 64;

/**
 * A cache of one type (in one namespace or all) kept current by a reflector's list and watch: a
 * {@link Store} to read, with indexes, and handlers called on each change.
 */
export class Informer<T extends KubeObject> {
  readonly type: ResourceType<T>;
  /** The namespace watched; `undefined` for all namespaces (or a cluster-scoped type). */
  readonly namespace: string | undefined;
  /** Resolves once the first full list is in the store. */
  readonly synced: Promise<void>;
  private readonly store: Store<T>;
  private readonly reflector: Reflector<T>;
  private readonly handlers = new Set<InformerHandlers<T>>();
  private readonly errorHandlers = new Set<(error: Error) => void>();
  private readonly transform: ((object: T) => T) | undefined;
  private markSynced!: () => void;
  private hasSynced = false;
  private state: ReflectorState = "stopped";
  private lastError: Error | undefined;
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;

  constructor(client: Client, type: ResourceType<T>, options: InformerOptions<T> = {}) {
    this.type = type;
    this.namespace = options.namespace || undefined;
    this.store = new Store<T>(options.indexes);
    this.transform = options.transform === null ? undefined : (options.transform ?? stripManagedFields);
    this.synced = new Promise((resolve) => {
      this.markSynced = resolve;
    });
    this.reflector = new Reflector<T>(
      client,
      type,
      {
        replace: (objects) => this.replace(objects),
        added: (object) => this.upsert(object),
        modified: (object) => this.upsert(object),
        deleted: (object) => this.remove(object),
      },
      {
        ...pick(options, [
          "namespace",
          "labelSelector",
          "fieldSelector",
          "metadataOnly",
          "inactivityTimeoutMs",
          "watchList",
        ]),
        ...(options.backoff ? { backoff: options.backoff } : {}),
        onError: (failure) => {
          // RBAC refusals name the namespace and the grant that fixes them.
          const error =
            failure instanceof Forbidden ? new WatchForbidden(failure, type, this.namespace) : failure;
          this.lastError = error;
          for (const handler of this.errorHandlers) handler(error);
        },
        onState: (state) => {
          this.state = state;
          if (state === "watching") this.lastError = undefined;
        },
      },
    );
  }

  /** Subscribes to changes; returns the unsubscribe function. Late subscribers are not replayed the past. */
  on(handlers: InformerHandlers<T>): () => void {
    this.handlers.add(handlers);
    return () => this.handlers.delete(handlers);
  }

  /** Called with every list/watch failure (Forbidden, unknown kind, connection lost…). */
  onError(handler: (error: Error) => void): () => void {
    this.errorHandlers.add(handler);
    return () => this.errorHandlers.delete(handler);
  }

  start(): void {
    if (this.running) return;
    this.abort = new AbortController();
    this.running = this.reflector.run(this.abort.signal);
  }

  async stop(): Promise<void> {
    this.abort?.abort();
    await this.running;
    this.running = undefined;
  }

  get isSynced(): boolean {
    return this.hasSynced;
  }

  get health(): InformerHealth {
    return { state: this.state, synced: this.hasSynced, lastError: this.lastError };
  }

  get stats(): ReflectorStats {
    return this.reflector.stats;
  }

  get size(): number {
    return this.store.size;
  }

  /**
   * Roughly how many bytes the cached objects hold: their count times the mean JSON size of up to
   * {@link SIZE_SAMPLE} of them (`kubeloop_informer_bytes`). JSON length tracks what an object costs
   * in the heap closely enough to tell a 2 MB informer from a 2 GB one, at a cost that does not grow
   * with the cache (serialising every object at each scrape would). An estimate, not a heap measure.
   */
  approximateBytes(): number {
    const size = this.store.size;
    if (size === 0) return 0;
    const sample = this.store.sample(SIZE_SAMPLE);
    let bytes = 0;
    for (const object of sample) bytes += JSON.stringify(object).length;
    return Math.round((bytes / sample.length) * size);
  }

  /**
   * The cached object a reference names (its kind, if given, is the informer's), or `undefined`.
   *
   * @example
   * ```ts
   * const web = informer.get({ namespace: "default", name: "web" });
   * ```
   */
  get(ref: ObjectRef): T | undefined;
  /** @deprecated Pass a reference: `get({ namespace, name })`. */
  get(name: string, namespace?: string): T | undefined;
  get(ref: ObjectRef | string, namespace?: string): T | undefined {
    return this.store.get(keyOfRef(typeof ref === "string" ? { namespace, name: ref } : ref));
  }

  /** Cached objects, optionally of one namespace and matching a label filter. */
  list(filter: { namespace?: string; labels?: Record<string, string> } = {}): T[] {
    const candidates = filter.namespace
      ? this.store.byIndex(NAMESPACE_INDEX, filter.namespace)
      : this.store.list();
    if (!filter.labels) return candidates;
    const wanted = Object.entries(filter.labels);
    return candidates.filter((object) =>
      wanted.every(([key, value]) => object.metadata?.labels?.[key] === value),
    );
  }

  byIndex(index: string, value: string): T[] {
    return this.store.byIndex(index, value);
  }

  addIndex(name: string, fn: IndexFunc<T>): void {
    this.store.addIndex(name, fn);
  }

  private replace(objects: T[]): void {
    this.lastError = undefined;
    const changes = this.store.replace(objects.map((object) => this.prepare(object)));
    const context = { initial: true };
    for (const object of changes.added) this.emit((h) => h.added?.(object, context));
    for (const { old, object } of changes.updated) {
      if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion) {
        this.emit((h) => h.updated?.(old, object, context));
      }
    }
    for (const object of changes.vanished) this.emit((h) => h.deleted?.(object, { tombstone: true }));
    if (!this.hasSynced) {
      this.hasSynced = true;
      this.markSynced();
    }
  }

  private upsert(raw: T): void {
    const object = this.prepare(raw);
    const old = this.store.upsert(object);
    const context = { initial: false };
    if (old) this.emit((h) => h.updated?.(old, object, context));
    else this.emit((h) => h.added?.(object, context));
  }

  private remove(raw: T): void {
    const removed = this.store.remove(objectKey(raw));
    const object = removed ?? this.prepare(raw);
    this.emit((h) => h.deleted?.(object, { tombstone: false }));
  }

  private prepare(object: T): T {
    return this.transform ? this.transform(object) : object;
  }

  /** A handler that throws must not stop the informer or the other handlers. */
  private emit(call: (handlers: InformerHandlers<T>) => void): void {
    for (const handlers of this.handlers) {
      try {
        call(handlers);
      } catch (error) {
        for (const handler of this.errorHandlers) handler(error as Error);
      }
    }
  }
}

function pick<T extends object, K extends keyof T>(object: T, keys: K[]): Pick<T, K> {
  const result = {} as Pick<T, K>;
  for (const key of keys) if (object[key] !== undefined) result[key] = object[key];
  return result;
}
