import { createRequire } from "node:module";
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { TransportOptions } from "../client/index.js";
import type { QueueMetrics } from "../queue/index.js";
import { DEFAULT_PRIORITY, WORKQUEUE_METRIC_NAMES as WQ } from "../queue/index.js";
import { type InformerReading, informerSizeGauges } from "./informer-metrics.js";
import type { LeaderElectionMetrics } from "./leader-election.js";

export type { InformerReading } from "./informer-metrics.js";

/**
 * Prometheus metrics with controller-runtime's names, labels and buckets, so the dashboards and
 * alerts written for Go operators work unchanged. The layers below only call hooks (`QueueMetrics`,
 * the transport's `onResponse`, the elector's `LeaderElectionMetrics`); this file maps them onto
 * prom-client metrics in a registry of its own.
 *
 * | metric | labels | fed by |
 * |---|---|---|
 * | `controller_runtime_reconcile_total` | `controller`, `result` | {@link ControllerMetricSeries.reconciled} |
 * | `controller_runtime_reconcile_errors_total` | `controller` | `reconciled("error" \| "terminal_error")` |
 * | `controller_runtime_terminal_reconcile_errors_total` | `controller` | `reconciled("terminal_error")` |
 * | `controller_runtime_reconcile_panics_total` | `controller` | {@link ControllerMetricSeries.panicked} |
 * | `controller_runtime_reconcile_timeouts_total` | `controller` | {@link ControllerMetricSeries.timedOut} |
 * | `controller_runtime_reconcile_time_seconds` | `controller` | `reconciled(…, seconds)` |
 * | `controller_runtime_max_concurrent_reconciles` | `controller` | {@link ControllerMetricSeries.maxConcurrent} |
 * | `controller_runtime_active_workers` | `controller` | {@link ControllerMetricSeries.workers} |
 * | `workqueue_*` (7 metrics) | `name`, `controller` (+ `priority` on depth) | {@link Metrics.workqueue} |
 * | `rest_client_requests_total` | `code`, `method`, `host` | {@link Metrics.restClient} |
 * | `leader_election_master_status` | `name` | {@link Metrics.leaderElection} |
 * | `leader_election_slowpath_total` | `name` | {@link Metrics.leaderElection} |
 * | `controller_runtime_webhook_requests_total` | `webhook`, `code` | {@link Metrics.webhooks} |
 * | `controller_runtime_webhook_latency_seconds` | `webhook` | {@link Metrics.webhooks} |
 * | `kubeloop_informer_watch_healthy` | `kind`, `namespace` | {@link Metrics.observeInformers}, read when scraped |
 * | `kubeloop_informer_objects`, `kubeloop_informer_bytes` | `kind`, `namespace` | {@link Metrics.observeInformers}, read when scraped (informers of one kind and namespace summed) |
 * | `kubeloop_reconcile_deferred_total` | `controller` | {@link ControllerMetricSeries.deferred} |
 * | `kubeloop_certificate_expiration_timestamp_seconds` | `server` | {@link Metrics.certificateExpiry} |
 * | `process_*`, `nodejs_*` | — | prom-client's default collectors (Go operators have `process_*`, `go_*`) |
 */

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

/**
 * prom-client, loaded by the first `Metrics` (~10 MiB of RSS): a manager with `metrics: false`
 * never makes one. The `createRequire(import.meta.url)(…)` form is what `kubeloop build` bundles.
 */
function promClient(): typeof import("prom-client") {
  return createRequire(import.meta.url)("prom-client") as typeof import("prom-client");
}

/** The `result` label of `controller_runtime_reconcile_total`. */
export type ReconcileResultLabel = "success" | "error" | "requeue" | "requeue_after";
/**
 * How a reconcile ended. `terminal_error` is counted as `result="error"` plus the terminal counter,
 * as controller-runtime counts a `reconcile.TerminalError`.
 */
export type ReconcileOutcome = ReconcileResultLabel | "terminal_error";

