import { type Clock, systemClock } from "./clock.js";
import { type Delayed, DelayScheduler } from "./delaying.js";
import { Deque } from "./deque.js";
import { type FairEntry, FairLine, type Fairness } from "./fair-line.js";
import type { QueueMetrics } from "./metrics.js";
import { defaultRateLimiter, type RateLimiter } from "./rate-limiters.js";

/**
 * A workqueue of keys: the dedupe/processing rules of client-go's `util/workqueue/queue.go`,
 * with delays (one timer over a min-heap), per-key rate limiting and integer priorities in the
 * same object, as controller-runtime's priority queue has them.
 *
 * States of a key, and the rules (client-go's words in brackets):
 *
 * - **queued** [in the queue, dirty]: ready, waiting for a worker. At most once per key.
 * - **processing**: handed out by `get()`, `done(key)` not called yet. At most once per key: a key
 *   is never handed to two workers at once.
 * - **dirty while processing** [dirty and processing]: added again while processing. It stays out
 *   of the queue and joins it at `done(key)`, so it runs once more, after the current run.
 * - **waiting**: added with a delay that has not passed. Joins the queue (or becomes dirty while
 *   processing) when its time comes.
 *
 * 1. `add(key)` of a key that is queued, or dirty while processing, does nothing but raise its
 *    priority: duplicate adds collapse into one run.
 * 2. `add(key)` of a key that is processing and not dirty marks it dirty; it is not queued until
 *    `done(key)`. However many adds come during one run, it runs once more, not once per add.
 * 3. `get()` hands out the first queued key of the highest priority, moves it to processing and
 *    clears its dirty mark; adds from then on count towards a next run (rule 2).
 * 4. `done(key)` ends the run; if the key became dirty meanwhile it joins the back of its queue.
 *    `done` of a key that is not processing does nothing (client-go would queue a dirty key twice).
 * 5. Every add is followed by a run that starts after it (the run of a key already queued, or the
 *    next one), unless the queue shuts down first: the reconciler sees the state at that add or
 *    later, which is all a level-triggered controller needs.
 *
 * Delays: `addAfter(key, ms)` of a key that is not waiting starts it waiting, unless it is queued
 * or dirty (it will run sooner anyway: only priority is raised). Of a waiting key, it moves the
 * ready time earlier if `ms` is sooner; an earlier time always wins. `add(key)` of a waiting key
 * makes it ready at once. So each key has at most one pending run, at the earliest time asked for.
 *
 * Priorities: integers, higher first, default 0 ({@link DEFAULT_PRIORITY}); FIFO among equal
 * priorities, or, with `fairness`, fair turns among groups of keys (fair-line.ts states the rule;
 * FIFO within a group). Duplicate adds keep the highest priority asked for; a queued key raised to a higher
 * priority joins the back of that priority's line. Initial-list keys use {@link LOW_PRIORITY}, so
 * a restart's thousands of "nothing changed" keys go behind fresh changes.
 *
 * A group's limit (`fairness.maxInFlight`): `get()` passes over the queued keys of a group that has
 * that many keys processing, so a worker may wait while such keys are queued; when one of the
 * group's keys is done, its next queued key goes to a waiting worker. Without a limit, workers
 * wait only while nothing is queued.
 *
 * Shutting down (`shutDown`, `shutDownWithDrain`): adds are ignored from then on, waiting keys are
 * dropped, and `get()` resolves `undefined` at once, pending ones included, even while keys are
 * still queued. (client-go's `Get` keeps handing out queued keys after `ShutDown`; a controller
 * that is stopping has no use for them, and on the next start the initial list brings them back.)
 *
 * The queue is single-threaded like the rest of Node: every method runs to completion, and a key
 * is marked processing synchronously when `get()` picks it, before the awaiting worker resumes.
 */

/** The priority of a plain add: fresh changes. */
export const DEFAULT_PRIORITY = 0;
/**
 * The priority of keys from an informer's initial list (and resyncs that changed nothing): behind
 * every fresh change, so that after a restart the changes that happened while the controller was
 * down are not stuck behind thousands of "still fine" keys. controller-runtime's
 * `handler.LowPriority` (−100).
 */
export const LOW_PRIORITY = -100;
/** Empty priority levels are kept (no churn) until there are this many levels in all. */
const MAX_LEVELS_BEFORE_PURGE = 16;

