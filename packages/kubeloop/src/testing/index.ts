/**
 * `kubeloop/testing`: a real Kubernetes control plane for tests, demos and local runs, built from
 * pinned Go modules and cached outside the project.
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
  type AssetSourcePolicy,
  type AssetSources,
  type BinaryName,
  type BuildInfo,
  type BuildOptions,
  buildComponent,
  COMPONENTS,
  type ComponentName,
  componentsFor,
  DownloadError,
  defaultAssetsRoot,
  type EnsureAssetsOptions,
  ETCD_VERSION,
  ensureAssets,
  KARMADA_VERSION,
  KUBERNETES_VERSION,
  KUBERNETES_VERSION_ENV,
  KWOK_VERSION,
  locateBinary,
  MIRROR_ENV,
  type ObtainOptions,
  OLDEST_KUBERNETES_VERSION,
  obtainComponent,
  type PackOptions,
  type PackResult,
  packAssets,
  type ResolvedAssets,
  readBuildInfo,
  resolveKubernetesVersion,
  SOURCE_ENV,
  SUPPORTED_KUBERNETES_VERSIONS,
} from "./assets/index.js";
export {
  ChaosError,
  type ChaosPlane,
  type ContainerKillFault,
  type CutDirection,
  cutNetwork,
  deletePod,
  type Fault,
  type FaultKind,
  fillVolume,
  killContainer,
  type PodDeleteFault,
  type PodTarget,
  type Recovery,
  type RecoveryOptions,
  stopNode,
  type VolumeFillFault,
} from "./chaos/index.js";
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
export {
  type FaultProxy,
  type FaultProxyOptions,
  type FaultProxyStats,
  startFaultProxy,
} from "./fault-proxy.js";
export { JumpClock } from "./jump-clock.js";
export {
  KARMADA_REGION_LABEL,
  type KarmadaComponentName,
  type KarmadaMember,
  type KarmadaMemberOptions,
  KarmadaPlane,
  type KarmadaPlaneOptions,
} from "./karmada/index.js";
export {
  type KubectlOptions,
  type KubectlResult,
  kubectl,
  type PodRun,
  type RunPodOptions,
  runPod,
} from "./kubectl.js";
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
export {
  type CatalogBundle,
  type CatalogOptions,
  catalogImage,
  installOlm,
  type OlmInstall,
  type OlmPlane,
  olmAssets,
  olmImage,
  publishCatalog,
  pushToPlaneRegistry,
  renderCatalog,
} from "./olm/index.js";
export { OperatorE2e, type OperatorE2eOptions } from "./operator-e2e.js";
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
  locatePostgres,
  POSTGRES_BIN_ENV,
  POSTGRES_BINARIES,
  PostgresServer,
  PostgresServerError,
  type PostgresServerOptions,
} from "./postgres.js";
export {
  findPrometheusBinary,
  type PrometheusAlert,
  PrometheusError,
  type PrometheusSample,
  PrometheusServer,
  type PrometheusServerOptions,
  type PromtoolResult,
  promtool,
} from "./prometheus.js";
export {
  type AdapterOptions,
  type AdapterPlane,
  installPrometheusAdapter,
  PROMETHEUS_ADAPTER_VERSION,
  prometheusAdapterBinary,
} from "./prometheus-adapter.js";
export { startTunnelProxy, type TunnelProxy, type TunnelProxyOptions } from "./proxy.js";
