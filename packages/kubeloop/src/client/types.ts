import type { ListMeta, ObjectMeta } from "kubernetes-types/meta/v1.js";

export type { ListMeta, ObjectMeta } from "kubernetes-types/meta/v1.js";

/** Any Kubernetes object: built-in, custom, or a metadata-only view of either. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** A list response: `items` plus `metadata.resourceVersion` and `metadata.continue`. */
export interface ObjectList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
  items: T[];
}

/**
 * Names a kind for the client, caches and controllers, and carries its TypeScript type.
 * `plural` and `namespaced` are optional: discovery fills them in (and checks them) at run time.
 *
 * @example
 * ```ts
 * import type { ConfigMap as ConfigMapObject } from "kubernetes-types/core/v1.js";
 * const ConfigMap = resourceType<ConfigMapObject>("v1", "ConfigMap", { plural: "configmaps", namespaced: true });
 * ```
 */
export interface ResourceType<T extends KubeObject = KubeObject> {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural?: string;
  readonly namespaced?: boolean;
  /** The subresources the kind serves (`status`, `scale`, …), for built-in kinds. */
  readonly subresources?: readonly string[];
  /**
   * The OpenAPI schema of a built-in kind's objects (`apps/v1.Deployment`): kubeloop/k8s's
   * `listTypeAt` reads how its lists merge from it.
   */
  readonly schema?: string;
  /** Type-level only: the object type. Never set at run time. */
  readonly __object?: T;
}

/** The object type a {@link ResourceType} stands for. */
export type ObjectOf<R> = R extends ResourceType<infer T> ? T : never;

/**
 * Names a kind for the client and the cache: `resourceType<MyObject>("example.com/v1", "Widget")`.
 * `plural` and `namespaced` are optional: discovery fills them in and checks them.
 */
export function resourceType<T extends KubeObject>(
  apiVersion: string,
  kind: string,
  options: {
    plural?: string;
    namespaced?: boolean;
    subresources?: readonly string[];
    schema?: string;
  } = {},
): ResourceType<T> {
  return Object.freeze({ apiVersion, kind, ...options });
}

/** An object as a metadata-only watch or list returns it (meta.k8s.io/v1 PartialObjectMetadata). */
export interface PartialObjectMetadata extends KubeObject {
  metadata: ObjectMeta;
}

/** One event of a watch. BOOKMARK events carry only `metadata.resourceVersion` (and annotations). */
export type WatchEvent<T extends KubeObject> =
  | { type: "ADDED" | "MODIFIED" | "DELETED"; object: T }
  | { type: "BOOKMARK"; object: KubeObject };

/**
 * One object's identity: its name, and its namespace unless it is cluster-scoped. What a
 * controller reconciles (a map function returns these), and what a cache and a work queue key by
 * (as its {@link ObjectKey}).
 *
 * @example
 * ```ts
 * import { keyOfRef, type ObjectRef, refOfKey } from "kubeloop/client";
 *
 * const ref: ObjectRef = { namespace: "default", name: "web" };
 * keyOfRef(ref); // "default/web"
 * refOfKey(keyOfRef(ref)); // { namespace: "default", name: "web" }
 * ```
 */
export interface ObjectRef {
  namespace?: string | undefined;
  name: string;
}

/** `namespace/name`, or `name` for a cluster-scoped object: an {@link ObjectRef} as a string key. */
export type ObjectKey = string;

/** `namespace/name`, or `name` for cluster-scoped objects: the key of caches and work queues. */
export function objectKey(object: KubeObject): ObjectKey {
  return keyOfRef(refOf(object));
}

/** The reference to an object (its metadata's namespace and name). */
export function refOf(object: KubeObject): ObjectRef {
  return { namespace: object.metadata?.namespace, name: object.metadata?.name ?? "" };
}

/** The key of a reference: `namespace/name`, or `name` without a namespace. */
export function keyOfRef(ref: ObjectRef): ObjectKey {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

/** The reference a key stands for (names have no `/`, so the first one splits the namespace off). */
export function refOfKey(key: ObjectKey): ObjectRef {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
