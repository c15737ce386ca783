/**
 * `kubeloop/client`: configuration and auth, a pooled transport, discovery, typed CRUD, patch,
 * server-side apply, subresources, raw watches, and typed API errors.
 *
 * @example
 * ```ts
 * import { Client, NotFound } from "kubeloop/client";
 * import { ConfigMap } from "kubeloop/k8s";
 *
 * const client = await Client.connect();
 * try {
 *   await client.get(ConfigMap, "missing", { namespace: "default" });
 * } catch (error) {
 *   if (!(error instanceof NotFound)) throw error;
 * }
 * ```
 */
export type { ApiTransport } from "./api-transport.js";
export * from "./client.js";
export { type ClusterConfig, type Impersonation, type LoadConfigOptions, loadConfig } from "./config.js";
export { Discovery, type ResourceInfo } from "./discovery.js";
export * from "./errors.js";
export { type ListHead, parseListStream } from "./list-stream.js";
export {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type HttpRequest,
  type HttpResponse,
  type StreamRequest,
  type StreamResponse,
  Transport,
  type TransportOptions,
} from "./transport.js";
export * from "./types.js";
export { decodeWatchEvents } from "./watch.js";
