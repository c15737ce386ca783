/**
 * `kubeloop/manager`: runs controllers as one process, with leader election (a Lease), health
 * probes, Prometheus metrics with controller-runtime's names, events, logs and graceful shutdown.
 *
 * @example
 * ```ts
 * import { controller, done } from "kubeloop/controller";
 * import { ConfigMap } from "kubeloop/k8s";
 * import { Manager } from "kubeloop/manager";
 *
 * const echo = controller(ConfigMap).named("echo").reconcile(() => done());
 * await new Manager({ leaderElection: { id: "echo-operator" } }).add(echo).start();
 * ```
 */

// The TLS bits the manager's servers share, for a HealthServer or WebhookServer of your own.
export { CertificateFolder, type ServingCertificate, selfSignedCertificate } from "../util/index.js";
export {
  type Cluster,
  ClusterNotFound,
  type ClusterProvider,
  type ClusterSink,
  Clusters,
  type ClustersOptions,
  kubeconfigFiles,
  kubeconfigSecrets,
} from "./clusters.js";
export { type CommandLine, optionsFromCommandLine } from "./command-line.js";
export { type HealthCheck, HealthServer, type HealthServerOptions, ListenError } from "./health.js";
export {
  LeaderElector,
  type LeaderElectorOptions,
  LeadershipLost,
} from "./leader-election.js";
export {
  DEFAULT_METRICS_PORT,
  DEFAULT_PROBES_PORT,
  DEFAULT_SECURE_METRICS_PORT,
  DEFAULT_STALL_TIMEOUT_MS,
  Manager,
  type ManagerOptions,
  type ManagerWebhookOptions,
  type MetricsServing,
  optionsFromEnv,
  parseWorkers,
  watchNamespaces,
} from "./manager.js";
export { type InformerReading, Metrics } from "./metrics.js";
export {
  type MetricsAccess,
  type MetricsAuthOptions,
  MetricsAuthorizer,
} from "./metrics-auth.js";
export { RUNNABLE_GROUPS, type Runnable, type RunnableContext, type RunnableGroup } from "./runnables.js";
export type { CaBundleTarget, SelfIssuedCertificate, SelfIssuedWebhookCertificate } from "./serving-certs.js";
export {
  RING_LABEL,
  type ShardedType,
  type SharderOptions,
  Sharding,
  type ShardingOptions,
  shardLabel,
} from "./sharding/index.js";
export { startTracing, type Tracing } from "./tracing.js";
