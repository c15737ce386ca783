import type { Registry } from "prom-client";
import { WORKQUEUE_METRIC_NAMES as WQ } from "../queue/index.js";
import { type InformerReading, informerSizeGauges } from "./informer-metrics.js";

/**
 * The Prometheus series {@link Metrics} feeds, defined with controller-runtime's names, help texts,
 * labels and buckets. Each group registers its series in the order controller-runtime lists them,
 * which is the order `/metrics` shows them in.
 */

type PromClient = typeof import("prom-client");

/** The readings a queue computes at scrape time (`WorkQueue` has both). */
export interface QueueReadings {
  unfinishedWorkSeconds(): number;
  longestRunningProcessorSeconds(): number;
}

/**
 * controller-runtime's `controller_runtime_reconcile_time_seconds` buckets: fine-grained up to 1 s
 * (most reconciles), coarser up to a minute (slow APIs, big lists). Same edges, same dashboards.
 */
export const RECONCILE_TIME_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
/**
 * client-go's workqueue duration buckets, `ExponentialBuckets(10e-9, 10, 12)`: 10 ns to 1000 s, one
 * per decade (the same repeated multiplication, so the same float edges as Go's).
 */
export const WORKQUEUE_DURATION_BUCKETS: readonly number[] = Array.from({ length: 12 }, (_, i) =>
  [...Array(i)].reduce((edge: number) => edge * 10, 10e-9),
);

export type ReconcileSeries = ReturnType<typeof reconcileSeries>;
export type WorkqueueSeries = ReturnType<typeof workqueueSeries>;
export type PartSeries = ReturnType<typeof partSeries>;

/** The series of every controller's reconciles, by `controller`. */
export function reconcileSeries({ Counter, Gauge, Histogram }: PromClient, registers: Registry[]) {
  // controller-runtime: pkg/internal/controller/metrics/metrics.go (names and help texts).
  const total = new Counter({
    name: "controller_runtime_reconcile_total",
    help: "Total number of reconciliations per controller",
    labelNames: ["controller", "result"],
    registers,
  });
  const errors = new Counter({
    name: "controller_runtime_reconcile_errors_total",
    help: "Total number of reconciliation errors per controller",
    labelNames: ["controller"],
    registers,
  });
  const terminalErrors = new Counter({
    name: "controller_runtime_terminal_reconcile_errors_total",
    help: "Total number of terminal reconciliation errors per controller",
    labelNames: ["controller"],
    registers,
  });
  const panics = new Counter({
    name: "controller_runtime_reconcile_panics_total",
    help: "Total number of reconciliation panics per controller",
    labelNames: ["controller"],
    registers,
  });
  const timeouts = new Counter({
    name: "controller_runtime_reconcile_timeouts_total",
    help: "Total number of reconciliation timeouts per controller",
    labelNames: ["controller"],
    registers,
  });
  const time = new Histogram({
    name: "controller_runtime_reconcile_time_seconds",
    help: "Length of time per reconciliation per controller",
    labelNames: ["controller"],
    buckets: [...RECONCILE_TIME_BUCKETS],
    registers,
  });
  const maxConcurrent = new Gauge({
    name: "controller_runtime_max_concurrent_reconciles",
    help: "Maximum number of concurrent reconciles per controller",
    labelNames: ["controller"],
    registers,
  });
  const activeWorkers = new Gauge({
    name: "controller_runtime_active_workers",
    help: "Number of currently used workers per controller",
    labelNames: ["controller"],
    registers,
  });

  const deferred = new Counter({
    name: "kubeloop_reconcile_deferred_total",
    help: "Reconciles deferred by the controller's per-object cap (maxReconcilesPerObject); each runs later, merged with later changes.",
    labelNames: ["controller"],
    registers,
  });
  return { total, errors, terminalErrors, panics, timeouts, time, maxConcurrent, activeWorkers, deferred };
}

