import type { Informer, InformerRegistry, InformerScope, InformerView } from "../cache/index.js";
import {
  type KubeObject,
  kindKeyOf,
  type ObjectRef,
  objectKey,
  type ResourceType,
  refOfKey,
  type TypedObjectRef,
} from "../client/index.js";
import { typedRef } from "../client/internal.js";
import type { CacheReader } from "./context.js";
import type { CacheLookup } from "./write-awareness.js";

/**
 * A controller's caches: one informer view per type and scope (label selector, metadata only),
 * taken from the shared registry, and the reads a reconcile makes of them (`ctx.cache`, and
 * write-awareness's lookups).
 *
 * One kind may be cached more than once: `.owns(Pod, { labelSelector })` beside `.watches(Pod)`
 * are two informers. A read then asks them in order of what they hold, most first: no selector
 * and whole objects, then selected whole objects, then metadata only (see {@link rank}), and a
 * `get` answers with the first that has the object; a `list` reads the most complete one, or the
 * union of the selected ones when no informer holds the whole kind.
 */
export class ControllerCaches {
  /** Scope key (type, namespaces, selector, metadata only) → its view. */
  private readonly views = new Map<string, InformerView<KubeObject>>();
  /** Type key → every view of that type, most complete first. */
  private readonly byType = new Map<string, Scoped[]>();
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
    const typeKey = kindKeyOf(type);
    const scoped = [...(this.byType.get(typeKey) ?? []), { view, rank: rank(scope) }];
    this.byType.set(
      typeKey,
      scoped.sort((a, b) => a.rank - b.rank),
    );
    return view;
  }

  readonly lookup: CacheLookup = (kind, key) => {
    const scoped = this.byType.get(kind);
    if (!scoped) return "unwatched";
    return firstGet(scoped, refOfKey(key));
  };

  readonly reader: CacheReader = {
    get: <U extends KubeObject>(
      target: TypedObjectRef<U> | ResourceType<U>,
      name?: string,
      namespace?: string,
    ): U | undefined => {
      const ref = typedRef("ctx.cache.get", target, name, namespace);
      return firstGet(this.watched(ref.type, ref.namespace), ref) as U | undefined;
    },
    list: <U extends KubeObject>(
      type: ResourceType<U>,
      filter?: { namespace?: string; labels?: Record<string, string> },
    ) => listOf(this.watched(type, filter?.namespace), filter) as U[],
  };

  /**
   * The cache of a type the reconciler reads. A read in a namespace this controller does not watch
   * is an error, not an empty answer: nothing there is cached, and a silent "none" would be acted on.
   */
  private watched(type: ResourceType, namespace: string | undefined): readonly Scoped[] {
    const scoped = this.byType.get(kindKeyOf(type));
    if (!scoped) {
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
    return scoped;
  }
}

/** A view of one kind and how much of the kind it holds (lower: more). */
interface Scoped {
  view: InformerView<KubeObject>;
  rank: number;
}

/**
 * Which view of a kind a read asks first: whole objects before metadata only (a reconciler reading
 * a Pod wants its spec), and within each, every object of the kind before a label-selected share.
 */
function rank(scope: Omit<InformerScope, "namespace">): number {
  return (scope.metadataOnly ? 2 : 0) + (scope.labelSelector ? 1 : 0);
}

/** The object from the first view (most complete first) that holds it. */
function firstGet(scoped: readonly Scoped[], ref: ObjectRef): KubeObject | undefined {
  for (const { view } of scoped) {
    const found = view.get(ref);
    if (found) return found;
  }
  return undefined;
}

/**
 * The objects of a kind: the most complete view's when one holds every object of the kind (no
 * selector); otherwise the union of the selected views, each object once (by namespace and name).
 */
function listOf(
  scoped: readonly Scoped[],
  filter: { namespace?: string; labels?: Record<string, string> } | undefined,
): KubeObject[] {
  const first = scoped[0];
  if (!first) return [];
  if (first.rank % 2 === 0 || scoped.length === 1) return first.view.list(filter);
  const union = new Map<string, KubeObject>();
  for (const { view } of scoped) {
    for (const object of view.list(filter)) {
      const id = objectKey(object);
      if (!union.has(id)) union.set(id, object);
    }
  }
  return [...union.values()];
}