/** A work queue's rate limiter, metric hooks and clock. */
export interface WorkQueueOptions<K> {
  /** Used by `addRateLimited`, `forget` and `retries`. Default {@link defaultRateLimiter} (5 ms × 2ⁿ, max 1000 s). */
  rateLimiter?: RateLimiter<K>;
  /** Hooks for the workqueue metrics; none by default. */
  metrics?: QueueMetrics;
  /** Default {@link systemClock}; a {@link FakeClock} in tests. */
  clock?: Clock;
  /**
   * Fair turns among groups of keys within each priority (e.g. by namespace), so one busy group
   * cannot starve the others; see {@link Fairness}. Default: none (FIFO within a priority).
   */
  fairness?: Fairness<K>;
}

/** A key handed out by {@link WorkQueue.getWithPriority}, with the priority it was queued at. */
export interface QueueItem<K> {
  key: K;
  priority: number;
}

/** A snapshot of the queue's state, for health checks, debugging and tests. */
export interface QueueCounts {
  /** Ready keys waiting for a worker: what `get()` hands out next (`queue.length`). */
  queued: number;
  /** Ready keys in all: `queued` plus keys added again while processing (client-go's dirty set; `workqueue_depth`). */
  dirty: number;
  /** Keys handed out by `get()` whose `done()` has not come. */
  processing: number;
  /** Keys added with a delay that has not passed yet. */
  waiting: number;
}

/** One pending run of a key; moves from `pending` to `processing` when a worker gets it. */
class Entry<K> implements Delayed, FairEntry<K> {
  /** Waiting: when the delay ends. Ready: when it became ready. */
  readyAt: number;
  startedAt = 0;
  seq = 0;
  heapIndex = -1;
  waiting = false;
  /** Left in a priority line after the key moved to a higher one; skipped when reached. */
  stale = false;
  /** Its fairness group while queued (fair-line.ts). */
  group = "";

  constructor(
    readonly key: K,
    public priority: number,
    readyAt: number,
  ) {
    this.readyAt = readyAt;
  }
}

/** The queued keys of one priority, in FIFO order or fair turns among groups. */
class Level<K> {
  readonly line: FairLine<K, Entry<K>>;
  constructor(
    readonly priority: number,
    fairness: Fairness<K> | undefined,
  ) {
    this.line = new FairLine<K, Entry<K>>(fairness);
  }
}

/** A pending `get()`: resolved with a key (already moved to processing), or undefined on shutdown. */
type Waiter<K> = (key: K | undefined, priority: number) => void;

const SHUT_DOWN: Promise<undefined> = Promise.resolve(undefined);
/** What `get` and `getWithPriority` resolve with. */
const keyOf = <K>(key: K): K => key;
const itemOf = <K>(key: K, priority: number): QueueItem<K> => ({ key, priority });

function checkPriority(priority: number): void {
  if (!Number.isSafeInteger(priority)) throw new RangeError(`priority must be an integer, got ${priority}`);
}

/**
 * A workqueue of keys. The rules are stated at the top of `queue.ts` and in the layer's README.
 *
 * Keys are compared like `Map` keys (`===`, NaN equal to itself): use strings such as
 * `"namespace/name"` or other primitives; two equal-looking objects are two keys.
 *
 * @example
 * ```ts
 * const queue = new WorkQueue<string>();
 * queue.add("default/web");
 * for (;;) {
 *   const key = await queue.get();
 *   if (key === undefined) break; // shut down
 *   try {
 *     await reconcile(key);
 *     queue.forget(key); // success: reset its backoff
 *   } catch {
 *     queue.addRateLimited(key); // retry in 5 ms, 10 ms, 20 ms, …
 *   } finally {
 *     queue.done(key);
 *   }
 * }
 * ```
 */
