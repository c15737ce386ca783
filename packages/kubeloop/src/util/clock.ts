import { type HeapItem, MinHeap } from "./heap.js";

/**
 * Where timed code gets the time from, and how it waits: the queue and its rate limiters, token
 * buckets, `sleep` and `pollUntil`, the Event recorder, a controller's `ctx.now()`. Injected so that
 * delays and backoffs are tested by moving a {@link FakeClock} forward instead of sleeping (or, end
 * to end, by jumping a `JumpClock` from kubeloop/testing).
 *
 * Times are milliseconds on a monotonic scale: only differences between two `now()` readings mean
 * anything (the system clock uses `performance.now()`, which wall-clock changes do not move).
 */
export interface Clock {
  now(): number;
  /** Calls `callback` once, `ms` from now. The handle is only ever passed back to `clearTimeout`. */
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The process's clock: `performance.now()` and Node's timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

class FakeTimer implements HeapItem {
  heapIndex = -1;
  constructor(
    readonly due: number,
    /** Creation order: timers due at the same instant fire in the order they were set. */
    readonly seq: number,
    readonly callback: () => void,
  ) {}
}

/**
 * A clock that only moves when told to. `advance(ms)` fires the timers that fall due on the way, in
 * due order (ties in the order they were set), each with `now()` set to its due time, including
 * timers that those callbacks set within the window.
 *
 * @example
 * ```ts
 * const clock = new FakeClock();
 * const queue = new WorkQueue({ clock });
 * queue.addAfter("a", 1000);
 * clock.advance(999); // queue.length === 0
 * clock.advance(1);   // queue.length === 1
 * ```
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new MinHeap<FakeTimer>(
    (a, b) => a.due < b.due || (a.due === b.due && a.seq < b.seq),
  );

  /** @param startMs what `now()` reads before the first `advance` (default 0). */
  constructor(startMs = 0) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  /** A zero, negative or NaN delay is due at once: it fires on the next `advance`, even `advance(0)`. */
  setTimeout(callback: () => void, ms: number): unknown {
    const timer = new FakeTimer(this.current + (ms > 0 ? ms : 0), this.seq++, callback);
    this.timers.push(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    if (handle instanceof FakeTimer) this.timers.remove(handle);
  }

  /** Moves time forward by `ms`, firing every timer due by then. A throwing callback stops the walk. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    const target = this.current + ms;
    for (let next = this.timers.peek(); next !== undefined && next.due <= target; next = this.timers.peek()) {
      this.timers.pop();
      if (next.due > this.current) this.current = next.due;
      next.callback();
    }
    this.current = target;
  }

  /** Timers set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  /** When the next timer falls due, or undefined when none is pending. */
  nextTimerAt(): number | undefined {
    return this.timers.peek()?.due;
  }
}
