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