/** The Prometheus series of one controller; from {@link Metrics.controller}. */
export interface ControllerMetricSeries {
  readonly name: string;
  /**
   * A reconcile ended: counts it under its result (errors also in `…_errors_total`, terminal ones
   * also in `…_terminal_reconcile_errors_total`) and observes its duration in seconds.
   */
  reconciled(outcome: ReconcileOutcome, seconds: number): void;
  /**
   * The reconciler hit a programming error (what a panic is in Go: a `TypeError`, `ReferenceError`,
   * `RangeError` or `SyntaxError`). Reported with `reconciled("error")`, as controller-runtime does.
   */
  panicked(): void;
  /** The reconcile ran past the controller's `reconcileTimeout` and failed. Also reported as an error. */
  timedOut(): void;
  /** `controller_runtime_active_workers`: workers busy reconciling now. */
  workers(active: number): void;
  /** `controller_runtime_max_concurrent_reconciles`: the controller's worker count. */
  maxConcurrent(workers: number): void;
  /** `kubeloop_reconcile_deferred_total`: a reconcile waited for the per-object cap. */
  deferred(): void;
}

/** The readings a queue computes at scrape time (`WorkQueue` has both). */
export interface QueueReadings {
  unfinishedWorkSeconds(): number;
  longestRunningProcessorSeconds(): number;
}

/** A queue's metric hooks, all of them, for `new WorkQueue({ metrics })`; from {@link Metrics.workqueue}. */
export interface WorkqueueMetrics extends Required<QueueMetrics> {
  readonly name: string;
  /**
   * Publishes `queue`'s in-flight gauges (`workqueue_unfinished_work_seconds`,
   * `workqueue_longest_running_processor_seconds`), read when scraped. Returns a function that
   * stops publishing them (and drops their series), for when the queue shuts down.
   */
  observe(queue: QueueReadings): () => void;
}

/** The transport's `onResponse` hook (`new Client(config, { onResponse })`). */
export type ResponseHook = NonNullable<TransportOptions["onResponse"]>;

/** What a server needs to serve `/metrics` (a {@link Metrics} has it); lets servers stay free of prom-client. */
export interface MetricsSource {
  /** The exposition format's content type, for the response header. */
  readonly contentType: string;
  /** The exposition text of every metric. */
  text(): Promise<string>;
}

export interface MetricsOptions {
  /**
   * Also collect prom-client's process and Node.js metrics (`process_cpu_seconds_total`,
   * `process_resident_memory_bytes`, `nodejs_eventloop_lag_seconds`, heap, GC…). Default true:
   * controller-runtime registers Go's and the process collectors too, and memory per cached object
   * is the number operators most often need.
   */
  defaultMetrics?: boolean;
}

/**
 * The operator's metrics, in a prom-client {@link Registry} of its own (`metrics.registry`): two
 * managers in one process (tests) never clash over a name, and a user's own use of prom-client's
 * global registry neither gets nor breaks ours. Add your metrics to `metrics.registry` so they are
 * served on the same endpoint, or merge registries with `Registry.merge`.
 *
 * @example
 * ```ts
 * const metrics = new Metrics();
 * const queue = new WorkQueue<string>({ metrics: metrics.workqueue("nginx") });
 * metrics.workqueue("nginx").observe(queue);
 * const client = new Client(config, { onResponse: metrics.restClient(config.server) });
 * const nginx = metrics.controller("nginx");
 * nginx.maxConcurrent(1);
 * nginx.reconciled("success", 0.012);
 * response.setHeader("content-type", metrics.contentType);
 * response.end(await metrics.text());
 * ```
 */
export class Metrics implements MetricsSource {
  readonly registry: Registry;

  private readonly reconcileTotal: Counter<"controller" | "result">;
  private readonly reconcileErrors: Counter<"controller">;
  private readonly terminalReconcileErrors: Counter<"controller">;
  private readonly reconcilePanics: Counter<"controller">;
  private readonly reconcileTimeouts: Counter<"controller">;
  private readonly reconcileTime: Histogram<"controller">;
  private readonly maxConcurrentReconciles: Gauge<"controller">;
  private readonly activeWorkers: Gauge<"controller">;
  private readonly reconcileDeferred: Counter<"controller">;

  private readonly queueDepth: Gauge<"name" | "controller" | "priority">;
  private readonly queueAdds: Counter<"name" | "controller">;
  private readonly queueLatency: Histogram<"name" | "controller">;
  private readonly workDuration: Histogram<"name" | "controller">;
  private readonly unfinishedWork: Gauge<"name" | "controller">;
  private readonly longestRunningProcessor: Gauge<"name" | "controller">;
  private readonly queueRetries: Counter<"name" | "controller">;

