/**
 * `kubeloop/queue`: the workqueue between "something changed" and "reconcile this key". It knows
 * nothing of Kubernetes: keys are strings (or other primitives) and the rules are client-go's.
 *
 * - a key is never handed to two workers at once; adds while it is processing make it run once
 *   more after `done`; duplicate adds collapse;
 * - `addAfter` delays a key (one timer, a min-heap of ready times, earliest time wins);
 * - `addRateLimited` backs a failing key off (5 ms × 2ⁿ up to 1000 s by default), `forget` resets;
 * - priorities: higher first, FIFO among equals; initial-list keys at {@link LOW_PRIORITY};
 * - fairness (optional): within a priority, groups of keys (e.g. namespaces) take turns;
 * - `shutDown` / `shutDownWithDrain`, metrics hooks named after client-go's workqueue metrics,
 *   and an injectable clock ({@link FakeClock}) for tests without sleeps.
 *
 * @example
 * ```ts
 * import { LOW_PRIORITY, WorkQueue } from "kubeloop/queue";
 *
 * const queue = new WorkQueue<string>();
 * const seen: string[] = [];
 *
 * async function worker(): Promise<void> {
 *   for (;;) {
 *     const key = await queue.get();
 *     if (key === undefined) return; // shut down
 *     try {
 *       seen.push(key); // reconcile(key) goes here
 *       queue.forget(key);
 *     } catch {
 *       queue.addRateLimited(key);
 *     } finally {
 *       queue.done(key);
 *     }
 *   }
 * }
 *
 * queue.add("default/old", LOW_PRIORITY); // from the initial list
 * queue.add("default/web"); // a fresh change: handed out first
 * queue.add("default/web"); // collapses into the pending run
 * queue.addAfter("default/db", 10);
 * const workers = [worker(), worker()];
 * await new Promise((resolve) => setTimeout(resolve, 50));
 * await queue.shutDownWithDrain();
 * await Promise.all(workers);
 * // seen: ["default/web", "default/old", "default/db"]
 * ```
 */
export { type Clock, FakeClock, systemClock } from "./clock.js";
export type { Fairness } from "./fair-line.js";
export { type QueueMetrics, WORKQUEUE_METRIC_NAMES } from "./metrics.js";
export {
  DEFAULT_PRIORITY,
  LOW_PRIORITY,
  type QueueCounts,
  type QueueItem,
  WorkQueue,
  type WorkQueueOptions,
} from "./queue.js";
export {
  defaultRateLimiter,
  ExponentialRateLimiter,
  type ExponentialRateLimiterOptions,
  FastSlowRateLimiter,
  type FastSlowRateLimiterOptions,
  MaxOfRateLimiter,
  type RateLimiter,
  TokenBucketRateLimiter,
  type TokenBucketRateLimiterOptions,
} from "./rate-limiters.js";
