/**
 * `kubeloop/testing`: what an operator's tests import. A real Kubernetes API server (etcd and
 * kube-apiserver, with kwok's fake nodes or real kubelets when pods matter) from pinned binaries
 * cached outside the project; the in-memory API server and the reconcile harness for unit tests;
 * CRD install, waits, kubectl, a fake clock, local webhook serving, and the operator as a process.
 *
 * The rest of the test kit has entry points of its own: `kubeloop/testing/cluster` (the operator
 * deployed into a plane with real nodes), `kubeloop/testing/faults` (chaos on real pods and nodes, a
 * fault proxy), `kubeloop/testing/servers` (PostgreSQL, Prometheus, OLM, Karmada, a forward proxy)
 * and `kubeloop/testing/assets` (the binaries). The names they took from this entry point in 0.2 are
 * still exported here, deprecated, until 0.3.
 *
 * @example
 * ```ts
 * import { ControlPlane, kubectl } from "kubeloop/testing";
 *
 * const plane = await new ControlPlane({ profile: "cluster", nodes: 2 }).start();
 * const nodes = await kubectl(["get", "nodes"], { kubeconfig: plane.kubeconfigPath });
 * await plane.stop();
 * ```
 */

export { type PollOptions, PollTimeoutError, pollUntil } from "../util/index.js";
export {
  type AuditRecord,
  type BaseImageName,
  type ComponentInfo,
  ControlPlane,
  type ControlPlaneOptions,
  type Profile,
  type UserCredentials,
} from "./control-plane.js";
export { type CrdObject, readCrds, readManifests } from "./crds.js";
export { AssetsError, ControlPlaneError } from "./errors.js";
export { JumpClock } from "./jump-clock.js";
export { type KubectlOptions, type KubectlResult, kubectl } from "./kubectl.js";
export {
  composeKwokStages,
  type KwokStage,
  type PodBehaviour,
  type PodSelector,
} from "./kwok-stages.js";
export { type LocalWebhookServing, localWebhookServing } from "./local-webhooks.js";
export {
  MemoryApiServer,
  type MemoryApiServerOptions,
  type MemoryHandler,
  type MemoryStream,
  MemoryTransport,
  NotEmulated,
  ReconcileHarness,
  type ReconcileHarnessOptions,
  type ReconcileStep,
  type RecordedEvent,
  type ServedMemoryApiServer,
  StatusError,
  type ValidationCause,
  validate,
  type WebhookLike,
} from "./memory/index.js";
// biome-ignore lint/performance/noReExportAll: moved.ts holds only the deprecated aliases of 0.1's names, which go whole in 0.3.
export * from "./moved.js";
export {
  freePort,
  killOperators,
  type OperatorProcess,
  type RevokeRuleOptions,
  revokeRule,
  type StartOperatorOptions,
  startOperator,
  stopOperators,
} from "./operator-process.js";
export { CertificateAuthority } from "./pki.js";
export {
  type ControllerList,
  type CrdSource,
  startTestEnvironment,
  type TestEnvironment,
  type TestEnvironmentOptions,
  type WebhookDefinitionList,
} from "./test-environment.js";
