import { describe, expect, it } from "vitest";
import { FakeClock } from "./clock.js";
import { DEFAULT_PRIORITY, LOW_PRIORITY, WorkQueue } from "./queue.js";
import { FastSlowRateLimiter } from "./rate-limiters.js";

/** Lets every settled promise run its callbacks. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A `get()` whose outcome can be read synchronously after a flush. */
function pendingGet<K extends NonNullable<unknown>>(queue: WorkQueue<K>) {
  const state: { settled: boolean; value: K | undefined } = { settled: false, value: undefined };
  void queue.get().then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

function setup() {
  const clock = new FakeClock();
  const queue = new WorkQueue<string>({ clock });
  return { clock, queue };
}

/** Gets and finishes every queued key, returning them in order. */
async function drain(queue: WorkQueue<string>): Promise<string[]> {
  const keys: string[] = [];
  while (queue.length > 0) {
    const key = (await queue.get()) as string;
    keys.push(key);
    queue.done(key);
  }
  return keys;
}

describe("WorkQueue: dedupe and processing (client-go's queue.go rules)", () => {
  it("hands out an added key, and nothing is left after done", async () => {
    const { queue } = setup();
    queue.add("a");
    expect(queue.length).toBe(1);
    expect(await queue.get()).toBe("a");
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 1, waiting: 0 });
    queue.done("a");
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 0, waiting: 0 });
  });

  it("hands out keys in the order they were added (FIFO)", async () => {
    const { queue } = setup();
    for (const key of ["c", "a", "b"]) queue.add(key);
    expect(await drain(queue)).toEqual(["c", "a", "b"]);
  });

  it("collapses duplicate adds of a queued key into one run, keeping its place", async () => {
    const { queue } = setup();
    queue.add("a");
    queue.add("b");
    queue.add("a");
    queue.add("a");
    expect(queue.length).toBe(2);
    expect(await drain(queue)).toEqual(["a", "b"]);
  });

  it("never hands a key to a second worker while the first is processing it", async () => {
    const { queue } = setup();
    queue.add("a");
    const first = await queue.get();
    queue.add("a");
    const second = pendingGet(queue);
    await flush();
    expect(first).toBe("a");
    expect(second.settled).toBe(false);
    expect(queue.counts()).toEqual({ queued: 0, dirty: 1, processing: 1, waiting: 0 });
    queue.done("a");
    await flush();
    expect(second).toEqual({ settled: true, value: "a" });
  });

  it("runs a key added during processing exactly once more after done, however many adds came", async () => {
    const { queue } = setup();
    queue.add("a");
    await queue.get();
    for (let i = 0; i < 5; i++) queue.add("a");
    expect(queue.length).toBe(0);
    queue.done("a");
    expect(queue.length).toBe(1);
    expect(await drain(queue)).toEqual(["a"]);
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 0, waiting: 0 });
  });

  it("does not run a key again after done when it was not added again", async () => {
    const { queue } = setup();
    queue.add("a");
    queue.done((await queue.get()) as string);
    expect(queue.length).toBe(0);
    const next = pendingGet(queue);
    await flush();
    expect(next.settled).toBe(false);
  });

  it("counts adds towards the next run only from the moment get picked the key", async () => {
    const { queue } = setup();
    queue.add("a");
    queue.add("a"); // before get: collapses into this run
    const key = await queue.get();
    queue.done(key as string);
    expect(queue.length).toBe(0);
  });

  it("puts a key that was added during processing at the back of the queue on done", async () => {
    const { queue } = setup();
    queue.add("a");
    queue.add("b");
    const a = await queue.get();
    queue.add("a");
    queue.add("c");
    queue.done(a as string);
    expect(await drain(queue)).toEqual(["b", "c", "a"]);
  });

  it("ignores done for a key that is not processing, queued or not", async () => {
    const { queue } = setup();
    queue.done("never-seen");
    queue.add("a");
    queue.done("a"); // queued, not processing: no effect, in particular no second copy
    expect(queue.counts()).toEqual({ queued: 1, dirty: 1, processing: 0, waiting: 0 });
    const key = await queue.get();
    queue.add("a");
    queue.done(key as string);
    queue.done(key as string); // second done: the dirty key is queued once, not twice
    expect(queue.length).toBe(1);
    expect(await drain(queue)).toEqual(["a"]);
  });

  it("lets other keys flow to other workers while one key is processing", async () => {
    const { queue } = setup();
    queue.add("a");
    queue.add("b");
    const first = await queue.get();
    const second = await queue.get();
    expect([first, second]).toEqual(["a", "b"]);
    expect(queue.counts().processing).toBe(2);
  });

  it("hands a new key straight to a waiting worker, first waiter first", async () => {
    const { queue } = setup();
    const w1 = pendingGet(queue);
    const w2 = pendingGet(queue);
    queue.add("a");
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 1, waiting: 0 });
    await flush();
    expect(w1).toEqual({ settled: true, value: "a" });
    expect(w2.settled).toBe(false);
    queue.add("b");
    await flush();
    expect(w2).toEqual({ settled: true, value: "b" });
  });

  it("marks a key processing when get picks it, before the awaiting worker resumes", () => {
    const { queue } = setup();
    pendingGet(queue);
    queue.add("a");
    queue.add("a"); // the worker has not resumed, but "a" is already processing: this is a new run
    expect(queue.counts()).toEqual({ queued: 0, dirty: 1, processing: 1, waiting: 0 });
  });

  it("hands a dirty key to a waiting worker on done", async () => {
    const { queue } = setup();
    queue.add("a");
    const a = await queue.get();
    queue.add("a");
    const waiter = pendingGet(queue);
    queue.done(a as string);
    await flush();
    expect(waiter).toEqual({ settled: true, value: "a" });
  });

  it("compares keys like Map keys: numbers and strings work, equal-looking objects are distinct", async () => {
    const numbers = new WorkQueue<number>();
    numbers.add(1);
    numbers.add(1);
    expect(numbers.length).toBe(1);
    const objects = new WorkQueue<{ id: number }>();
    objects.add({ id: 1 });
    objects.add({ id: 1 });
    expect(objects.length).toBe(2);
  });
});

