export { NotEmulated, StatusError } from "./errors.js";
export type { MemoryHandler, MemoryStream } from "./handler.js";
export {
  ReconcileHarness,
  type ReconcileHarnessOptions,
  type ReconcileStep,
  type RecordedEvent,
} from "./harness.js";
export type { ServedMemoryApiServer } from "./https.js";
export { DEFAULT_HISTORY, MemoryApiServer, type MemoryApiServerOptions, type WebhookLike } from "./server.js";
export { MemoryTransport } from "./transport.js";
export { type ValidationCause, validate } from "./validate.js";
