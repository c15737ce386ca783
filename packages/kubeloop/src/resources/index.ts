/**
 * `kubeloop/resources`: the helpers every reconcile needs. Owner references, status conditions,
 * status writes, finalizers (safe against concurrent writers), owned server-side apply and
 * create-or-update, and an events.k8s.io/v1 event recorder with series and rate limits.
 *
 * @example
 * ```ts
 * import { Client } from "kubeloop/client";
 * import { ConfigMap } from "kubeloop/k8s";
 * import { applyOwned, EventRecorder, handleFinalizer, patchStatus, setCondition } from "kubeloop/resources";
 *
 * const client = await Client.connect();
 * const recorder = new EventRecorder(client, { reportingController: "example.com/settings" });
 * const owner = await client.get({ type: ConfigMap, namespace: "default", name: "settings" });
 *
 * const finalizer = await handleFinalizer(client, owner, "example.com/cleanup", async () => {
 *   // release what the object holds outside the cluster
 * });
 * if (finalizer.state === "added" || finalizer.state === "present") {
 *   await applyOwned(
 *     client,
 *     { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings-copy", namespace: "default" }, data: owner.data },
 *     finalizer.object,
 *     { fieldManager: "example.com/settings" },
 *   );
 *   recorder.event(owner, { type: "Normal", reason: "Copied", action: "Apply", note: "settings-copy is up to date" });
 * }
 * await recorder.close();
 * await client.close();
 * ```
 */
export {
  type ApplyOwnedOptions,
  applyOwned,
  type CreateOrUpdateOptions,
  type CreateOrUpdateResult,
  createOrUpdate,
  type Mutate,
  type Operation,
} from "./apply.js";
export {
  type Condition,
  type ConditionInput,
  type ConditionStatus,
  findCondition,
  isFalse,
  isTrue,
  removeCondition,
  setCondition,
} from "./conditions.js";
export {
  type CustomResourceDefinition,
  defineResource,
  type PrinterColumn,
  pluralize,
  type ResourceDefinition,
  type ResourceDefinitionOptions,
  type ResourceObject,
} from "./define-resource.js";
export { AlreadyOwned, InvalidCondition, InvalidEvent, InvalidOwnerReference } from "./errors.js";
export {
  type EventInput,
  EventRecorder,
  type EventRecorderOptions,
  type EventRecorderStats,
  type EventType,
} from "./events.js";
export {
  addFinalizer,
  type FinalizerOptions,
  type FinalizerResult,
  handleFinalizer,
  hasFinalizer,
  isDeleting,
  removeFinalizer,
} from "./finalizers.js";
export { finishedJobsToPrune, type JobState, type JobStatus, jobStatus } from "./jobs.js";
export {
  controllerOf,
  controllerReference,
  isControlledBy,
  isOwnedBy,
  type OwnerReference,
  type OwnerReferenceOptions,
  ownerReference,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "./owner-references.js";
export { retryOnConflict } from "./retry.js";
export {
  PROGRESS_DEADLINE_EXCEEDED,
  type RolloutRecord,
  type RolloutState,
  type RolloutStatus,
  recordRollout,
  rolloutStatus,
} from "./rollout.js";
export { type JsonSchema, SchemaError, toStructuralSchema } from "./schema.js";
export { Conditions, ObservedGeneration } from "./schemas.js";
export {
  generatePassword,
  REDACTED,
  redactError,
  redactSecrets,
  registerSecret,
  secretValues,
} from "./secrets.js";
export {
  type ApplyStatusOptions,
  applyStatus,
  type PatchStatusOptions,
  patchStatus,
  type StatusOf,
  type StatusPatch,
} from "./status.js";
export {
  type MigrateStorageOptions,
  type MigrationProgress,
  type MigrationResult,
  migrateStorageVersion,
  retireVersion,
  StorageMigrationError,
} from "./storage-migration.js";
