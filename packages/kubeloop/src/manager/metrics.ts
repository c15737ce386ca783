import { createRequire } from "node:module";
import type { Counter, Gauge, Registry } from "prom-client";
import type { TransportOptions } from "../client/index.js";
import type { QueueMetrics } from "../queue/index.js";
import { DEFAULT_PRIORITY } from "../queue/index.js";
import type { InformerReading } from "./informer-metrics.js";
import type { LeaderElectionMetrics } from "./leader-election.js";
import {
  type PartSeries,
  partSeries,
  type QueueReadings,
  type ReconcileSeries,
  reconcileSeries,
  type WorkqueueSeries,
  workqueueSeries,
} from "./metric-series.js";

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

  private readonly reconcile: ReconcileSeries;
  private readonly queue: WorkqueueSeries;
  private readonly parts: PartSeries;
  private informerReadings: (() => readonly InformerReading[]) | undefined;

  private readonly controllers = new Map<string, ControllerMetricSeries>();
  private readonly queues = new Map<string, WorkqueueMetrics>();
  /** Queues whose in-flight gauges are read at scrape time, by queue name. */
  private readonly observedQueues = new Map<string, QueueReadings>();
  private readonly elections = new Map<string, Required<LeaderElectionMetrics>>();

  constructor(options: MetricsOptions = {}) {
    const prom = promClient();
    const registry = new prom.Registry();
    this.registry = registry;
    const registers = [registry];

    this.reconcile = reconcileSeries(prom, registers);
    this.queue = workqueueSeries(prom, registers, this.observedQueues);
    this.parts = partSeries(prom, registers, () => this.informerReadings?.() ?? []);
    if (options.defaultMetrics ?? true) prom.collectDefaultMetrics({ register: registry });
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
    this.parts.certificateExpiration.set({ server }, expirySeconds);
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
        this.parts.webhookRequests.inc({ webhook: path, code: String(code) });
        this.parts.webhookLatency.observe({ webhook: path }, seconds);
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
      success: this.reconcile.total.labels({ controller: name, result: "success" }),
      error: this.reconcile.total.labels({ controller: name, result: "error" }),
      requeue: this.reconcile.total.labels({ controller: name, result: "requeue" }),
      requeue_after: this.reconcile.total.labels({ controller: name, result: "requeue_after" }),
    } satisfies Record<ReconcileResultLabel, unknown>;
    const errors = this.reconcile.errors.labels(labels);
    const terminal = this.reconcile.terminalErrors.labels(labels);
    const panics = this.reconcile.panics.labels(labels);
    const timeouts = this.reconcile.timeouts.labels(labels);
    const time = this.reconcile.time.labels(labels);
    const max = this.reconcile.maxConcurrent.labels(labels);
    const active = this.reconcile.activeWorkers.labels(labels);
    const deferred = this.reconcile.deferred.labels(labels);
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
        gauge = this.queue.depth.labels({ ...labels, priority: String(priority) });
        depthByPriority.set(priority, gauge);
      }
      return gauge;
    };
    const adds = this.queue.adds.labels(labels);
    const latency = this.queue.latency.labels(labels);
    const work = this.queue.workDuration.labels(labels);
    const retries = this.queue.retries.labels(labels);
    // The series a fresh queue shows in client-go: zero counters, empty histograms, depth 0.
    adds.inc(0);
    retries.inc(0);
    this.queue.latency.zero(labels);
    this.queue.workDuration.zero(labels);
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
          this.queue.unfinishedWork.remove(labels);
          this.queue.longestRunningProcessor.remove(labels);
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
        counter = this.parts.restRequests.labels({ code: String(code), method: verb, host });
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
    const status = this.parts.leaderStatus.labels({ name });
    const slowpath = this.parts.leaderSlowpath.labels({ name });
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
