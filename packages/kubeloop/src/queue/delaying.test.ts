import { describe, expect, it } from "vitest";
import { type Clock, FakeClock } from "./clock.js";
import { type Delayed, DelayScheduler, MAX_TIMER_DELAY_MS } from "./delaying.js";

interface Item extends Delayed {
  name: string;
}
const item = (name: string): Item => ({ name, readyAt: 0, seq: 0, heapIndex: -1 });

function setup(clock: Clock = new FakeClock()) {
  const released: string[] = [];
  const scheduler = new DelayScheduler<Item>(clock, (i) => released.push(`${i.name}@${clock.now()}`));
  return { scheduler, released };
}

describe("DelayScheduler", () => {
  it("arms one timer, for the earliest item, whatever the number of items", () => {
    const clock = new FakeClock();
    const { scheduler } = setup(clock);
    for (let i = 0; i < 100; i++) scheduler.schedule(item(`k${i}`), 1000 - i);
    expect(scheduler.size).toBe(100);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerAt()).toBe(901);
  });

  it("releases due items in ready-time order, ties in the order their time was set, then re-arms", () => {
    const clock = new FakeClock();
    const { scheduler, released } = setup(clock);
    scheduler.schedule(item("c"), 20);
    scheduler.schedule(item("a"), 10);
    scheduler.schedule(item("b"), 10);
    scheduler.schedule(item("d"), 40);
    clock.advance(25);
    expect(released).toEqual(["a@10", "b@10", "c@20"]);
    expect(clock.nextTimerAt()).toBe(40);
    expect(scheduler.size).toBe(1);
  });

  it("moves an item earlier and re-arms for it; a later time is ignored", () => {
    const clock = new FakeClock();
    const { scheduler, released } = setup(clock);
    const a = item("a");
    scheduler.schedule(a, 100);
    scheduler.schedule(item("b"), 50);
    expect(scheduler.moveEarlier(a, 200)).toBe(false);
    expect(scheduler.moveEarlier(a, 100)).toBe(false);
    expect(scheduler.moveEarlier(a, 30)).toBe(true);
    expect(clock.nextTimerAt()).toBe(30);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(100);
    expect(released).toEqual(["a@30", "b@50"]);
  });

  it("cancels an item without releasing it, and disarms when nothing waits", () => {
    const clock = new FakeClock();
    const { scheduler, released } = setup(clock);
    const a = item("a");
    const b = item("b");
    scheduler.schedule(a, 10);
    scheduler.schedule(b, 20);
    scheduler.cancel(a);
    expect(clock.pendingTimers).toBe(1); // still armed for a's time: fires harmlessly, then re-arms
    clock.advance(10);
    expect(released).toEqual([]);
    expect(clock.nextTimerAt()).toBe(20);
    scheduler.cancel(b);
    expect(clock.pendingTimers).toBe(0);
  });

  it("releases nothing early when the timer fires before an item's time", () => {
    // Node's timers and performance.now() round differently: a timer can fire a little early.
    const fake = new FakeClock();
    const early: Clock = {
      now: () => fake.now(),
      setTimeout: (callback, ms) => fake.setTimeout(callback, ms - 0.5),
      clearTimeout: (handle) => fake.clearTimeout(handle),
    };
    const { scheduler, released } = setup(early);
    scheduler.schedule(item("a"), 10);
    fake.advance(9.75);
    expect(released).toEqual([]);
    expect(fake.pendingTimers).toBe(1);
    fake.advance(0.25);
    expect(released).toEqual(["a@10"]);
  });

  it("arms at most MAX_TIMER_DELAY_MS ahead, and re-arms for the rest of a longer delay", () => {
    const clock = new FakeClock();
    const { scheduler, released } = setup(clock);
    scheduler.schedule(item("far"), MAX_TIMER_DELAY_MS + 1000);
    expect(clock.nextTimerAt()).toBe(MAX_TIMER_DELAY_MS);
    clock.advance(MAX_TIMER_DELAY_MS);
    expect(released).toEqual([]);
    expect(clock.nextTimerAt()).toBe(MAX_TIMER_DELAY_MS + 1000);
    clock.advance(1000);
    expect(released).toEqual([`far@${MAX_TIMER_DELAY_MS + 1000}`]);
  });

  it("disarms and forgets every item on stop", () => {
    const clock = new FakeClock();
    const { scheduler, released } = setup(clock);
    const a = item("a");
    scheduler.schedule(a, 10);
    scheduler.stop();
    expect(clock.pendingTimers).toBe(0);
    expect(scheduler.size).toBe(0);
    expect(a.heapIndex).toBe(-1);
    clock.advance(100);
    expect(released).toEqual([]);
  });
});
