/**
 * Adaptive workers: a controller's reconcile concurrency follows its load, between bounds. Off by
 * default (`.concurrency(n)` is fixed); on with `.adaptiveConcurrency({ min, max })`.
 *
 * Every tick (1 s), from what the last tick saw:
 * - **Back off** (× 0.75, not below `min`) when the API server pushes back: any 429, or request
 *   latency (p90) above `maxApiLatencyMs`. More workers would only queue on the server
 *   (APF queues before it rejects: latency rises before 429s).
 * - **Grow** (+25 %, at least +1, not above `max`) when keys wait longer than `targetWaitMs` in the
 *   queue and the wait is not falling, while the workers are busy (active ≥ 90 % of the limit).
 * - **Shrink** (× 0.75, not below `min`) after `idleTicks` ticks with an empty queue and at most
 *   half the workers busy.
 * Each change is a log line naming its reason, and the limit is the
 * `controller_runtime_max_concurrent_reconciles` gauge.
 */

export interface AdaptiveConcurrency {
  /** The floor. Default 1. */
  min?: number;
  /** The cap: never unbounded (a burst of thousands of keys would flood the API server and the heap). */
  max: number;
  /** Queue wait above which the controller grows. Default 100 ms. */
  targetWaitMs?: number;
  /** API request latency (p90 of a tick) above which it shrinks. Default 1,000 ms. */
  maxApiLatencyMs?: number;
  /** Quiet ticks before shrinking. Default 5. */
  idleTicks?: number;
  /** The tick. Default 1,000 ms. */
  tickMs?: number;
}

/** What one tick saw. */
export interface LoadSample {
  /** Keys waiting for a worker now. */
  queued: number;
  /** Workers reconciling now. */
  active: number;
  /** Mean queue wait of the keys taken during the tick, ms (0 if none). */
  waitMs: number;
  /** 429 responses during the tick. */
  throttled: number;
  /** p90 latency of API requests during the tick, ms (0 if none). */
  apiLatencyMs: number;
}

export interface Decision {
  limit: number;
  reason: "grow" | "shrink" | "back-off" | "hold";
  /** Why, in words, for the log line. */
  because: string;
}

/**
 * The decision of one tick: a pure function of the limit, the sample and the previous wait, so it
 * is tested on its own.
 */
export function decide(
  limit: number,
  sample: LoadSample,
  previousWaitMs: number,
  idleFor: number,
  options: Required<AdaptiveConcurrency>,
): Decision {
  const { min, max, targetWaitMs, maxApiLatencyMs, idleTicks } = options;
  if (sample.throttled > 0 || sample.apiLatencyMs > maxApiLatencyMs) {
    const next = Math.max(min, Math.floor(limit * 0.75));
    const because =
      sample.throttled > 0
        ? `the API server answered 429 ${sample.throttled} times`
        : `API latency p90 ${Math.round(sample.apiLatencyMs)} ms > ${maxApiLatencyMs} ms`;
    return next < limit ? { limit: next, reason: "back-off", because } : { limit, reason: "hold", because };
  }
  const busy = sample.active >= limit * 0.9;
  if (sample.waitMs > targetWaitMs && sample.waitMs >= previousWaitMs * 0.9 && busy && limit < max) {
    return {
      limit: Math.min(max, limit + Math.max(1, Math.ceil(limit / 4))),
      reason: "grow",
      because: `queue wait ${Math.round(sample.waitMs)} ms > ${targetWaitMs} ms and not falling, ${sample.active}/${limit} workers busy, ${sample.queued} queued`,
    };
  }
  if (idleFor >= idleTicks && limit > min) {
    return {
      limit: Math.max(min, Math.floor(limit * 0.75)),
      reason: "shrink",
      because: `idle for ${idleFor} ticks (queue empty, ${sample.active}/${limit} workers busy)`,
    };
  }
  return { limit, reason: "hold", because: "" };
}

/** The options with their defaults, checked; the error names the bad value. */
export function adaptiveDefaults(options: AdaptiveConcurrency): Required<AdaptiveConcurrency> {
  const resolved = {
    min: options.min ?? 1,
    max: options.max,
    targetWaitMs: options.targetWaitMs ?? 100,
    maxApiLatencyMs: options.maxApiLatencyMs ?? 1_000,
    idleTicks: options.idleTicks ?? 5,
    tickMs: options.tickMs ?? 1_000,
  };
  if (!Number.isInteger(resolved.min) || resolved.min < 1)
    throw new RangeError(`adaptiveConcurrency: min must be a whole number ≥ 1, got ${resolved.min}`);
  if (!Number.isInteger(resolved.max) || resolved.max < resolved.min)
    throw new RangeError(
      `adaptiveConcurrency: max must be a whole number ≥ min (${resolved.min}), got ${resolved.max}`,
    );
  return resolved;
}

/**
 * API responses as the adaptive workers need them: 429s and latency since the last tick. The
 * manager feeds it from its client's `onResponse`; give your own client's `onResponse` to
 * `record` if you pass one in.
 */
export class ApiPressure {
  private throttled = 0;
  private latencies: number[] = [];

  /** One response (the transport's `onResponse` shape). Watches are left out: they are long by design. */
  readonly record = (info: { method: string; code: number; durationMs: number }): void => {
    if (info.code === 429) this.throttled++;
    if (info.method !== "WATCH" && info.durationMs > 0 && this.latencies.length < 10_000)
      this.latencies.push(info.durationMs);
  };

  /** What came in since the last call. Several controllers share one: each reads the same pressure. */
  take(): { throttled: number; p90Ms: number } {
    const sorted = this.latencies.sort((a, b) => a - b);
    const p90Ms = sorted.length ? (sorted[Math.floor(sorted.length * 0.9)] ?? 0) : 0;
    const result = { throttled: this.throttled, p90Ms };
    this.snapshot = result;
    this.throttled = 0;
    this.latencies = [];
    this.takenAt = performance.now();
    return result;
  }

  private snapshot = { throttled: 0, p90Ms: 0 };
  private takenAt = Number.NEGATIVE_INFINITY;

  /** The pressure of the last second: read afresh at most once every 900 ms, so controllers share it. */
  recent(): { throttled: number; p90Ms: number } {
    return performance.now() - this.takenAt >= 900 ? this.take() : this.snapshot;
  }
}
