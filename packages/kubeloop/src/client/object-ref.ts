import type { KubeObject, ResourceType } from "./types.js";

/**
 * Identity, in one place: what names an object ({@link ObjectRef}: its kind, namespace and name),
 * the one function that turns a reference into a key ({@link keyOfRef}), the one that turns a key
 * back ({@link refOfKey}), and the one that names a kind ({@link kindKeyOf}). Caches, work queues,
 * the reconcile runner and the read-your-writes bookkeeping all key by these, so no other file
 * formats or parses `namespace/name` (a test greps the sources for hand-made keys).
 *
 * kube-rs's `reflector::ObjectRef` is the model: a reference carries its kind where the reader
 * serves many kinds (`client.get(ref)`, `ctx.cache.get(ref)`); where the kind is known from
 * context (a controller's map function names objects of its primary kind, an informer holds one
 * kind) it is left out.
 */

/**
 * One object's identity: its name, its namespace unless it is cluster-scoped, and its kind where
 * the reader needs it. What a controller reconciles (a map function returns these), what a read
 * takes (`client.get(ref)`, `ctx.cache.get(ref)`, `informer.get(ref)`), and what caches and work
 * queues key by (as its {@link ObjectKey}).
 *
 * @example
 * ```ts
 * import { keyOfRef, type ObjectRef, refOfKey, refTo } from "kubeloop/client";
 * import { ConfigMap } from "kubeloop/k8s";
 *
 * const ref: ObjectRef = { namespace: "default", name: "web" };
 * const key: string = keyOfRef(ref); // "default/web"
 * refOfKey(key); // { namespace: "default", name: "web" }
 * const typed = refTo(ConfigMap, "web", "default"); // { type: ConfigMap, namespace: "default", name: "web" }
 * ```
 */
export interface ObjectRef<T extends KubeObject = KubeObject> {
  /** The object's kind; left out where the reader knows it (a map function's refs name the primary's kind). */
  type?: ResourceType<T> | undefined;
  namespace?: string | undefined;
  name: string;
}

/** A reference with its kind: what a reader of many kinds takes. */
export type TypedObjectRef<T extends KubeObject = KubeObject> = ObjectRef<T> & { type: ResourceType<T> };

/**
 * `namespace/name`, or `name` for a cluster-scoped object: an {@link ObjectRef} as a string key,
 * made only by {@link keyOfRef} (and {@link objectKey}). Branded, so that a key made by hand
 * (`` `${ns}/${name}` ``) does not type-check where a key is expected; it reads as a string.
 */
export type ObjectKey = string & { readonly __brand: "kubeloop.ObjectKey" };

/** `apiVersion/kind` (`apps/v1/Deployment`, `v1/ConfigMap`): a kind as a string key. */
export type KindKey = string & { readonly __brand: "kubeloop.KindKey" };

/** A reference to the object of this type, name and namespace (`refTo(ConfigMap, "web", "default")`). */
export function refTo<T extends KubeObject>(
  type: ResourceType<T>,
  name: string,
  namespace?: string,
): TypedObjectRef<T> {
  return { type, namespace, name };
}

/**
 * A read's target as one reference: `ref` as given, or the deprecated positional form
 * (`type, name, namespace`) made into one. A reference without its type is refused naming the fix;
 * `reader` names the read in that message (`client.get`, `ctx.cache.get`).
 *
 * @internal for other kubeloop layers.
 */
export function typedRef<T extends KubeObject>(
  reader: string,
  target: TypedObjectRef<T> | ResourceType<T>,
  name?: string,
  namespace?: string,
): TypedObjectRef<T> {
  const ref =
    name === undefined ? (target as TypedObjectRef<T>) : refTo(target as ResourceType<T>, name, namespace);
  if (!ref.type?.apiVersion)
    throw new TypeError(
      `${reader}: the reference to "${ref.name}" needs its type: get({ type: ConfigMap, namespace, name }) or get(refTo(ConfigMap, name, namespace))`,
    );
  return ref;
}

/** The reference to an object (its metadata's namespace and name; with `type`, its kind too). */
export function refOf(object: KubeObject): ObjectRef;
/** The reference to an object of this type, its kind included (objects from a list may lack apiVersion and kind). */
export function refOf<T extends KubeObject>(object: KubeObject, type: ResourceType<T>): TypedObjectRef<T>;
export function refOf(object: KubeObject, type?: ResourceType): ObjectRef {
  const ref: ObjectRef = { namespace: object.metadata?.namespace, name: object.metadata?.name ?? "" };
  if (type) ref.type = type;
  return ref;
}

/** The one key function: `namespace/name`, or `name` without a namespace. The kind is not part of it. */
export function keyOfRef(ref: ObjectRef): ObjectKey {
  return (ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name) as ObjectKey;
}

/** `namespace/name`, or `name` for cluster-scoped objects: the key of caches and work queues. */
export function objectKey(object: KubeObject): ObjectKey {
  const meta = object.metadata;
  return keyOfRef({ namespace: meta?.namespace, name: meta?.name ?? "" });
}

/** The one parse: the reference a key stands for (names have no `/`, so the first one splits the namespace off). */
export function refOfKey(key: string): ObjectRef {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The one kind key: `apiVersion/kind`. */
export function kindKeyOf(type: { readonly apiVersion: string; readonly kind: string }): KindKey {
  return `${type.apiVersion}/${type.kind}` as KindKey;
}

/**
 * An object of any kind as one string (`v1/ConfigMap default/web`): what bookkeeping across kinds
 * keys by (the controller's read-your-writes and echo filter).
 *
 * @internal for other kubeloop layers.
 */
export function typedKeyOf(kind: KindKey, key: ObjectKey): string {
  return `${kind} ${key}`;
}

/**
 * `apps/v1` → `apps`; `v1` (the core group) → "".
 *
 * @internal for other kubeloop layers.
 */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash === -1 ? "" : apiVersion.slice(0, slash);
}

/**
 * `apps/v1` → `v1`; `v1` → `v1`.
 *
 * @internal for other kubeloop layers.
 */
export function versionOf(apiVersion: string): string {
  return apiVersion.slice(apiVersion.indexOf("/") + 1);
}
