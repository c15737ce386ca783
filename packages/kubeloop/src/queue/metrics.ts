/**
 * What a queue reports, as hooks it calls (push) and readings it computes when asked (pull), so a
 * metrics layer can publish client-go's workqueue metrics 1:1 without this layer depending on a
 * metrics library. Existing dashboards and alerts keep working.
 *
 * | metric (client-go / controller-runtime)        | kind      | source                                       |
 * |------------------------------------------------|-----------|----------------------------------------------|
 * | `workqueue_depth{priority}`                    | gauge     | {@link QueueMetrics.depth} (+1 / −1)         |
 * | `workqueue_adds_total`                         | counter   | {@link QueueMetrics.add}                     |
 * | `workqueue_queue_duration_seconds`             | histogram | {@link QueueMetrics.queueDuration}           |
 * | `workqueue_work_duration_seconds`              | histogram | {@link QueueMetrics.workDuration}            |
 * | `workqueue_unfinished_work_seconds`            | gauge     | `queue.unfinishedWorkSeconds()` at scrape    |
 * | `workqueue_longest_running_processor_seconds`  | gauge     | `queue.longestRunningProcessorSeconds()`     |
 * | `workqueue_retries_total`                      | counter   | {@link QueueMetrics.retry}                   |
 *
 * The last two gauges are not pushed: client-go refreshes them every 500 ms from a goroutine; here
 * the metrics layer reads them from the processing map's start times when it is scraped, which
 * costs nothing between scrapes.
 */

/**
 * Hooks a queue calls synchronously as things happen. Every hook is optional; implement the ones you
 * publish. Hooks must be cheap and must not throw (they run inside `add`, `get` and `done`).
 */
export interface QueueMetrics {
  /**
   * `workqueue_adds_total`: a key became ready to process and was not already. A duplicate add that
   * collapses into a key already ready is not counted; a delayed add is counted when its delay ends.
   */
  add?(priority: number): void;
  /**
   * `workqueue_depth{priority}`: the number of keys ready to process, waiting for a worker or for
   * their previous run's `done` (client-go's dirty set), changed by `delta` at `priority`. +1 when
   * a key becomes ready, −1 when a worker gets it; a duplicate add that raises a ready key's
   * priority moves it (−1 at the old priority, +1 at the new). Keys still in their delay are not
   * counted.
   */
  depth?(priority: number, delta: number): void;
  /** `workqueue_queue_duration_seconds`: from the moment a key became ready to the `get` that took it. */
  queueDuration?(seconds: number): void;
  /** `workqueue_work_duration_seconds`: from `get` to `done`. */
  workDuration?(seconds: number): void;
  /**
   * `workqueue_retries_total`: an `addAfter` or `addRateLimited` call on a running queue (counted
   * like client-go, whose every delayed add, even with a zero delay, counts as a retry).
   */
  retry?(): void;
}

/** The Prometheus names of the metrics above, so a metrics layer maps them without retyping. */
export const WORKQUEUE_METRIC_NAMES = {
  depth: "workqueue_depth",
  adds: "workqueue_adds_total",
  queueDuration: "workqueue_queue_duration_seconds",
  workDuration: "workqueue_work_duration_seconds",
  unfinishedWork: "workqueue_unfinished_work_seconds",
  longestRunningProcessor: "workqueue_longest_running_processor_seconds",
  retries: "workqueue_retries_total",
} as const;