  private readonly restRequests: Counter<"code" | "method" | "host">;
  private readonly leaderStatus: Gauge<"name">;
  private readonly leaderSlowpath: Counter<"name">;
  private readonly webhookRequests: Counter<"webhook" | "code">;
  private readonly webhookLatency: Histogram<"webhook">;
  private readonly certificateExpiration: Gauge<"server">;
  private informerReadings: (() => readonly InformerReading[]) | undefined;

  private readonly controllers = new Map<string, ControllerMetricSeries>();
  private readonly queues = new Map<string, WorkqueueMetrics>();
  /** Queues whose in-flight gauges are read at scrape time, by queue name. */
  private readonly observedQueues = new Map<string, QueueReadings>();
  private readonly elections = new Map<string, Required<LeaderElectionMetrics>>();

  constructor(options: MetricsOptions = {}) {
    const { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } = promClient();
    const registry = new Registry();
    this.registry = registry;
    const registers = [registry];

    // controller-runtime: pkg/internal/controller/metrics/metrics.go (names and help texts).
    this.reconcileTotal = new Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.terminalReconcileErrors = new Counter({
      name: "controller_runtime_terminal_reconcile_errors_total",
      help: "Total number of terminal reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.reconcilePanics = new Counter({
      name: "controller_runtime_reconcile_panics_total",
      help: "Total number of reconciliation panics per controller",
      labelNames: ["controller"],
      registers,
    });
    this.reconcileTimeouts = new Counter({
      name: "controller_runtime_reconcile_timeouts_total",
      help: "Total number of reconciliation timeouts per controller",
      labelNames: ["controller"],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      labelNames: ["controller"],
      buckets: [...RECONCILE_TIME_BUCKETS],
      registers,
    });
    this.maxConcurrentReconciles = new Gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames: ["controller"],
      registers,
    });
    this.activeWorkers = new Gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames: ["controller"],
      registers,
    });

    this.reconcileDeferred = new Counter({
      name: "kubeloop_reconcile_deferred_total",
      help: "Reconciles deferred by the controller's per-object cap (maxReconcilesPerObject); each runs later, merged with later changes.",
      labelNames: ["controller"],
      registers,
    });

    // controller-runtime: pkg/internal/metrics/workqueue.go.
    this.queueDepth = new Gauge({
      name: WQ.depth,
      help: "Current depth of workqueue by workqueue and priority",
      labelNames: ["name", "controller", "priority"],
      registers,
    });
    this.queueAdds = new Counter({
      name: WQ.adds,
      help: "Total number of adds handled by workqueue",
      labelNames: ["name", "controller"],
      registers,
    });
    this.queueLatency = new Histogram({
      name: WQ.queueDuration,
      help: "How long in seconds an item stays in workqueue before being requested",
      labelNames: ["name", "controller"],
      buckets: [...WORKQUEUE_DURATION_BUCKETS],
      registers,
    });
    this.workDuration = new Histogram({
      name: WQ.workDuration,
      help: "How long in seconds processing an item from workqueue takes.",
      labelNames: ["name", "controller"],
      buckets: [...WORKQUEUE_DURATION_BUCKETS],
      registers,
    });
    const observedQueues = this.observedQueues;
    this.unfinishedWork = new Gauge({
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
    this.longestRunningProcessor = new Gauge({
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
    this.queueRetries = new Counter({
      name: WQ.retries,
      help: "Total number of retries handled by workqueue",
      labelNames: ["name", "controller"],
      registers,
    });

    // controller-runtime: pkg/metrics/client_go_adapter.go (the one REST metric on by default).
    this.restRequests = new Counter({
      name: "rest_client_requests_total",
      help: "Number of HTTP requests, partitioned by status code, method, and host.",
      labelNames: ["code", "method", "host"],
      registers,
    });

    // controller-runtime: pkg/metrics/leaderelection.go.
    this.leaderStatus = new Gauge({
      name: "leader_election_master_status",
      help:
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates " +
        "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: ["name"],
      registers,
    });
    this.leaderSlowpath = new Counter({
      name: "leader_election_slowpath_total",
      help:
        "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify " +
        "the lease. Please make sure to group by name.",
      labelNames: ["name"],
      registers,
    });

    // controller-runtime: pkg/webhook/internal/metrics/metrics.go.
    this.webhookRequests = new Counter({
      name: "controller_runtime_webhook_requests_total",
      help: "Total number of admission requests by HTTP status code.",
      labelNames: ["webhook", "code"],
      registers,
    });
    this.webhookLatency = new Histogram({
      name: "controller_runtime_webhook_latency_seconds",
      help: "Histogram of the latency of processing admission requests",
      labelNames: ["webhook"],
      registers,
    });
    // kubeloop's own: what the alerts on watches and certificates need.
    const metrics = this;
    new Gauge({
      name: "kubeloop_informer_watch_healthy",
      help:
        "1 when the informer has synced and its last list/watch succeeded, 0 while it fails (e.g. Forbidden) " +
        "or has not synced. 'namespace' is empty for a cluster-wide informer.",
      labelNames: ["kind", "namespace"],
      registers,
      collect() {
        this.reset();
        for (const informer of metrics.informerReadings?.() ?? []) {
          this.set({ kind: informer.kind, namespace: informer.namespace }, informer.healthy ? 1 : 0);
        }
      },
    });
    informerSizeGauges(Gauge, registers, () => metrics.informerReadings?.() ?? []);
    this.certificateExpiration = new Gauge({
      name: "kubeloop_certificate_expiration_timestamp_seconds",
      help: "When the serving certificate in use expires, in seconds since the epoch, by server (webhook, metrics).",
      labelNames: ["server"],
      registers,
    });

    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  }

  /**
   * Publishes `kubeloop_informer_watch_healthy{kind,namespace}` from `read()`, called when scraped
   * (the manager passes its informers' health).
   */
  observeInformers(read: () => readonly InformerReading[]): void {
    this.informerReadings = read;
  }

  /** Sets `kubeloop_certificate_expiration_timestamp_seconds{server}`. */
  certificateExpiry(server: string, expirySeconds: number): void {
    this.certificateExpiration.set({ server }, expirySeconds);
  }

  /**
   * The webhook server's hooks: `controller_runtime_webhook_requests_total{webhook,code}` and
   * `controller_runtime_webhook_latency_seconds{webhook}` (webhook = the path), and the
   * certificate's expiry under `server="webhook"`.
   */
  webhooks(): {
    requested(path: string, code: number, seconds: number): void;
    certificateExpiry(seconds: number): void;
  } {
    return {
      requested: (path, code, seconds) => {
        this.webhookRequests.inc({ webhook: path, code: String(code) });
        this.webhookLatency.observe({ webhook: path }, seconds);
      },
      certificateExpiry: (seconds) => this.certificateExpiry("webhook", seconds),
    };
  }

  /** The Prometheus text format's content type (`text/plain; version=0.0.4; charset=utf-8`). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric in the Prometheus text exposition format, as `/metrics` serves it. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * The metrics of one controller. Its series start at zero (every result, the error counters,
   * `active_workers`), as controller-runtime initialises them, so `rate()` and alerts see the
   * controller before its first error. The same object for the same name.
   */
  controller(name: string): ControllerMetricSeries {
    const existing = this.controllers.get(name);
    if (existing) return existing;
    const labels = { controller: name };
    const total = {
      success: this.reconcileTotal.labels({ controller: name, result: "success" }),
      error: this.reconcileTotal.labels({ controller: name, result: "error" }),
      requeue: this.reconcileTotal.labels({ controller: name, result: "requeue" }),
      requeue_after: this.reconcileTotal.labels({ controller: name, result: "requeue_after" }),
    } satisfies Record<ReconcileResultLabel, unknown>;
    const errors = this.reconcileErrors.labels(labels);
    const terminal = this.terminalReconcileErrors.labels(labels);
    const panics = this.reconcilePanics.labels(labels);
    const timeouts = this.reconcileTimeouts.labels(labels);
    const time = this.reconcileTime.labels(labels);
    const max = this.maxConcurrentReconciles.labels(labels);
    const active = this.activeWorkers.labels(labels);
    const deferred = this.reconcileDeferred.labels(labels);
    for (const counter of [...Object.values(total), errors, terminal, panics, timeouts, deferred])
      counter.inc(0);
    active.set(0);
    const metrics: ControllerMetricSeries = {
      name,
      reconciled(outcome, seconds) {
        if (outcome === "error" || outcome === "terminal_error") {
          if (outcome === "terminal_error") terminal.inc();
          errors.inc();
          total.error.inc();
        } else {
          total[outcome].inc();
        }
        time.observe(seconds);
      },
      panicked: () => panics.inc(),
      timedOut: () => timeouts.inc(),
      workers: (count) => active.set(count),
      maxConcurrent: (count) => max.set(count),
      deferred: () => deferred.inc(),
    };
    this.controllers.set(name, metrics);
    return metrics;
  }

  /**
   * The workqueue hooks of the controller `name` (client-go's queue name is the controller's, so
   * both labels carry it). Hand the result to `new WorkQueue({ metrics })`, then `observe(queue)`
   * for the two in-flight gauges. The same object for the same name.
   */
  workqueue(name: string): WorkqueueMetrics {
    const existing = this.queues.get(name);
    if (existing) return existing;
    const labels = { name, controller: name };
    const depthByPriority = new Map<number, Gauge.Internal<"name" | "controller" | "priority">>();
    const depthAt = (priority: number) => {
      let gauge = depthByPriority.get(priority);
      if (!gauge) {
        gauge = this.queueDepth.labels({ ...labels, priority: String(priority) });
        depthByPriority.set(priority, gauge);
      }
      return gauge;
    };
    const adds = this.queueAdds.labels(labels);
    const latency = this.queueLatency.labels(labels);
    const work = this.workDuration.labels(labels);
    const retries = this.queueRetries.labels(labels);
    // The series a fresh queue shows in client-go: zero counters, empty histograms, depth 0.
    adds.inc(0);
    retries.inc(0);
    this.queueLatency.zero(labels);
    this.workDuration.zero(labels);
    depthAt(DEFAULT_PRIORITY).set(0);
    const metrics: WorkqueueMetrics = {
      name,
      add: () => adds.inc(),
      depth: (priority, delta) => depthAt(priority).inc(delta),
      queueDuration: (seconds) => latency.observe(seconds),
      workDuration: (seconds) => work.observe(seconds),
      retry: () => retries.inc(),
      observe: (queue) => {
        this.observedQueues.set(name, queue);
        return () => {
          if (this.observedQueues.get(name) !== queue) return;
          this.observedQueues.delete(name);
          this.unfinishedWork.remove(labels);
          this.longestRunningProcessor.remove(labels);
        };
      },
    };
    this.queues.set(name, metrics);
    return metrics;
  }

  /**
   * The transport hook counting `rest_client_requests_total{code,method,host}`: pass it as the
   * client's `onResponse`. `server` is the API server's URL (`config.server`) or a `host:port`.
   * Watches count as `GET`, the HTTP verb client-go reports for them.
   */
  restClient(server: string): ResponseHook {
    const host = hostOf(server);
    const counters = new Map<string, Counter.Internal>();
    return ({ method, code }) => {
      const verb = method === "WATCH" ? "GET" : method;
      const key = `${code} ${verb}`;
      let counter = counters.get(key);
      if (!counter) {
        counter = this.restRequests.labels({ code: String(code), method: verb, host });
        counters.set(key, counter);
      }
      counter.inc();
    };
  }

  /**
   * The elector's hooks for the Lease `name`: `set(isLeader)` drives
   * `leader_election_master_status{name}` (1 leading, 0 standby), `slowpath()` counts
   * `leader_election_slowpath_total{name}`. The same object for the same name.
   */
  leaderElection(name: string): Required<LeaderElectionMetrics> {
    const existing = this.elections.get(name);
    if (existing) return existing;
    const status = this.leaderStatus.labels({ name });
    const slowpath = this.leaderSlowpath.labels({ name });
    status.set(0);
    slowpath.inc(0);
    const metrics: Required<LeaderElectionMetrics> = {
      set: (isLeader) => status.set(isLeader ? 1 : 0),
      slowpath: () => slowpath.inc(),
    };
    this.elections.set(name, metrics);
    return metrics;
  }
}

function hostOf(server: string): string {
  try {
    return new URL(server).host || server;
  } catch {
    return server;
  }
}