describe("WorkQueue: priorities", () => {
  it("hands out higher priorities first, FIFO within a priority", async () => {
    const { queue } = setup();
    queue.add("low-1", -1);
    queue.add("mid-1");
    queue.add("high-1", 7);
    queue.add("mid-2");
    queue.add("low-2", -1);
    queue.add("high-2", 7);
    expect(await drain(queue)).toEqual(["high-1", "high-2", "mid-1", "mid-2", "low-1", "low-2"]);
  });

  it("puts initial-list keys at LOW_PRIORITY behind fresh changes that come later", async () => {
    const { queue } = setup();
    expect(LOW_PRIORITY).toBe(-100);
    expect(DEFAULT_PRIORITY).toBe(0);
    for (let i = 0; i < 3; i++) queue.add(`listed-${i}`, LOW_PRIORITY);
    queue.add("changed");
    expect(await drain(queue)).toEqual(["changed", "listed-0", "listed-1", "listed-2"]);
  });

  it("keeps the highest priority of duplicate adds, never lowering it", async () => {
    const { queue } = setup();
    queue.add("a", LOW_PRIORITY);
    queue.add("a");
    queue.add("a", LOW_PRIORITY);
    expect(await queue.getWithPriority()).toEqual({ key: "a", priority: 0 });
  });

  it("moves a key raised to a higher priority to the back of that priority's line, once", async () => {
    const { queue } = setup();
    queue.add("x");
    queue.add("a", LOW_PRIORITY);
    queue.add("b", LOW_PRIORITY);
    queue.add("a"); // a fresh change to a listed key
    expect(queue.length).toBe(3);
    expect(await drain(queue)).toEqual(["x", "a", "b"]);
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 0, waiting: 0 });
  });

  it("gives a key added during processing the highest priority of those adds for its next run", async () => {
    const { queue } = setup();
    queue.add("a");
    const a = await queue.get();
    queue.add("a", LOW_PRIORITY);
    queue.add("a", 3);
    queue.add("b", 1);
    queue.done(a as string);
    expect(await queue.getWithPriority()).toEqual({ key: "a", priority: 3 });
  });

  it("reports, with getWithPriority, the priority a key was queued at, also to a waiting worker", async () => {
    const { queue } = setup();
    const waiting = queue.getWithPriority();
    queue.add("a", 4);
    expect(await waiting).toEqual({ key: "a", priority: 4 });
    queue.add("b", LOW_PRIORITY);
    expect(await queue.getWithPriority()).toEqual({ key: "b", priority: LOW_PRIORITY });
  });

  it("rejects a priority that is not an integer", () => {
    const { queue } = setup();
    expect(() => queue.add("a", 0.5)).toThrow(RangeError);
    expect(() => queue.addAfter("a", 10, Number.NaN)).toThrow(RangeError);
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 0, waiting: 0 });
  });

  it("stays ordered when many distinct priorities come and go", async () => {
    const { queue } = setup();
    for (let round = 0; round < 3; round++) {
      const priorities = Array.from({ length: 40 }, (_, i) => (i * 37 + round) % 41);
      for (const p of priorities) queue.add(`k${round}-${p}`, p);
      const out = await drain(queue);
      expect(out).toEqual([...priorities].sort((x, y) => y - x).map((p) => `k${round}-${p}`));
    }
  });
});

