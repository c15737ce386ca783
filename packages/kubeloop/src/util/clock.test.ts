import { describe, expect, it } from "vitest";
import { FakeClock, systemClock } from "./clock.js";

describe("FakeClock", () => {
  it("starts where it is told and moves only on advance", () => {
    const clock = new FakeClock(1000);
    expect(clock.now()).toBe(1000);
    clock.advance(250);
    expect(clock.now()).toBe(1250);
  });

  it("fires timers in due order, ties in the order they were set, each at its due time", () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const at = (name: string) => () => fired.push(`${name}@${clock.now()}`);
    clock.setTimeout(at("c"), 30);
    clock.setTimeout(at("a"), 10);
    clock.setTimeout(at("b"), 10);
    clock.setTimeout(at("late"), 100);
    clock.advance(50);
    expect(fired).toEqual(["a@10", "b@10", "c@30"]);
    expect(clock.now()).toBe(50);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerAt()).toBe(100);
  });

  it("fires timers that callbacks set within the advanced window", () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    clock.setTimeout(() => {
      fired.push(clock.now());
      clock.setTimeout(() => fired.push(clock.now()), 5);
    }, 10);
    clock.advance(15);
    expect(fired).toEqual([10, 15]);
  });

  it("fires a zero or negative delay on the next advance, even advance(0)", () => {
    const clock = new FakeClock();
    let fired = 0;
    clock.setTimeout(() => fired++, 0);
    clock.setTimeout(() => fired++, -10);
    clock.advance(0);
    expect(fired).toBe(2);
  });

  it("does not fire a cleared timer, and ignores handles it did not make", () => {
    const clock = new FakeClock();
    let fired = false;
    const handle = clock.setTimeout(() => {
      fired = true;
    }, 10);
    clock.clearTimeout(handle);
    clock.clearTimeout({});
    clock.clearTimeout(undefined);
    clock.advance(20);
    expect(fired).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    expect(clock.nextTimerAt()).toBeUndefined();
  });

  it("refuses to go backwards", () => {
    expect(() => new FakeClock().advance(-1)).toThrow(RangeError);
    expect(() => new FakeClock().advance(Number.NaN)).toThrow(RangeError);
  });
});

describe("systemClock", () => {
  it("reads a monotonic clock in milliseconds and fires and clears real timers", async () => {
    const start = systemClock.now();
    let cleared = false;
    const handle = systemClock.setTimeout(() => {
      cleared = true;
    }, 1);
    systemClock.clearTimeout(handle);
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 5));
    expect(cleared).toBe(false);
    expect(systemClock.now()).toBeGreaterThan(start);
  });
});
