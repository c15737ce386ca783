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
export { type HealthCheck, HealthServer, type HealthServerOptions, ListenError } from "./health.js";
export {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  LeaderElector,
  type LeaderElectorOptions,
  LeadershipLost,
} from "./leader-election.js";
export {
  DEFAULT_CACHE_SYNC_TIMEOUT_MS,
  DEFAULT_GRACEFUL_SHUTDOWN_MS,
  DEFAULT_METRICS_PORT,
  DEFAULT_PROBES_PORT,
  Manager,
  type ManagerOptions,
  watchNamespaces,
} from "./manager.js";
export { Metrics } from "./metrics.js";