describe("WorkQueue: delays (addAfter)", () => {
  it("holds a delayed key until its time, then hands it out", () => {
    const { clock, queue } = setup();
    queue.addAfter("a", 1000);
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 0, waiting: 1 });
    clock.advance(999);
    expect(queue.length).toBe(0);
    clock.advance(1);
    expect(queue.counts()).toEqual({ queued: 1, dirty: 1, processing: 0, waiting: 0 });
  });

  it("uses one timer for any number of waiting keys", () => {
    const { clock, queue } = setup();
    for (let i = 0; i < 1000; i++) queue.addAfter(`k${i}`, 1 + ((i * 7919) % 5000));
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerAt()).toBe(1);
    clock.advance(5000);
    expect(queue.length).toBe(1000);
    expect(clock.pendingTimers).toBe(0);
  });

  it("lets an earlier addAfter of a waiting key win, and ignores a later one", () => {
    const { clock, queue } = setup();
    queue.addAfter("a", 500);
    queue.addAfter("a", 200);
    queue.addAfter("a", 900);
    expect(queue.counts().waiting).toBe(1);
    expect(clock.nextTimerAt()).toBe(200);
    clock.advance(200);
    expect(queue.length).toBe(1);
    clock.advance(1000);
    expect(queue.length).toBe(1);
  });

  it("makes a waiting key ready at once on add, and drops its timer", () => {
    const { clock, queue } = setup();
    queue.addAfter("a", 1_000_000);
    queue.add("a");
    expect(queue.counts()).toEqual({ queued: 1, dirty: 1, processing: 0, waiting: 0 });
    expect(clock.pendingTimers).toBe(0);
  });

  it("does not delay a queued key, nor schedule a second run of it", async () => {
    const { clock, queue } = setup();
    queue.add("a");
    queue.addAfter("a", 100);
    expect(queue.counts()).toEqual({ queued: 1, dirty: 1, processing: 0, waiting: 0 });
    expect(await drain(queue)).toEqual(["a"]);
    clock.advance(100);
    expect(queue.length).toBe(0);
  });

  it("runs a processing key once more when its delay ends, after done", async () => {
    const { clock, queue } = setup();
    queue.add("a");
    const a = await queue.get();
    queue.addAfter("a", 100);
    clock.advance(100);
    expect(queue.counts()).toEqual({ queued: 0, dirty: 1, processing: 1, waiting: 0 });
    queue.done(a as string);
    expect(queue.length).toBe(1);
  });

  it("adds at once when the delay is zero or negative", () => {
    const { clock, queue } = setup();
    queue.addAfter("a", 0);
    queue.addAfter("b", -5);
    expect(queue.length).toBe(2);
    expect(clock.pendingTimers).toBe(0);
  });

  it("rejects a delay that is not a finite number", () => {
    const { queue } = setup();
    expect(() => queue.addAfter("a", Number.NaN)).toThrow(RangeError);
    expect(() => queue.addAfter("a", Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });

  it("queues keys that fall due together by ready time, then in the order their time was set", async () => {
    const { clock, queue } = setup();
    queue.addAfter("c", 30);
    queue.addAfter("a", 10);
    queue.addAfter("b", 10);
    queue.addAfter("d", 50);
    queue.addAfter("d", 10); // moved earlier last: after a and b
    clock.advance(100);
    expect(await drain(queue)).toEqual(["a", "b", "d", "c"]);
  });

  it("queues a delayed key at its priority when it becomes ready, raised by later adds", async () => {
    const { clock, queue } = setup();
    queue.add("plain");
    queue.addAfter("delayed", 10, LOW_PRIORITY);
    queue.addAfter("delayed", 20, 5); // later time ignored, higher priority kept
    clock.advance(10);
    expect(await queue.getWithPriority()).toEqual({ key: "delayed", priority: 5 });
  });

  it("hands a key whose delay ended to a waiting worker", async () => {
    const { clock, queue } = setup();
    const waiter = pendingGet(queue);
    queue.addAfter("a", 10);
    clock.advance(10);
    await flush();
    expect(waiter).toEqual({ settled: true, value: "a" });
  });
});

