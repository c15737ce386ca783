import { describe, expect, it } from "vitest";
import { WorkQueue } from "../queue/queue.js";
import { JumpClock } from "./jump-clock.js";

describe("JumpClock", () => {
  it("reads the start time, then runs in real time", async () => {
    const clock = new JumpClock(new Date("2030-01-01T00:00:00Z"));
    const first = clock.now();
    expect(first - Date.parse("2030-01-01T00:00:00Z")).toBeLessThan(50);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(clock.now() - first).toBeGreaterThanOrEqual(19);
  });

  it("fires timers that a jump passes at once, in due order, and keeps the rest", () => {
    const clock = new JumpClock(new Date("2030-01-01T00:00:00Z"));
    const fired: string[] = [];
    clock.setTimeout(() => fired.push("2h"), 7_200_000);
    clock.setTimeout(() => fired.push("1h"), 3_600_000);
    const cleared = clock.setTimeout(() => fired.push("cleared"), 1_000);
    clock.clearTimeout(cleared);
    clock.jump(3_600_000);
    expect(fired).toEqual(["1h"]);
    expect(clock.pendingTimers).toBe(1);
    clock.jump(3_600_000);
    expect(fired).toEqual(["1h", "2h"]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("fires timers in real time when nobody jumps", async () => {
    const clock = new JumpClock();
    const fired = await new Promise<number>((resolve) => {
      const start = Date.now();
      clock.setTimeout(() => resolve(Date.now() - start), 30);
    });
    expect(fired).toBeGreaterThanOrEqual(25);
  });

  it("moves a workqueue's delayed keys forward with a jump", () => {
    const clock = new JumpClock();
    const queue = new WorkQueue<string>({ clock });
    queue.addAfter("backup", 3_600_000);
    expect(queue.length).toBe(0);
    clock.jump(3_600_000);
    expect(queue.length).toBe(1);
    queue.shutDown();
  });

  it("rejects a backward jump", () => {
    expect(() => new JumpClock().jump(-1)).toThrow(/ms must be >= 0/);
  });
});
