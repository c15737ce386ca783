import type { Clock } from "../queue/index.js";
import { type Duration, parseDuration } from "./result.js";

/**
 * At most `max` reconciles of one object in any `window` (JOSDK's `@RateLimited`; Cluster API's
 * "reconciled way too often", #13005): an object whose children churn is otherwise reconciled on
 * every child event. Apart from failure backoff: this counts every reconcile that starts, whatever
 * its outcome, and a failure's backoff still applies on top.
 *
 * A reconcile over the cap is deferred, not dropped: the key goes back to the queue to run when
 * the oldest reconcile in the window leaves it. Changes that come meanwhile collapse into that one
 * deferred run (the queue keeps one pending run per key), and it reads the latest state, so nothing
 * is lost. Each deferral counts in `kubeloop_reconcile_deferred_total{controller}`.
 */
export interface ObjectRateCap {
  /** Reconciles of one object allowed in a window: a whole number ≥ 1. */
  max: number;
  /** The window, e.g. "10s" or 10000 (ms). */
  window: Duration;
}

/**
 * Keys forgotten once this many were tracked since the last sweep: a sweep drops every key whose
 * newest start left the window, so the memory follows the objects reconciled recently, not all.
 */
const SWEEP_EVERY = 1024;

/** The sliding windows of a controller's keys: when each of the last `max` reconciles started. */
export class ObjectRateLimiter {
  readonly max: number;
  readonly windowMs: number;
  private readonly starts = new Map<string, number[]>();
  private sinceSweep = 0;

  constructor(
    cap: ObjectRateCap,
    private readonly clock: Pick<Clock, "now">,
  ) {
    if (!Number.isSafeInteger(cap.max) || cap.max < 1)
      throw new RangeError(`maxReconcilesPerObject: max must be a whole number ≥ 1, got ${cap.max}`);
    const ms = parseDuration(cap.window);
    if (!(ms > 0))
      throw new RangeError(`maxReconcilesPerObject: window must be longer than 0, got ${String(cap.window)}`);
    this.max = cap.max;
    this.windowMs = ms;
  }

  /**
   * A reconcile of `key` would start now: 0 if it may (and it is counted), else how many ms until
   * it may (and nothing is counted).
   */
  admit(key: string): number {
    const now = this.clock.now();
    let starts = this.starts.get(key);
    if (starts === undefined) {
      starts = [];
      this.starts.set(key, starts);
      if (++this.sinceSweep >= SWEEP_EVERY) this.sweep(now);
    }
    while (starts.length > 0 && (starts[0] as number) <= now - this.windowMs) starts.shift();
    if (starts.length >= this.max) return Math.max(1, Math.ceil((starts[0] as number) + this.windowMs - now));
    starts.push(now);
    return 0;
  }

  private sweep(now: number): void {
    this.sinceSweep = 0;
    for (const [key, starts] of this.starts) {
      if (starts.length === 0 || (starts[starts.length - 1] as number) <= now - this.windowMs)
        this.starts.delete(key);
    }
  }
}