describe("WorkQueue: rate limiting", () => {
  it("retries a failing key after 5 ms, 10 ms, 20 ms … and starts over after forget", () => {
    const { clock, queue } = setup();
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      queue.addRateLimited("a");
      delays.push((clock.nextTimerAt() as number) - clock.now());
      clock.advance(delays[i] as number);
      expect(queue.length).toBe(1);
      queue.add("b"); // unrelated traffic does not matter
      void queue.get(); // takes "a"
      queue.done("a");
      void queue.get(); // takes "b"
      queue.done("b");
    }
    expect(delays).toEqual([5, 10, 20, 40]);
    expect(queue.retries("a")).toBe(4);
    queue.forget("a");
    expect(queue.retries("a")).toBe(0);
    queue.addRateLimited("a");
    expect(clock.nextTimerAt()).toBe(clock.now() + 5);
  });

  it("uses the rate limiter it was given", () => {
    const clock = new FakeClock();
    const queue = new WorkQueue<string>({
      clock,
      rateLimiter: new FastSlowRateLimiter({ fastDelayMs: 1, slowDelayMs: 60_000, maxFastAttempts: 1 }),
    });
    queue.addRateLimited("a");
    expect(clock.nextTimerAt()).toBe(1);
    clock.advance(1);
    queue.addRateLimited("b");
    queue.addRateLimited("b");
    expect(queue.retries("b")).toBe(2);
    expect(clock.nextTimerAt()).toBe(2); // the first (fast) delay: the slow one asked for later
  });

  it("does not ask the rate limiter after shutdown", () => {
    const { queue } = setup();
    queue.shutDown();
    queue.addRateLimited("a");
    expect(queue.retries("a")).toBe(0);
  });
});

