import { describe, expect, it } from "vitest";
import { type Clock, FakeClock } from "./clock.js";
import { TokenBucket } from "./token-bucket.js";

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("TokenBucket", () => {
  it("reserve: free while the burst lasts, then spaced 1000/qps apart, borrowing ahead", () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(10, 3, clock);
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 0]);
    expect(bucket.reserve()).toBe(100);
    expect(bucket.reserve()).toBe(200);
    clock.advance(200); // the two borrowed tokens exist now; the bucket is at 0
    expect(bucket.reserve()).toBe(100);
    clock.advance(10_000); // refills to the burst, no further
    expect(bucket.available).toBe(3);
  });

  it("tryTake: takes a token when there is one, else takes nothing", () => {
    const clock = new FakeClock();
    const bucket = TokenBucket.oneEvery(60_000, 2, clock);
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([true, true, false]);
    clock.advance(59_999);
    expect(bucket.tryTake()).toBe(false);
    clock.advance(1);
    expect(bucket.tryTake()).toBe(true); // exactly one token after exactly one interval
    expect(bucket.qps).toBeCloseTo(1 / 60, 12);
  });

  it("take: waits on the clock for a token, and for a count of them", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(2, 4, clock);
    await bucket.take(4);
    let got = false;
    const waiting = bucket.take(2).then(() => {
      got = true;
    });
    await settle();
    clock.advance(999);
    await settle();
    expect(got).toBe(false);
    clock.advance(1);
    await waiting;
    expect(got).toBe(true);
    expect(bucket.available).toBe(0);
  });

  it("take: rejects with the signal's reason, and refuses a count it can never have", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1, 1, clock);
    await bucket.take();
    const controller = new AbortController();
    const waiting = bucket.take(1, controller.signal);
    await settle();
    controller.abort(new Error("closed"));
    await expect(waiting).rejects.toThrow("closed");
    await expect(bucket.take(2)).rejects.toThrow("take(2) can never succeed: the burst is 1");
  });

  it("an infinite rate never limits", () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(Number.POSITIVE_INFINITY, 1, clock);
    for (let i = 0; i < 5; i++) expect(bucket.reserve()).toBe(0);
    for (let i = 0; i < 5; i++) expect(bucket.tryTake()).toBe(true);
  });

  it("a clock read earlier than the last (a wall clock set back) adds no tokens", () => {
    let now = 1_000_000;
    const clock: Clock = { now: () => now, setTimeout: () => undefined, clearTimeout: () => undefined };
    const bucket = TokenBucket.oneEvery(1000, 1, clock);
    expect(bucket.tryTake()).toBe(true);
    now -= 5000;
    expect(bucket.tryTake()).toBe(false);
    now += 1000;
    expect(bucket.tryTake()).toBe(true);
  });

  it("refuses a rate or burst that cannot work, naming it", () => {
    expect(() => new TokenBucket(0, 1)).toThrow("qps must be > 0, got 0");
    expect(() => new TokenBucket(1, 0)).toThrow("burst must be a finite number >= 1, got 0");
    expect(() => TokenBucket.oneEvery(Number.NaN, 1)).toThrow(
      "intervalMs must be a finite number > 0, got NaN",
    );
  });
});
