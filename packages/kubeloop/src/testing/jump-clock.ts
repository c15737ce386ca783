import type { Clock } from "../util/index.js";

/**
 * A wall clock for end-to-end tests of scheduled work: it runs in real time (so retries, backoff
 * and polls behave as in production) and can jump forward. `jump(ms)` moves `now()` ahead and
 * fires the timers that fall due on the way at once; later timers keep their remaining time.
 *
 * Give it to a controller (`controller(X).clock(clock)`): `ctx.now()` and the queue's `after(…)`
 * delays follow it, so a test jumps to a backup's 03:00 slot instead of waiting for it. (For pure
 * unit tests of a queue, `FakeClock` in kubeloop/queue does not move by itself at all.)
 *
 * @example
 * ```ts
 * const clock = new JumpClock(new Date("2030-01-01T02:59:00Z"));
 * const ctrl = pgDatabaseController({ clock });   // returns after(60 s) for the 03:00 backup
 * clock.jump(60_000);                           // the reconcile runs now, and sees 03:00
 * ```
 */
export class JumpClock implements Clock {
  private offset: number;
  private readonly timers = new Set<JumpTimer>();

  /** @param start what `now()` reads at first (default: the real time). */
  constructor(start: Date = new Date()) {
    this.offset = start.getTime() - Date.now();
  }

  /** Wall-clock milliseconds: the real time plus every jump. */
  now(): number {
    return Date.now() + this.offset;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const timer: JumpTimer = { due: this.now() + Math.max(0, ms), callback, handle: undefined };
    this.arm(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    const timer = handle as JumpTimer;
    if (!this.timers.delete(timer)) return;
    clearTimeout(timer.handle);
  }

  /** Moves time forward by `ms`: timers due by then fire (in due order), the others are re-armed. */
  jump(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`JumpClock.jump: ms must be >= 0, got ${ms}`);
    this.offset += ms;
    const now = this.now();
    const pending = [...this.timers].sort((a, b) => a.due - b.due);
    for (const timer of pending) {
      clearTimeout(timer.handle);
      this.timers.delete(timer);
      if (timer.due <= now) timer.callback();
      else this.arm(timer);
    }
  }

  /** Timers set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  private arm(timer: JumpTimer): void {
    this.timers.add(timer);
    timer.handle = setTimeout(
      () => {
        this.timers.delete(timer);
        timer.callback();
      },
      Math.max(0, timer.due - this.now()),
    );
    // Like the queue's own timers, these must not keep a finished test's process alive.
    timer.handle.unref();
  }
}

interface JumpTimer {
  due: number;
  callback: () => void;
  handle: ReturnType<typeof setTimeout> | undefined;
}
