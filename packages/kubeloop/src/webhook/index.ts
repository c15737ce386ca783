/**
 * `kubeloop/webhook`: admission webhooks (defaulting, validating) over HTTPS with certificate reload.
 *
 * @example
 * ```ts
 * import { WebhookServer } from "kubeloop/webhook";
 * const webhooks = new WebhookServer({ certDir: "/tmp/k8s-webhook-server/serving-certs" });
 * webhooks.validating("/validate-nginx", (nginx) => ({ allowed: true, warnings: ["image is not pinned"] }));
 * await webhooks.start();
 * ```
 */
export {
  defineWebhooks,
  isWebhookDefinition,
  type LabelSelector,
  type WebhookConfigurations,
  type WebhookDefinition,
  type WebhookParts,
  type WebhookTarget,
  webhookConfigurations,
  withConversion,
} from "./define-webhooks.js";
export { jsonPatch, type PatchOperation } from "./json-patch.js";
export {
  type AdmissionRequest,
  type Converters,
  DEFAULT_WEBHOOK_PORT,
  type Defaulter,
  type ValidationResult,
  type Validator,
  WebhookServer,
  type WebhookServerOptions,
} from "./server.js";
