import type { Informer, InformerRegistry, InformerScope, InformerView } from "../cache/index.js";
import {
  type KubeObject,
  kindKeyOf,
  type ResourceType,
  refOfKey,
  refTo,
  type TypedObjectRef,
} from "../client/index.js";
import type { CacheReader } from "./context.js";
import type { CacheLookup } from "./write-awareness.js";

/**
 * A controller's caches: one informer view per type and scope, taken from the shared registry, and
 * the reads a reconcile makes of them (`ctx.cache`, and write-awareness's lookups).
 */
export class ControllerCaches {
  private readonly views = new Map<string, InformerView<KubeObject>>();
  private readonly shared: { informers: Informer<KubeObject>[]; release(): Promise<void> }[] = [];

  constructor(
    private readonly controller: string,
    private readonly registry: InformerRegistry,
    /** The namespaces watched; `undefined` for all. */
    private readonly namespaces: readonly string[] | undefined,
  ) {}

  /** Every informer read (once each: `views` holds each under two keys; a multi-namespace view is its informers). */
  get informers(): Informer<KubeObject>[] {
    return this.shared.flatMap((s) => s.informers);
  }

  /** Lets the informers go (the registry stops them when nobody else uses them). */
  async release(): Promise<void> {
    await Promise.all(this.shared.map((s) => s.release()));
  }

  /**
   * The cache of one type, in the watched namespaces: one informer for all namespaces or for one;
   * one per namespace, read as one, for several. Cluster-scoped types (`namespaced: false`) are
   * watched cluster-wide whatever the namespaces (that takes a ClusterRole).
   */
  informerFor(type: ResourceType, scope: Omit<InformerScope, "namespace">): InformerView<KubeObject> {
    const namespaces = type.namespaced === false ? undefined : this.namespaces;
    const key = JSON.stringify([
      type.apiVersion,
      type.kind,
      namespaces ?? [],
      scope.labelSelector ?? "",
      scope.metadataOnly ?? false,
    ]);
    const existing = this.views.get(key);
    if (existing) return existing;
    let view: InformerView<KubeObject>;
    if (namespaces && namespaces.length > 1) {
      const shared = this.registry.acquireNamespaces(type, namespaces, scope);
      this.shared.push({ informers: shared.view.informers, release: shared.release });
      view = shared.view;
    } else {
      const shared = this.registry.acquire(type, namespaces ? { ...scope, namespace: namespaces[0] } : scope);
      this.shared.push({ informers: [shared.informer], release: shared.release });
      view = shared.informer;
    }
    this.views.set(key, view);
    this.views.set(kindKeyOf(type), view);
    return view;
  }

  readonly lookup: CacheLookup = (kind, key) => {
    const informer = this.views.get(kind);
    if (!informer) return "unwatched";
    return informer.get(refOfKey(key));
  };

  readonly reader: CacheReader = {
    get: <U extends KubeObject>(
      target: TypedObjectRef<U> | ResourceType<U>,
      name?: string,
      namespace?: string,
    ): U | undefined => {
      const ref =
        name === undefined
          ? (target as TypedObjectRef<U>)
          : refTo(target as ResourceType<U>, name, namespace);
      if (!ref.type?.apiVersion)
        throw new TypeError(
          `ctx.cache.get: the reference to "${ref.name}" needs its type: get({ type: ConfigMap, namespace, name }) or get(refTo(ConfigMap, name, namespace))`,
        );
      return this.watched(ref.type, ref.namespace).get(ref) as U | undefined;
    },
    list: <U extends KubeObject>(
      type: ResourceType<U>,
      filter?: { namespace?: string; labels?: Record<string, string> },
    ) => this.watched(type, filter?.namespace).list(filter) as U[],
  };

  /**
   * The cache of a type the reconciler reads. A read in a namespace this controller does not watch
   * is an error, not an empty answer: nothing there is cached, and a silent "none" would be acted on.
   */
  private watched(type: ResourceType, namespace: string | undefined): InformerView<KubeObject> {
    const informer = this.views.get(kindKeyOf(type));
    if (!informer) {
      throw new Error(
        `${type.kind} is not cached by controller "${this.controller}": add .owns(${type.kind}) or .watches(${type.kind}, …) ` +
          "so that its changes also trigger reconciles, or read it with ctx.client.",
      );
    }
    const watched = this.namespaces;
    if (namespace && watched && type.namespaced !== false && !watched.includes(namespace)) {
      throw new Error(
        `${type.kind} in namespace "${namespace}" is not cached by controller "${this.controller}": it watches ` +
          `${watched.map((ns) => `"${ns}"`).join(", ")} only (its .inNamespace(s), or the Manager's namespaces / ` +
          "WATCH_NAMESPACE). Read it with ctx.client, or watch that namespace too.",
      );
    }
    return informer;
  }
}
