import type { Clock } from "../util/index.js";
import { type HeapItem, MinHeap } from "../util/index.js";

/**
 * The waiting room of the queue: items with a ready time in the future, kept in a binary min-heap
 * by ready time, and ONE timer armed for the earliest of them. When the timer fires, every item
 * whose time has come leaves the heap in ready-time order (ties: the order their time was set) and
 * is handed to `onReady`; then the timer is armed again for the new earliest item.
 *
 * One timer instead of one per item: a controller that requeues 100,000 keys "after 10 minutes"
 * holds 100,000 small heap entries, not 100,000 Node timers, and a key's time can move earlier
 * (earliest wins) by fixing its heap position instead of cancelling and creating a timer.
 *
 * The timer may fire a little before an item's time as `now()` reads it (Node's timers and
 * `performance.now()` round differently); nothing is released early: the timer is re-armed for
 * the rest.
 */

/** An item that can wait: its ready time (the heap key) and a tie-breaker set by the scheduler. */
export interface Delayed extends HeapItem {
  readyAt: number;
  seq: number;
}

/**
 * Node's timers hold at most 2³¹−1 ms (~24.8 days); a longer delay would fire at once with a
 * warning. The timer is armed for at most this long and re-armed when it fires.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

function earlier(a: Delayed, b: Delayed): boolean {
  return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);
}

export class DelayScheduler<T extends Delayed> {
  private readonly heap = new MinHeap<T>(earlier);
  private readonly clock: Clock;
  private readonly onReady: (item: T) => void;
  private timer: unknown;
  /** When the armed timer fires; Infinity when no timer is armed. */
  private timerAt = Number.POSITIVE_INFINITY;
  private seq = 0;

  constructor(clock: Clock, onReady: (item: T) => void) {
    this.clock = clock;
    this.onReady = onReady;
  }

  /** Items waiting. */
  get size(): number {
    return this.heap.size;
  }

  /** Starts `item` (in no heap) waiting until `readyAt`. */
  schedule(item: T, readyAt: number): void {
    item.readyAt = readyAt;
    item.seq = this.seq++;
    this.heap.push(item);
    if (readyAt < this.timerAt) this.arm();
  }

  /**
   * Moves a waiting item's time to `readyAt` if that is earlier (earliest wins); a later time is
   * ignored. Returns whether the time moved.
   */
  moveEarlier(item: T, readyAt: number): boolean {
    if (!(readyAt < item.readyAt)) return false;
    item.readyAt = readyAt;
    item.seq = this.seq++;
    this.heap.update(item);
    if (readyAt < this.timerAt) this.arm();
    return true;
  }

  /** Takes `item` out of the waiting room without calling `onReady`. */
  cancel(item: T): void {
    this.heap.remove(item);
    // A timer armed for an item that is gone fires harmlessly, but it would keep the process alive
    // until then (up to 1000 s for a backoff): disarm when nothing waits.
    if (this.heap.size === 0) this.disarm();
  }

  /** Disarms the timer and forgets every waiting item. */
  stop(): void {
    this.disarm();
    this.heap.clear();
  }

  private disarm(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** Arms the timer for the earliest item (or disarms it when nothing waits). */
  private arm(): void {
    this.disarm();
    const next = this.heap.peek();
    if (next === undefined) return;
    const now = this.clock.now();
    const delay = Math.min(Math.max(Math.ceil(next.readyAt - now), 0), MAX_TIMER_DELAY_MS);
    this.timerAt = now + delay;
    this.timer = this.clock.setTimeout(this.fire, delay);
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    for (let next = this.heap.peek(); next !== undefined && next.readyAt <= now; next = this.heap.peek()) {
      this.heap.pop();
      this.onReady(next);
    }
    // onReady may have scheduled (and armed) already; arm only if nothing is armed.
    if (this.timer === undefined) this.arm();
  };
}