export class WorkQueue<K extends NonNullable<unknown> = string> {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter<K>;
  private readonly metrics: QueueMetrics | undefined;
  private readonly fairness: Fairness<K> | undefined;
  /** Keys with a pending run: waiting, queued, or dirty while processing. One entry per key. */
  private readonly pending = new Map<K, Entry<K>>();
  /** Keys handed out and not done, with their start times. */
  private readonly processing = new Map<K, Entry<K>>();
  /** Priority lines, highest priority first. */
  private levels: Level<K>[] = [];
  private readonly levelByPriority = new Map<number, Level<K>>();
  private queued = 0;
  /** Ready entries in `pending` (queued, or dirty while processing). */
  private dirty = 0;
  /**
   * Invariant: waiters exist only while nothing queued may be taken (nothing is queued, or every
   * queued key's group is at its `maxInFlight`).
   */
  private readonly waiters = new Deque<Waiter<K>>();
  /** With `fairness.maxInFlight`: keys processing per group, and whether a group is at its limit. */
  private readonly inFlight = new Map<string, number>();
  private readonly blocked: ((group: string) => boolean) | undefined;
  private readonly delays: DelayScheduler<Entry<K>>;
  private shutting = false;
  /** When a worker last took a key (`get()`), for {@link WorkQueue.stalledSeconds}. */
  private lastStartedAt = Number.NEGATIVE_INFINITY;
  private drain: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(options: WorkQueueOptions<K> = {}) {
    this.clock = options.clock ?? systemClock;
    this.rateLimiter = options.rateLimiter ?? defaultRateLimiter<K>();
    this.metrics = options.metrics;
    this.fairness = options.fairness;
    const limit = options.fairness?.maxInFlight;
    if (limit !== undefined) {
      if (!Number.isSafeInteger(limit) || limit < 1)
        throw new RangeError(`fairness maxInFlight must be a whole number ≥ 1, got ${limit}`);
      this.blocked = (group) => (this.inFlight.get(group) ?? 0) >= limit;
    }
    this.delays = new DelayScheduler<Entry<K>>(this.clock, (entry) => {
      entry.waiting = false;
      this.becameReady(entry);
    });
  }

  /** Ready keys waiting for a worker (client-go's `Len`). */
  get length(): number {
    return this.queued;
  }

  /** True once `shutDown` or `shutDownWithDrain` was called. */
  get shuttingDown(): boolean {
    return this.shutting;
  }

  counts(): QueueCounts {
    return {
      queued: this.queued,
      dirty: this.dirty,
      processing: this.processing.size,
      waiting: this.delays.size,
    };
  }

  /**
   * Marks `key` as needing a run, now. Collapses into a run already pending; while the key is
   * processing, it runs once more after `done`. `priority`: higher first (default 0); a pending
   * run keeps the highest priority asked for. Ignored after shutdown.
   */
  add(key: K, priority = DEFAULT_PRIORITY): void {
    if (this.shutting) return;
    if (priority !== DEFAULT_PRIORITY) checkPriority(priority);
    const entry = this.pending.get(key);
    if (entry === undefined) {
      const created = new Entry(key, priority, this.clock.now());
      this.pending.set(key, created);
      this.becameReady(created);
    } else if (entry.waiting) {
      this.delays.cancel(entry);
      entry.waiting = false;
      entry.readyAt = this.clock.now();
      if (priority > entry.priority) entry.priority = priority;
      this.becameReady(entry);
    } else if (priority > entry.priority) {
      this.raise(entry, priority);
    }
  }

  /**
   * Marks `key` as needing a run in `delayMs` milliseconds (at once when `delayMs <= 0`). If the key
   * already has a pending run, the earlier time wins and the higher priority wins. Ignored after
   * shutdown.
   */
  addAfter(key: K, delayMs: number, priority = DEFAULT_PRIORITY): void {
    if (this.shutting) return;
    if (!Number.isFinite(delayMs)) throw new RangeError(`delayMs must be a finite number, got ${delayMs}`);
    this.metrics?.retry?.();
    if (delayMs <= 0) {
      this.add(key, priority);
      return;
    }
    if (priority !== DEFAULT_PRIORITY) checkPriority(priority);
    const readyAt = this.clock.now() + delayMs;
    const entry = this.pending.get(key);
    if (entry === undefined) {
      const created = new Entry(key, priority, readyAt);
      created.waiting = true;
      this.pending.set(key, created);
      this.delays.schedule(created, readyAt);
    } else if (entry.waiting) {
      if (priority > entry.priority) entry.priority = priority;
      this.delays.moveEarlier(entry, readyAt);
    } else if (priority > entry.priority) {
      this.raise(entry, priority);
    }
  }

  /**
   * `addAfter(key, rateLimiter.when(key), priority)`: retry after the key's backoff (5 ms, 10 ms,
   * 20 ms, … 1000 s by default). Call it when processing failed, and `forget(key)` when it succeeded.
   */
  addRateLimited(key: K, priority = DEFAULT_PRIORITY): void {
    if (this.shutting) return;
    this.addAfter(key, this.rateLimiter.when(key), priority);
  }

  /** The key succeeded: reset its backoff. It does not remove a pending run. */
  forget(key: K): void {
    this.rateLimiter.forget(key);
  }

