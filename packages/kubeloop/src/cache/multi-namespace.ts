import type { KubeObject, ObjectRef, ResourceType } from "../client/index.js";
import type { Informer, InformerHandlers } from "./informer.js";

/**
 * What a consumer of a cache reads and subscribes to, whether it is one informer or one per
 * namespace: {@link Informer} and {@link MultiNamespaceInformer} both are one.
 */
export interface InformerView<T extends KubeObject> {
  readonly type: ResourceType<T>;
  /** Resolves once every informer behind the view has its first full list. */
  readonly synced: Promise<void>;
  readonly isSynced: boolean;
  on(handlers: InformerHandlers<T>): () => void;
  onError(handler: (error: Error) => void): () => void;
  /** The cached object a reference names, or `undefined`. */
  get(ref: ObjectRef): T | undefined;
  /** @deprecated Pass a reference: `get({ namespace, name })`. */
  get(name: string, namespace?: string): T | undefined;
  list(filter?: { namespace?: string; labels?: Record<string, string> }): T[];
}

/**
 * One informer per namespace behind one view, for operators that may only list and watch in some
 * namespaces (Roles, not a ClusterRole; OLM's OwnNamespace, SingleNamespace and MultiNamespace
 * install modes). Each informer lists and watches `/namespaces/<ns>/<resource>`, so a Role there
 * is all it needs; the view reads them as one cache:
 *
 * - `get({ namespace, name })` asks the informer of `ns` (an unwatched namespace has nothing: `undefined`);
 * - `list()` without a namespace is every namespace's objects, `list({ namespace })` one's;
 * - handlers hear every namespace's changes (each object lives in exactly one informer, so none is
 *   heard twice);
 * - `synced` waits for all of them: a namespace whose list is Forbidden keeps the view unsynced
 *   and reports a `WatchForbidden` naming it through `onError` and its informer's health.
 *
 * controller-runtime's `MultiNamespacedCache` is the same idea. The informers themselves come from
 * the {@link InformerRegistry} (`acquireNamespaces`), so a controller bound to one of these
 * namespaces shares its informer.
 *
 * @example
 * ```ts
 * const shared = registry.acquireNamespaces(ConfigMap, ["team-a", "team-b"]);
 * await shared.view.synced;
 * const all = shared.view.list(); // team-a's and team-b's, from memory
 * ```
 */
export class MultiNamespaceInformer<T extends KubeObject> implements InformerView<T> {
  readonly type: ResourceType<T>;
  readonly synced: Promise<void>;
  private readonly byNamespace: ReadonlyMap<string, Informer<T>>;

  constructor(type: ResourceType<T>, informers: ReadonlyMap<string, Informer<T>>) {
    this.type = type;
    this.byNamespace = informers;
    this.synced = Promise.all([...informers.values()].map((informer) => informer.synced)).then(() => {});
  }

  /** The watched namespaces, in the order given. */
  get namespaces(): string[] {
    return [...this.byNamespace.keys()];
  }

  /** The informers behind the view, one per namespace (for health checks and metrics). */
  get informers(): Informer<T>[] {
    return [...this.byNamespace.values()];
  }

  get isSynced(): boolean {
    return this.informers.every((informer) => informer.isSynced);
  }

  on(handlers: InformerHandlers<T>): () => void {
    const offs = this.informers.map((informer) => informer.on(handlers));
    return () => {
      for (const off of offs) off();
    };
  }

  onError(handler: (error: Error) => void): () => void {
    const offs = this.informers.map((informer) => informer.onError(handler));
    return () => {
      for (const off of offs) off();
    };
  }

  get(ref: ObjectRef): T | undefined;
  /** @deprecated Pass a reference: `get({ namespace, name })`. */
  get(name: string, namespace?: string): T | undefined;
  get(ref: ObjectRef | string, namespace?: string): T | undefined {
    const target = typeof ref === "string" ? { namespace, name: ref } : ref;
    if (target.namespace === undefined) return undefined; // every object here has a namespace
    return this.byNamespace.get(target.namespace)?.get(target);
  }

  list(filter: { namespace?: string; labels?: Record<string, string> } = {}): T[] {
    if (filter.namespace) return this.byNamespace.get(filter.namespace)?.list(filter) ?? [];
    return this.informers.flatMap((informer) => informer.list(filter));
  }
}
