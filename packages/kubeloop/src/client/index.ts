/**
 * `kubeloop/client`: configuration and auth, a pooled transport, discovery, typed CRUD, patch,
 * server-side apply, subresources, raw watches, and typed API errors.
 *
 * @example
 * ```ts
 * import { Client, ignoreNotFound, NotFound, refTo } from "kubeloop/client";
 * import { ConfigMap } from "kubeloop/k8s";
 *
 * const client = await Client.connect();
 * const settings = await client.get(refTo(ConfigMap, "settings", "default")).catch(ignoreNotFound);
 * const color = settings?.data?.color ?? "blue"; // absent: the default
 * try {
 *   await client.delete(ConfigMap, "missing", { namespace: "default" });
 * } catch (error) {
 *   if (!(error instanceof NotFound)) throw error;
 * }
 * ```
 */
export type { ApiTransport } from "./api-transport.js";
export {
  type ApplyOptions,
  Client,
  type ClientOptions,
  type DeleteOptions,
  type ListOptions,
  type NamespaceOption,
  type PatchOptions,
  type PatchType,
  type RequestOptions,
  type WatchOptions,
  type WriteOptions,
  type Written,
} from "./client.js";
export { type ClusterConfig, type Impersonation, type LoadConfigOptions, loadConfig } from "./config.js";
export { Discovery, type ResourceInfo } from "./discovery.js";
export {
  AlreadyExists,
  ApiError,
  BadRequest,
  ConfigError,
  Conflict,
  ConnectionError,
  Forbidden,
  Gone,
  InternalError,
  Invalid,
  ignoreNotFound,
  MethodNotAllowed,
  NotFound,
  RequestEntityTooLarge,
  ServiceUnavailable,
  type Status,
  type StatusCause,
  Timeout,
  TooManyRequests,
  Unauthorized,
  UnknownKind,
  UnsupportedMediaType,
} from "./errors.js";
export {
  type KindKey,
  keyOfRef,
  kindKeyOf,
  type ObjectKey,
  type ObjectRef,
  objectKey,
  refOf,
  refOfKey,
  refTo,
  type TypedObjectRef,
} from "./object-ref.js";
export {
  type HttpRequest,
  type HttpResponse,
  type StreamRequest,
  type StreamResponse,
  Transport,
  type TransportOptions,
} from "./transport.js";
export {
  type KubeObject,
  type ListMeta,
  type ObjectList,
  type ObjectMeta,
  type ObjectOf,
  type PartialObjectMetadata,
  type ResourceType,
  resourceType,
  type WatchEvent,
} from "./types.js";