  /** How many rate-limited retries the key had since it was last forgotten. */
  retries(key: K): number {
    return this.rateLimiter.retries(key);
  }

  /**
   * The next key to process: resolves as soon as one is ready (highest priority first, FIFO among
   * equals), or with `undefined` once the queue shuts down. The key is processing from the moment
   * it is picked; call `done(key)` when finished, whatever happened (in a `finally`).
   */
  get(): Promise<K | undefined> {
    return this.take<K>(keyOf);
  }

  /** Like `get`, with the priority the key was queued at (to requeue it at the same priority). */
  getWithPriority(): Promise<QueueItem<K> | undefined> {
    return this.take<QueueItem<K>>(itemOf);
  }

  /**
   * Ends the key's run. If it was added again meanwhile, it joins the back of its queue now. Does
   * nothing for a key that is not processing.
   */
  done(key: K): void {
    const entry = this.processing.get(key);
    if (entry === undefined) return;
    this.processing.delete(key);
    if (this.blocked !== undefined) this.leaveGroup(entry.group);
    const metrics = this.metrics;
    if (metrics?.workDuration !== undefined) {
      metrics.workDuration((this.clock.now() - entry.startedAt) / 1000);
    }
    const next = this.pending.get(key);
    if (next !== undefined && !next.waiting) this.enqueue(next);
    if (this.blocked !== undefined) this.serveWaiters();
    if (this.drain !== undefined && this.processing.size === 0) this.endDrain();
  }

  /**
   * Stops the queue: later adds are ignored, waiting keys are dropped, and every pending and future
   * `get()` resolves `undefined`. Keys being processed may still call `done`. Also ends the wait of
   * a `shutDownWithDrain` in progress (to give up on draining, e.g. after a timeout).
   */
  shutDown(): void {
    this.stop();
    this.endDrain();
  }

  /**
   * Like `shutDown`, and resolves once every key being processed is `done` (at once if none is).
   * Workers must keep calling `done`, or this never resolves; race it with a timeout and call
   * `shutDown()` to stop waiting.
   */
  shutDownWithDrain(): Promise<void> {
    this.stop();
    if (this.processing.size === 0) return Promise.resolve();
    if (this.drain === undefined) {
      let resolve = (): void => {};
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.drain = { promise, resolve };
    }
    return this.drain.promise;
  }

  /** Sum of the running times of all keys being processed (`workqueue_unfinished_work_seconds`). */
  unfinishedWorkSeconds(): number {
    const now = this.clock.now();
    let total = 0;
    for (const entry of this.processing.values()) total += now - entry.startedAt;
    return total / 1000;
  }

  /** The running time of the longest-running key (`workqueue_longest_running_processor_seconds`). */
  longestRunningProcessorSeconds(): number {
    const now = this.clock.now();
    let longest = 0;
    for (const entry of this.processing.values()) {
      if (now - entry.startedAt > longest) longest = now - entry.startedAt;
    }
    return longest / 1000;
  }

  /**
   * For how long ready keys have waited while no worker took any key, in seconds; 0 when none
   * waits. Slow workers still take keys now and then; a value that keeps growing means every
   * worker is stuck in a call that never returns (the manager's `/healthz` fails on it).
   */
  stalledSeconds(): number {
    if (this.queued === 0) return 0;
    let oldest = Number.POSITIVE_INFINITY;
    for (const entry of this.pending.values()) {
      if (!entry.waiting && !this.processing.has(entry.key) && entry.readyAt < oldest) oldest = entry.readyAt;
    }
    if (oldest === Number.POSITIVE_INFINITY) return 0;
    return Math.max(0, this.clock.now() - Math.max(oldest, this.lastStartedAt)) / 1000;
  }

  // --- internals -------------------------------------------------------------------------------

  /** `get` and `getWithPriority`: the next ready key, or the next to become ready, as `result` shapes it. */
  private take<R>(result: (key: K, priority: number) => R): Promise<R | undefined> {
    if (this.shutting) return SHUT_DOWN;
    const entry = this.dequeue();
    if (entry !== undefined) {
      this.start(entry);
      return Promise.resolve(result(entry.key, entry.priority));
    }
    return new Promise<R | undefined>((resolve) =>
      this.waiters.push((key, priority) => resolve(key === undefined ? undefined : result(key, priority))),
    );
  }

