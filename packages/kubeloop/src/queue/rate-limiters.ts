import { type Clock, systemClock, TokenBucket } from "../util/index.js";

/**
 * Rate limiters decide how long a key waits before its next attempt after a failure; the queue's
 * `addRateLimited(key)` is `addAfter(key, limiter.when(key))`. They are client-go's
 * (`util/workqueue/default_rate_limiters.go`), with durations in milliseconds.
 */

/**
 * How long a key waits before its next attempt.
 *
 * A limiter is used from one queue's single thread, so it needs no locking; the same limiter may be
 * shared by several queues only if its keys do not collide.
 */
export interface RateLimiter<K = string> {
  /** Milliseconds the key should wait before its next attempt. Each call counts as one attempt. */
  when(key: K): number;
  /** The key succeeded: forget its attempts, so its next `when` starts from scratch. */
  forget(key: K): void;
  /** Attempts (`when` calls) counted for the key since it was last forgotten. */
  retries(key: K): number;
}

/** First backoff: 5 ms, client-go's and controller-runtime's; a blip is retried at once. */
export const DEFAULT_BASE_DELAY_MS = 5;
/**
 * Backoff cap: 1000 s (~16.7 min), client-go's and controller-runtime's. Attempts 1–18 wait
 * 5 ms … 655 s (about 22 min in all); from the 19th on (5 ms × 2¹⁸ ≈ 1311 s) a key that keeps
 * failing is tried every 1000 s, so a fixed cause is picked up within 17 minutes without a restart.
 */
export const DEFAULT_MAX_DELAY_MS = 1_000_000;
/** client-go's legacy controller default bucket: 10 attempts per second overall ... */
export const DEFAULT_BUCKET_QPS = 10;
/** ... after a burst of 100. */
export const DEFAULT_BUCKET_BURST = 100;

function checkDelay(name: string, value: number): void {
  if (!(value >= 0) || !Number.isFinite(value)) {
    throw new RangeError(`${name} must be a finite number of milliseconds >= 0, got ${value}`);
  }
}

/** Per-item exponential backoff: the first delay and the cap. */
export interface ExponentialRateLimiterOptions {
  /** The first delay. Default {@link DEFAULT_BASE_DELAY_MS} (5 ms). */
  baseDelayMs?: number;
  /** The largest delay. Default {@link DEFAULT_MAX_DELAY_MS} (1000 s). */
  maxDelayMs?: number;
}

/**
 * Per-key exponential backoff: the n-th attempt since the key was last forgotten waits
 * `baseDelayMs × 2ⁿ⁻¹`, capped at `maxDelayMs` (5 ms, 10 ms, 20 ms, … 1000 s). client-go's
 * `ItemExponentialFailureRateLimiter`; controller-runtime's default since v0.23.
 */
export class ExponentialRateLimiter<K = string> implements RateLimiter<K> {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  private readonly failures = new Map<K, number>();

  constructor(options: ExponentialRateLimiterOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    checkDelay("baseDelayMs", this.baseDelayMs);
    checkDelay("maxDelayMs", this.maxDelayMs);
  }

  when(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2 ** n is exact up to 2^1023 and Infinity beyond; either way the cap applies.
    const delay = this.baseDelayMs * 2 ** n;
    return delay > this.maxDelayMs ? this.maxDelayMs : delay;
  }

  forget(key: K): void {
    this.failures.delete(key);
  }

  retries(key: K): number {
    return this.failures.get(key) ?? 0;
  }
}

/** An overall rate limit shared by all items: tokens per second and bucket size. */
export interface TokenBucketRateLimiterOptions {
  /** Tokens added per second; `Infinity` never delays. Default {@link DEFAULT_BUCKET_QPS} (10). */
  qps?: number;
  /** Bucket size: attempts allowed at once after a quiet period. Default {@link DEFAULT_BUCKET_BURST} (100). */
  burst?: number;
  /** Default {@link systemClock}. */
  clock?: Clock;
}

/**
 * One bucket for all keys: it holds up to `burst` tokens and refills at `qps` per second. Each
 * `when` takes a token, borrowing against the future when the bucket is empty, and returns how long
 * until that token exists, so waiting attempts are spread `1000 / qps` ms apart. client-go's
 * `BucketRateLimiter` (`golang.org/x/time/rate` reservations). It limits overall retry
 * throughput, not any one key: `forget` does nothing and `retries` is always 0.
 */
