import { type Clock, systemClock } from "./clock.js";
import { sleep } from "./time.js";

/**
 * A token bucket: it holds up to `burst` tokens, starts full and refills at `qps` tokens per second
 * of `clock` time. One bucket serves three ways of being limited:
 *
 * - {@link take}: wait for a token (the client's request rate, the fault proxy's bandwidth cap);
 * - {@link reserve}: take a token now, borrowing against the future, and learn how long until it
 *   exists (the queue's `TokenBucketRateLimiter`, client-go's `BucketRateLimiter`);
 * - {@link tryTake}: take a token if there is one, else drop (the Event recorder's per-object limit).
 *
 * Single-threaded, like everything in a Node process: no locking.
 *
 * @example
 * ```ts
 * const bucket = new TokenBucket(5, 10);  // 10 at once, then 5 per second
 * await bucket.take();                    // resolves when a token is there
 * const delayMs = bucket.reserve();       // 0 while tokens last, then 200, 400, …
 * ```
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  /** The rate is `perInterval` tokens every `intervalMs`, kept as given so refills add exact amounts. */
  private perInterval: number;
  private intervalMs: number;

  /** @param qps tokens per second; `Infinity` never limits. */
  constructor(
    qps: number,
    readonly burst: number,
    private readonly clock: Clock = systemClock,
  ) {
    if (!(qps > 0)) throw new RangeError(`TokenBucket: qps must be > 0, got ${qps}`);
    if (!(burst >= 1) || !Number.isFinite(burst))
      throw new RangeError(`TokenBucket: burst must be a finite number >= 1, got ${burst}`);
    this.perInterval = qps;
    this.intervalMs = 1000;
    this.tokens = burst;
    this.last = clock.now();
  }

  /**
   * A bucket that gains one token every `intervalMs` (a slow rate said the way people say it:
   * "one more every 5 minutes").
   */
  static oneEvery(intervalMs: number, burst: number, clock: Clock = systemClock): TokenBucket {
    if (!(intervalMs > 0) || !Number.isFinite(intervalMs))
      throw new RangeError(`TokenBucket: intervalMs must be a finite number > 0, got ${intervalMs}`);
    const bucket = new TokenBucket(1000 / intervalMs, burst, clock);
    bucket.perInterval = 1;
    bucket.intervalMs = intervalMs;
    return bucket;
  }

  /** Tokens added per second. */
  get qps(): number {
    return (this.perInterval * 1000) / this.intervalMs;
  }

  /** Tokens there now (negative while reservations borrow against the future). */
  get available(): number {
    this.refill();
    return this.tokens;
  }

  /** Takes `count` tokens if the bucket has them; false (taking nothing) if it has not. */
  tryTake(count = 1): boolean {
    this.refill();
    if (this.tokens < count) return false;
    this.tokens -= count;
    return true;
  }

  /**
   * Takes `count` tokens at once, going into debt if the bucket is short, and returns the
   * milliseconds until they exist: 0 while tokens last, then spaced `1000 / qps` ms apart. An
   * infinite `qps` never delays.
   */
  reserve(count = 1): number {
    if (this.perInterval === Number.POSITIVE_INFINITY) return 0;
    this.refill();
    this.tokens -= count;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.perInterval) * this.intervalMs;
  }

  /**
   * Resolves when `count` tokens (default 1; at most `burst`) are available, and takes them;
   * rejects with the signal's reason if `signal` aborts first. A byte-rate limit takes one token
   * per byte, in pieces of at most `burst`.
   */
  async take(count = 1, signal?: AbortSignal): Promise<void> {
    if (count > this.burst)
      throw new RangeError(`take(${count}) can never succeed: the burst is ${this.burst}`);
    while (!this.tryTake(count)) {
      await sleep(((count - this.tokens) / this.perInterval) * this.intervalMs, signal, this.clock);
    }
  }

  private refill(): void {
    const now = this.clock.now();
    // A clock read earlier than the last one (a wall clock set back) adds nothing.
    const elapsed = now > this.last ? now - this.last : 0;
    this.last = now;
    // An infinite rate is always full (0 ms × ∞ would be NaN).
    const added =
      this.perInterval === Number.POSITIVE_INFINITY
        ? this.burst
        : (elapsed * this.perInterval) / this.intervalMs;
    this.tokens = Math.min(this.burst, this.tokens + added);
  }
}