/** The series of every controller's work queue, by `name` and `controller`; in-flight gauges read `observedQueues` when scraped. */
export function workqueueSeries(
  { Counter, Gauge, Histogram }: PromClient,
  registers: Registry[],
  observedQueues: ReadonlyMap<string, QueueReadings>,
) {
  // controller-runtime: pkg/internal/metrics/workqueue.go.
  const depth = new Gauge({
    name: WQ.depth,
    help: "Current depth of workqueue by workqueue and priority",
    labelNames: ["name", "controller", "priority"],
    registers,
  });
  const adds = new Counter({
    name: WQ.adds,
    help: "Total number of adds handled by workqueue",
    labelNames: ["name", "controller"],
    registers,
  });
  const latency = new Histogram({
    name: WQ.queueDuration,
    help: "How long in seconds an item stays in workqueue before being requested",
    labelNames: ["name", "controller"],
    buckets: [...WORKQUEUE_DURATION_BUCKETS],
    registers,
  });
  const workDuration = new Histogram({
    name: WQ.workDuration,
    help: "How long in seconds processing an item from workqueue takes.",
    labelNames: ["name", "controller"],
    buckets: [...WORKQUEUE_DURATION_BUCKETS],
    registers,
  });
  const unfinishedWork = new Gauge({
    name: WQ.unfinishedWork,
    help:
      "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
      "Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate " +
      "at which this increases.",
    labelNames: ["name", "controller"],
    registers,
    collect() {
      for (const [name, queue] of observedQueues) {
        this.set({ name, controller: name }, queue.unfinishedWorkSeconds());
      }
    },
  });
  const longestRunningProcessor = new Gauge({
    name: WQ.longestRunningProcessor,
    help: "How many seconds has the longest running processor for workqueue been running.",
    labelNames: ["name", "controller"],
    registers,
    collect() {
      for (const [name, queue] of observedQueues) {
        this.set({ name, controller: name }, queue.longestRunningProcessorSeconds());
      }
    },
  });
  const retries = new Counter({
    name: WQ.retries,
    help: "Total number of retries handled by workqueue",
    labelNames: ["name", "controller"],
    registers,
  });
  return { depth, adds, latency, workDuration, unfinishedWork, longestRunningProcessor, retries };
}

/** The series of the manager's parts: the API client, leader election, webhooks, informers, certificates. */
export function partSeries(
  { Counter, Gauge, Histogram }: PromClient,
  registers: Registry[],
  readInformers: () => readonly InformerReading[],
) {
  // controller-runtime: pkg/metrics/client_go_adapter.go (the one REST metric on by default).
  const restRequests = new Counter({
    name: "rest_client_requests_total",
    help: "Number of HTTP requests, partitioned by status code, method, and host.",
    labelNames: ["code", "method", "host"],
    registers,
  });

  // controller-runtime: pkg/metrics/leaderelection.go.
  const leaderStatus = new Gauge({
    name: "leader_election_master_status",
    help:
      "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates " +
      "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
    labelNames: ["name"],
    registers,
  });
  const leaderSlowpath = new Counter({
    name: "leader_election_slowpath_total",
    help:
      "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify " +
      "the lease. Please make sure to group by name.",
    labelNames: ["name"],
    registers,
  });

  // controller-runtime: pkg/webhook/internal/metrics/metrics.go.
  const webhookRequests = new Counter({
    name: "controller_runtime_webhook_requests_total",
    help: "Total number of admission requests by HTTP status code.",
    labelNames: ["webhook", "code"],
    registers,
  });
  const webhookLatency = new Histogram({
    name: "controller_runtime_webhook_latency_seconds",
    help: "Histogram of the latency of processing admission requests",
    labelNames: ["webhook"],
    registers,
  });
  // kubeloop's own: what the alerts on watches and certificates need.
  new Gauge({
    name: "kubeloop_informer_watch_healthy",
    help:
      "1 when the informer has synced and its last list/watch succeeded, 0 while it fails (e.g. Forbidden) " +
      "or has not synced. 'namespace' is empty for a cluster-wide informer.",
    labelNames: ["kind", "namespace"],
    registers,
    collect() {
      this.reset();
      for (const informer of readInformers()) {
        this.set({ kind: informer.kind, namespace: informer.namespace }, informer.healthy ? 1 : 0);
      }
    },
  });
  informerSizeGauges(Gauge, registers, readInformers);
  const certificateExpiration = new Gauge({
    name: "kubeloop_certificate_expiration_timestamp_seconds",
    help: "When the serving certificate in use expires, in seconds since the epoch, by server (webhook, metrics).",
    labelNames: ["server"],
    registers,
  });
  return {
    restRequests,
    leaderStatus,
    leaderSlowpath,
    webhookRequests,
    webhookLatency,
    certificateExpiration,
  };
}