  /** A pending entry just became ready (new, or its delay ended): count it, queue it unless the key is processing. */
  private becameReady(entry: Entry<K>): void {
    this.dirty++;
    const metrics = this.metrics;
    if (metrics !== undefined) {
      metrics.add?.(entry.priority);
      metrics.depth?.(entry.priority, 1);
    }
    if (!this.processing.has(entry.key)) this.enqueue(entry);
  }

  /** A ready entry whose key is not processing: straight to a waiting worker, else into its line. */
  private enqueue(entry: Entry<K>): void {
    if (this.blocked !== undefined) {
      // Workers may be waiting while blocked groups' keys are queued: through the line, in order.
      this.levelFor(entry.priority).line.push(entry);
      this.queued++;
      this.serveWaiters();
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter !== undefined) {
      this.start(entry);
      waiter(entry.key, entry.priority);
      return;
    }
    const level = this.levelFor(entry.priority);
    level.line.push(entry);
    this.queued++;
  }

  /** Hands queued keys that may be taken to waiting workers (with `maxInFlight` only). */
  private serveWaiters(): void {
    while (this.waiters.length > 0 && this.queued > 0) {
      const entry = this.dequeue();
      if (entry === undefined) return;
      this.start(entry);
      (this.waiters.shift() as Waiter<K>)(entry.key, entry.priority);
    }
  }

  /** One key of `group` is no longer processing. */
  private leaveGroup(group: string): void {
    const n = (this.inFlight.get(group) ?? 0) - 1;
    if (n > 0) this.inFlight.set(group, n);
    else this.inFlight.delete(group);
  }

  /** Moves a ready entry to a higher priority. */
  private raise(entry: Entry<K>, priority: number): void {
    const metrics = this.metrics;
    if (metrics?.depth !== undefined) {
      metrics.depth(entry.priority, -1);
      metrics.depth(priority, 1);
    }
    if (this.processing.has(entry.key)) {
      entry.priority = priority; // dirty while processing: in no line yet
      return;
    }
    // Queued: leave the old entry as a tombstone in its line and join the back of the new one.
    entry.stale = true;
    this.levelFor(entry.priority).line.discard(entry);
    this.queued--;
    const moved = new Entry(entry.key, priority, entry.readyAt);
    this.pending.set(entry.key, moved);
    this.enqueue(moved);
  }

  /** Takes the first queued entry of the highest priority, or undefined when none is queued. */
  private dequeue(): Entry<K> | undefined {
    if (this.queued === 0) return undefined;
    for (const level of this.levels) {
      if (level.line.live === 0) continue;
      const entry = level.line.shift(this.blocked);
      if (entry === undefined) continue;
      this.queued--;
      return entry;
    }
    return undefined;
  }

  /** A ready entry goes to a worker: it leaves `pending` (adds now count towards a next run). */
  private start(entry: Entry<K>): void {
    this.pending.delete(entry.key);
    this.dirty--;
    const now = this.clock.now();
    entry.startedAt = now;
    this.lastStartedAt = now;
    this.processing.set(entry.key, entry);
    if (this.blocked !== undefined) this.inFlight.set(entry.group, (this.inFlight.get(entry.group) ?? 0) + 1);
    const metrics = this.metrics;
    if (metrics !== undefined) {
      metrics.depth?.(entry.priority, -1);
      metrics.queueDuration?.((now - entry.readyAt) / 1000);
    }
  }

  private levelFor(priority: number): Level<K> {
    const found = this.levelByPriority.get(priority);
    if (found !== undefined) return found;
    if (this.levels.length >= MAX_LEVELS_BEFORE_PURGE) {
      this.levels = this.levels.filter((level) => level.line.live > 0 || level.priority === DEFAULT_PRIORITY);
      this.levelByPriority.clear();
      for (const level of this.levels) this.levelByPriority.set(level.priority, level);
    }
    const level = new Level<K>(priority, this.fairness);
    this.levelByPriority.set(priority, level);
    let i = 0;
    while (i < this.levels.length && (this.levels[i] as Level<K>).priority > priority) i++;
    this.levels.splice(i, 0, level);
    return level;
  }

  private stop(): void {
    if (this.shutting) return;
    this.shutting = true;
    this.delays.stop();
    for (const [key, entry] of this.pending) if (entry.waiting) this.pending.delete(key);
    for (let waiter = this.waiters.shift(); waiter !== undefined; waiter = this.waiters.shift()) {
      waiter(undefined, DEFAULT_PRIORITY);
    }
  }

  private endDrain(): void {
    const drain = this.drain;
    this.drain = undefined;
    drain?.resolve();
  }
}