export class TokenBucketRateLimiter<K = string> implements RateLimiter<K> {
  readonly qps: number;
  readonly burst: number;
  private readonly bucket: TokenBucket;

  constructor(options: TokenBucketRateLimiterOptions = {}) {
    this.qps = options.qps ?? DEFAULT_BUCKET_QPS;
    this.burst = options.burst ?? DEFAULT_BUCKET_BURST;
    if (!(this.qps > 0)) throw new RangeError(`qps must be > 0, got ${this.qps}`);
    if (!Number.isSafeInteger(this.burst) || this.burst < 1) {
      throw new RangeError(`burst must be an integer >= 1, got ${this.burst}`);
    }
    this.bucket = new TokenBucket(this.qps, this.burst, options.clock ?? systemClock);
  }

  when(_key: K): number {
    return this.bucket.reserve();
  }

  forget(_key: K): void {}

  retries(_key: K): number {
    return 0;
  }
}

/** A fast delay for the first attempts, then a slow one. */
export interface FastSlowRateLimiterOptions {
  /** The delay of the first `maxFastAttempts` attempts. */
  fastDelayMs: number;
  /** The delay of every later attempt. */
  slowDelayMs: number;
  /** How many attempts get the fast delay. */
  maxFastAttempts: number;
}

/**
 * Per key: the first `maxFastAttempts` attempts wait `fastDelayMs`, later ones `slowDelayMs`, until
 * the key is forgotten. For "retry quickly a few times, then poll slowly". client-go's
 * `ItemFastSlowRateLimiter`.
 */
export class FastSlowRateLimiter<K = string> implements RateLimiter<K> {
  readonly fastDelayMs: number;
  readonly slowDelayMs: number;
  readonly maxFastAttempts: number;
  private readonly attempts = new Map<K, number>();

  constructor(options: FastSlowRateLimiterOptions) {
    this.fastDelayMs = options.fastDelayMs;
    this.slowDelayMs = options.slowDelayMs;
    this.maxFastAttempts = options.maxFastAttempts;
    checkDelay("fastDelayMs", this.fastDelayMs);
    checkDelay("slowDelayMs", this.slowDelayMs);
    if (!Number.isSafeInteger(this.maxFastAttempts) || this.maxFastAttempts < 0) {
      throw new RangeError(`maxFastAttempts must be an integer >= 0, got ${this.maxFastAttempts}`);
    }
  }

  when(key: K): number {
    const n = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, n);
    return n <= this.maxFastAttempts ? this.fastDelayMs : this.slowDelayMs;
  }

  forget(key: K): void {
    this.attempts.delete(key);
  }

  retries(key: K): number {
    return this.attempts.get(key) ?? 0;
  }
}

/**
 * The strictest of several limiters: `when` asks every one (so each counts the attempt) and returns
 * the longest delay; `forget` forgets in all; `retries` is the largest count. client-go's
 * `MaxOfRateLimiter`, e.g. per-key backoff combined with an overall bucket.
 */
export class MaxOfRateLimiter<K = string> implements RateLimiter<K> {
  readonly limiters: readonly RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    if (limiters.length === 0) throw new RangeError("MaxOfRateLimiter needs at least one limiter");
    this.limiters = limiters;
  }

  when(key: K): number {
    let max = 0;
    for (const limiter of this.limiters) {
      const delay = limiter.when(key);
      if (delay > max) max = delay;
    }
    return max;
  }

  forget(key: K): void {
    for (const limiter of this.limiters) limiter.forget(key);
  }

  retries(key: K): number {
    let max = 0;
    for (const limiter of this.limiters) {
      const n = limiter.retries(key);
      if (n > max) max = n;
    }
    return max;
  }
}

/**
 * The queue's default: per-key exponential backoff, 5 ms → 1000 s, and no overall bucket.
 *
 * That is controller-runtime's default since v0.23. client-go's legacy default adds a 10 qps /
 * 100 burst bucket across all keys; with the API server's priority and fairness doing the
 * server-side limiting, that bucket only delays retries after a mass failure (e.g. 1000 keys
 * failing at once wait up to 90 s). Compose it if you want it:
 * `new MaxOfRateLimiter(new ExponentialRateLimiter(), new TokenBucketRateLimiter())`.
 */
export function defaultRateLimiter<K = string>(): RateLimiter<K> {
  return new ExponentialRateLimiter<K>();
}
