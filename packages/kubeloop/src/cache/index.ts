/**
 * `kubeloop/cache`: reflectors (list + watch, resume, relist only on 410), stores with indexes,
 * informers with handlers, and a registry that shares one watch between all consumers.
 *
 * @example
 * ```ts
 * import { Client } from "kubeloop/client";
 * import { InformerRegistry } from "kubeloop/cache";
 * import { Pod } from "kubeloop/k8s";
 *
 * const registry = new InformerRegistry(await Client.connect());
 * const pods = registry.acquire(Pod, { namespace: "default" });
 * await pods.informer.synced;
 * const web = pods.informer.list({ labels: { app: "web" } }); // from memory, no API call
 * await pods.release();
 * ```
 */
export { WatchForbidden } from "./errors.js";
export {
  type ChangeContext,
  type DeleteContext,
  Informer,
  type InformerHandlers,
  type InformerHealth,
  type InformerOptions,
  stripManagedFields,
} from "./informer.js";
export { type InformerView, MultiNamespaceInformer } from "./multi-namespace.js";
export {
  type BackoffOptions,
  Reflector,
  type ReflectorOptions,
  type ReflectorSink,
  type ReflectorState,
  type ReflectorStats,
} from "./reflector.js";
export {
  InformerRegistry,
  type InformerScope,
  type SharedInformer,
  type SharedMultiNamespaceInformer,
} from "./registry.js";
export { type IndexFunc, NAMESPACE_INDEX, type ReplaceResult, Store } from "./store.js";