describe("WorkQueue: shutdown", () => {
  it("resolves pending gets with undefined, and every later get at once", async () => {
    const { queue } = setup();
    const w1 = pendingGet(queue);
    const w2 = queue.getWithPriority();
    queue.shutDown();
    await flush();
    expect(w1).toEqual({ settled: true, value: undefined });
    expect(await w2).toBeUndefined();
    expect(await queue.get()).toBeUndefined();
    expect(queue.shuttingDown).toBe(true);
  });

  it("stops handing out keys that are still queued", async () => {
    const { queue } = setup();
    queue.add("a");
    queue.shutDown();
    expect(await queue.get()).toBeUndefined();
  });

  it("ignores later adds and drops waiting keys and their timer", () => {
    const { clock, queue } = setup();
    queue.addAfter("a", 100);
    queue.shutDown();
    expect(clock.pendingTimers).toBe(0);
    queue.add("b");
    queue.addAfter("c", 10);
    clock.advance(1000);
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 0, waiting: 0 });
  });

  it("still accepts done for keys being processed", async () => {
    const { queue } = setup();
    queue.add("a");
    const a = await queue.get();
    queue.shutDown();
    queue.done(a as string);
    expect(queue.counts().processing).toBe(0);
  });

  it("shutDownWithDrain resolves once every key being processed is done", async () => {
    const { queue } = setup();
    queue.add("a");
    queue.add("b");
    const a = (await queue.get()) as string;
    const b = (await queue.get()) as string;
    let drained = false;
    const draining = queue.shutDownWithDrain().then(() => {
      drained = true;
    });
    queue.done(a);
    await flush();
    expect(drained).toBe(false);
    queue.done(b);
    await draining;
    expect(drained).toBe(true);
  });

  it("shutDownWithDrain resolves at once when nothing is processing, queued keys or not", async () => {
    const { queue } = setup();
    queue.add("a");
    await queue.shutDownWithDrain();
    expect(await queue.get()).toBeUndefined();
  });

  it("does not rerun a key that was added during processing while draining", async () => {
    const { queue } = setup();
    queue.add("a");
    const a = (await queue.get()) as string;
    queue.add("a");
    const draining = queue.shutDownWithDrain();
    queue.done(a);
    await draining;
    expect(await queue.get()).toBeUndefined();
  });

  it("stops waiting for a drain when shutDown is called (e.g. after a timeout)", async () => {
    const { queue } = setup();
    queue.add("a");
    await queue.get();
    const draining = queue.shutDownWithDrain();
    queue.shutDown();
    await draining; // resolves although "a" is not done
    expect(queue.counts().processing).toBe(1);
  });

  it("waits for processing keys on shutDownWithDrain even after shutDown", async () => {
    const { queue } = setup();
    queue.add("a");
    const a = (await queue.get()) as string;
    queue.shutDown();
    let drained = false;
    const draining = queue.shutDownWithDrain().then(() => {
      drained = true;
    });
    await flush();
    expect(drained).toBe(false);
    queue.done(a);
    await draining;
    expect(drained).toBe(true);
  });
});

describe("WorkQueue: readings", () => {
  it("reports how long ready keys have waited while no worker took any", async () => {
    const { clock, queue } = setup();
    queue.add("a");
    clock.advance(2000);
    expect(queue.stalledSeconds()).toBe(2); // nobody has taken a key since "a" became ready
    await queue.get(); // "a": now stuck
    queue.add("b");
    queue.addAfter("c", 60_000); // delayed keys are not waiting for a worker
    clock.advance(5000);
    expect(queue.stalledSeconds()).toBe(5);
    queue.add("a"); // dirty while processing: not a waiting key either
    expect(queue.stalledSeconds()).toBe(5);
    await queue.get(); // "b": a worker took a key, the clock restarts
    expect(queue.stalledSeconds()).toBe(0);
    clock.advance(1000);
    expect(queue.stalledSeconds()).toBe(0); // none is queued ("a" waits for its own done)
  });

  it("reports unfinished work and the longest-running key from the start times", async () => {
    const { clock, queue } = setup();
    expect(queue.unfinishedWorkSeconds()).toBe(0);
    expect(queue.longestRunningProcessorSeconds()).toBe(0);
    queue.add("a");
    queue.add("b");
    await queue.get();
    clock.advance(3000);
    await queue.get();
    clock.advance(1000);
    expect(queue.unfinishedWorkSeconds()).toBe(5); // 4 s + 1 s
    expect(queue.longestRunningProcessorSeconds()).toBe(4);
    queue.done("a");
    expect(queue.unfinishedWorkSeconds()).toBe(1);
    expect(queue.longestRunningProcessorSeconds()).toBe(1);
  });

  it("counts queued, dirty, processing and waiting keys apart", async () => {
    const { queue } = setup();
    queue.add("a");
    queue.add("b");
    queue.addAfter("c", 10);
    await queue.get(); // a
    queue.add("a");
    expect(queue.counts()).toEqual({ queued: 1, dirty: 2, processing: 1, waiting: 1 });
    expect(queue.length).toBe(1);
  });
});
