import { describe, expect, it } from "vitest";
import { FakeClock } from "./clock.js";
import {
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_MAX_DELAY_MS,
  defaultRateLimiter,
  ExponentialRateLimiter,
  FastSlowRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
  TokenBucketRateLimiter,
} from "./rate-limiters.js";

const whens = (limiter: RateLimiter, key: string, n: number) =>
  Array.from({ length: n }, () => limiter.when(key));

describe("ExponentialRateLimiter", () => {
  it("waits 5 ms × 2ⁿ by default: 5, 10, 20, 40, 80 ms", () => {
    expect(DEFAULT_BASE_DELAY_MS).toBe(5);
    expect(whens(new ExponentialRateLimiter(), "a", 5)).toEqual([5, 10, 20, 40, 80]);
  });

  it("caps at 1000 s by default, reached on the 19th attempt", () => {
    expect(DEFAULT_MAX_DELAY_MS).toBe(1_000_000);
    const delays = whens(new ExponentialRateLimiter(), "a", 20);
    expect(delays[17]).toBe(5 * 2 ** 17); // 655.36 s
    expect(delays[18]).toBe(1_000_000);
    expect(delays[19]).toBe(1_000_000);
  });

  it("stays at the cap however many attempts (no overflow to Infinity or NaN)", () => {
    const limiter = new ExponentialRateLimiter({ baseDelayMs: 1, maxDelayMs: 60_000 });
    const delays = whens(limiter, "a", 2000);
    expect(delays.at(-1)).toBe(60_000);
    expect(limiter.retries("a")).toBe(2000);
  });

  it("counts attempts per key, and forget starts a key over without touching others", () => {
    const limiter = new ExponentialRateLimiter({ baseDelayMs: 1, maxDelayMs: 1000 });
    whens(limiter, "a", 3);
    whens(limiter, "b", 2);
    expect([limiter.retries("a"), limiter.retries("b"), limiter.retries("c")]).toEqual([3, 2, 0]);
    limiter.forget("a");
    expect(limiter.retries("a")).toBe(0);
    expect(limiter.when("a")).toBe(1);
    expect(limiter.when("b")).toBe(4);
  });

  it("rejects delays that are negative or not finite", () => {
    expect(() => new ExponentialRateLimiter({ baseDelayMs: -1 })).toThrow(RangeError);
    expect(() => new ExponentialRateLimiter({ maxDelayMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    expect(() => new ExponentialRateLimiter({ baseDelayMs: Number.NaN })).toThrow(RangeError);
  });
});

describe("TokenBucketRateLimiter", () => {
  it("lets a burst through at once, then spaces attempts 1000 / qps ms apart", () => {
    const clock = new FakeClock();
    const limiter = new TokenBucketRateLimiter({ qps: 10, burst: 2, clock });
    expect(whens(limiter, "a", 5)).toEqual([0, 0, 100, 200, 300]);
  });

  it("refills at qps tokens per second up to the burst, shared by all keys", () => {
    const clock = new FakeClock();
    const limiter = new TokenBucketRateLimiter({ qps: 10, burst: 3, clock });
    expect([limiter.when("a"), limiter.when("b"), limiter.when("c"), limiter.when("d")]).toEqual([
      0, 0, 0, 100,
    ]);
    clock.advance(300); // the borrowed token is repaid, two more accrue
    expect(whens(limiter, "e", 3)).toEqual([0, 0, 100]);
    clock.advance(60_000); // a long quiet period refills only up to the burst
    expect(whens(limiter, "f", 4)).toEqual([0, 0, 0, 100]);
  });

  it("defaults to client-go's 10 qps and burst of 100", () => {
    const clock = new FakeClock();
    const limiter = new TokenBucketRateLimiter({ clock });
    expect([limiter.qps, limiter.burst]).toEqual([10, 100]);
    expect(Math.max(...whens(limiter, "a", 100))).toBe(0);
    expect(limiter.when("a")).toBe(100);
  });

  it("never delays with an infinite rate", () => {
    const limiter = new TokenBucketRateLimiter({ qps: Number.POSITIVE_INFINITY, burst: 1 });
    expect(Math.max(...whens(limiter, "a", 1000))).toBe(0);
  });

  it("tracks no keys: forget does nothing and retries is 0", () => {
    const limiter = new TokenBucketRateLimiter({ qps: 1, burst: 1, clock: new FakeClock() });
    whens(limiter, "a", 3);
    limiter.forget("a");
    expect(limiter.retries("a")).toBe(0);
    expect(limiter.when("a")).toBe(3000); // forget did not refund the bucket
  });

  it("rejects a rate that is not positive and a burst below 1", () => {
    expect(() => new TokenBucketRateLimiter({ qps: 0 })).toThrow(RangeError);
    expect(() => new TokenBucketRateLimiter({ qps: Number.NaN })).toThrow(RangeError);
    expect(() => new TokenBucketRateLimiter({ burst: 0 })).toThrow(RangeError);
    expect(() => new TokenBucketRateLimiter({ burst: 1.5 })).toThrow(RangeError);
  });
});

describe("FastSlowRateLimiter", () => {
  it("waits the fast delay for the first attempts, then the slow delay, per key", () => {
    const limiter = new FastSlowRateLimiter({ fastDelayMs: 10, slowDelayMs: 5000, maxFastAttempts: 3 });
    expect(whens(limiter, "a", 5)).toEqual([10, 10, 10, 5000, 5000]);
    expect(limiter.when("b")).toBe(10);
    expect(limiter.retries("a")).toBe(5);
  });

  it("starts a key over on forget", () => {
    const limiter = new FastSlowRateLimiter({ fastDelayMs: 10, slowDelayMs: 5000, maxFastAttempts: 1 });
    whens(limiter, "a", 2);
    limiter.forget("a");
    expect(limiter.retries("a")).toBe(0);
    expect(limiter.when("a")).toBe(10);
  });

  it("is always slow with zero fast attempts", () => {
    const limiter = new FastSlowRateLimiter({ fastDelayMs: 10, slowDelayMs: 5000, maxFastAttempts: 0 });
    expect(limiter.when("a")).toBe(5000);
  });

  it("rejects negative delays and a fractional attempt count", () => {
    expect(() => new FastSlowRateLimiter({ fastDelayMs: -1, slowDelayMs: 1, maxFastAttempts: 1 })).toThrow(
      RangeError,
    );
    expect(() => new FastSlowRateLimiter({ fastDelayMs: 1, slowDelayMs: 1, maxFastAttempts: 0.5 })).toThrow(
      RangeError,
    );
  });
});

describe("MaxOfRateLimiter", () => {
  it("returns the longest delay of its limiters, and every limiter counts the attempt", () => {
    const clock = new FakeClock();
    const exponential = new ExponentialRateLimiter({ baseDelayMs: 1, maxDelayMs: 1000 });
    const bucket = new TokenBucketRateLimiter({ qps: 10, burst: 2, clock });
    const limiter = new MaxOfRateLimiter(exponential, bucket);
    expect(whens(limiter, "a", 5)).toEqual([1, 2, 100, 200, 300]);
    expect(exponential.retries("a")).toBe(5);
  });

  it("forgets in every limiter and reports the largest retry count", () => {
    const fast = new FastSlowRateLimiter({ fastDelayMs: 1, slowDelayMs: 2, maxFastAttempts: 1 });
    const exponential = new ExponentialRateLimiter();
    const limiter = new MaxOfRateLimiter(fast, exponential);
    limiter.when("a");
    exponential.when("a");
    expect(limiter.retries("a")).toBe(2);
    limiter.forget("a");
    expect([fast.retries("a"), exponential.retries("a"), limiter.retries("a")]).toEqual([0, 0, 0]);
  });

  it("needs at least one limiter", () => {
    expect(() => new MaxOfRateLimiter()).toThrow(RangeError);
  });
});

describe("defaultRateLimiter", () => {
  it("is per-key exponential backoff, 5 ms to 1000 s, with no overall bucket", () => {
    const limiter = defaultRateLimiter();
    expect(whens(limiter, "a", 3)).toEqual([5, 10, 20]);
    // 500 distinct keys failing at once are all retried after 5 ms: no bucket spreads them out.
    expect(Math.max(...Array.from({ length: 500 }, (_, i) => limiter.when(`k${i}`)))).toBe(5);
    expect(limiter).toBeInstanceOf(ExponentialRateLimiter);
  });
});
