import type { Logger } from "pino";
import type { ObjectKey } from "../client/index.js";
import type { WorkQueue } from "../queue/index.js";
import { type AdaptiveConcurrency, type ApiPressure, adaptiveDefaults, decide } from "./adaptive-workers.js";
import type { ControllerMetricsSink } from "./spec.js";

export interface WorkerPoolDeps {
  controller: string;
  queue: WorkQueue<ObjectKey>;
  /** One key's reconcile (the runner's `process`). */
  process(key: ObjectKey): Promise<unknown>;
  logger: Logger;
  metrics: ControllerMetricsSink | undefined;
  apiPressure: ApiPressure | undefined;
}

/**
 * A controller's workers: each takes a key, runs its reconcile and marks it done, so the queue
 * never hands one key to two workers at once. Their number is fixed, or follows the load between
 * bounds (adaptive workers: a tick reads the load and resizes; see adaptive-workers.ts).
 */
export class WorkerPool {
  /** Workers wanted now (`concurrency`, or the adaptive limit), workers running, and reconciles under way. */
  private limit = 0;
  private count = 0;
  private active = 0;
  private readonly workers: Promise<void>[] = [];
  /** Keys being reconciled now, and the end of that reconcile: a shard handover waits for it. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Queue waits of the keys taken since the last adaptive tick. */
  private waited = { seconds: 0, count: 0 };
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: WorkerPoolDeps) {}

  /** The number of workers wanted now. */
  get size(): number {
    return this.limit;
  }

  /** The queue's wait of one key (its `queueDuration` metric), for the adaptive tick. */
  waitedFor(seconds: number): void {
    this.waited.seconds += seconds;
    this.waited.count++;
  }

  /** Starts `concurrency` workers, or adaptive ones from their floor. */
  start(concurrency: number, adaptive: AdaptiveConcurrency | undefined): void {
    const options = adaptive ? adaptiveDefaults(adaptive) : undefined;
    this.resize(options ? options.min : concurrency);
    if (options) this.adapt(options);
  }

  /** Resolves once no reconcile of `key` is under way. */
  async idle(key: ObjectKey): Promise<void> {
    while (this.inFlight.has(key)) await this.inFlight.get(key);
  }

  /** Stops resizing and waits for every worker to end (the queue must be shut down). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled(this.workers);
  }

  /** Sets the number of workers: more start at once; extra ones stop after their current reconcile. */
  private resize(limit: number): void {
    this.limit = limit;
    this.deps.metrics?.maxConcurrent(limit);
    while (this.count < limit) {
      this.count++;
      this.workers.push(this.work());
    }
  }

  private async work(): Promise<void> {
    const { queue, metrics } = this.deps;
    for (;;) {
      // Fewer workers wanted (adaptive): this one stops between reconciles.
      if (this.count > this.limit) {
        this.count--;
        return;
      }
      const key = await queue.get();
      if (key === undefined) return;
      this.active++;
      metrics?.activeWorkers(1);
      const processing = this.deps.process(key);
      this.inFlight.set(
        key,
        processing.then(
          () => {},
          () => {},
        ),
      );
      try {
        await processing;
      } finally {
        this.inFlight.delete(key);
        this.active--;
        metrics?.activeWorkers(-1);
        queue.done(key);
      }
    }
  }

  /** Adaptive workers: a tick that reads the load and resizes. */
  private adapt(options: Required<AdaptiveConcurrency>): void {
    let previousWaitMs = 0;
    let idleFor = 0;
    this.timer = setInterval(() => {
      const pressure = this.deps.apiPressure?.recent() ?? { throttled: 0, p90Ms: 0 };
      const waitMs = this.waited.count ? (this.waited.seconds / this.waited.count) * 1000 : 0;
      this.waited = { seconds: 0, count: 0 };
      const sample = {
        queued: this.deps.queue.length,
        active: this.active,
        waitMs,
        throttled: pressure.throttled,
        apiLatencyMs: pressure.p90Ms,
      };
      idleFor = sample.queued === 0 && sample.active <= this.limit / 2 ? idleFor + 1 : 0;
      const decision = decide(this.limit, sample, previousWaitMs, idleFor, options);
      previousWaitMs = waitMs;
      if (decision.limit === this.limit) return;
      if (decision.reason === "shrink") idleFor = 0;
      this.deps.logger.info(
        {
          controller: this.deps.controller,
          from: this.limit,
          to: decision.limit,
          decision: decision.reason,
          ...sample,
        },
        `workers ${this.limit} → ${decision.limit}: ${decision.because}`,
      );
      this.resize(decision.limit);
    }, options.tickMs);
    this.timer.unref();
  }
}
