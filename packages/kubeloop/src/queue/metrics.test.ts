import { describe, expect, it } from "vitest";
import { FakeClock } from "./clock.js";
import { type QueueMetrics, WORKQUEUE_METRIC_NAMES } from "./metrics.js";
import { LOW_PRIORITY, WorkQueue } from "./queue.js";

/** Records every hook call, and the depth per priority as a gauge would hold it. */
function recorder() {
  const calls: string[] = [];
  const depth = new Map<number, number>();
  const queueSeconds: number[] = [];
  const workSeconds: number[] = [];
  let adds = 0;
  let retries = 0;
  const metrics: QueueMetrics = {
    add: (priority) => {
      adds++;
      calls.push(`add(${priority})`);
    },
    depth: (priority, delta) => {
      depth.set(priority, (depth.get(priority) ?? 0) + delta);
      calls.push(`depth(${priority},${delta})`);
    },
    queueDuration: (seconds) => queueSeconds.push(seconds),
    workDuration: (seconds) => workSeconds.push(seconds),
    retry: () => {
      retries++;
    },
  };
  return {
    metrics,
    calls,
    depth,
    queueSeconds,
    workSeconds,
    get adds() {
      return adds;
    },
    get retries() {
      return retries;
    },
  };
}

function setup() {
  const clock = new FakeClock();
  const seen = recorder();
  const queue = new WorkQueue<string>({ clock, metrics: seen.metrics });
  return { clock, queue, seen };
}

describe("QueueMetrics hooks", () => {
  it("are named after client-go's workqueue metrics, so a metrics layer maps them 1:1", () => {
    expect(Object.values(WORKQUEUE_METRIC_NAMES).sort()).toEqual([
      "workqueue_adds_total",
      "workqueue_depth",
      "workqueue_longest_running_processor_seconds",
      "workqueue_queue_duration_seconds",
      "workqueue_retries_total",
      "workqueue_unfinished_work_seconds",
      "workqueue_work_duration_seconds",
    ]);
  });

  it("count an add once per run: duplicates that collapse are not counted (workqueue_adds_total)", async () => {
    const { queue, seen } = setup();
    queue.add("a");
    queue.add("a");
    queue.add("b");
    expect(seen.adds).toBe(2);
    const a = (await queue.get()) as string;
    queue.add("a"); // a new run while processing: counted
    queue.add("a");
    queue.done(a);
    expect(seen.adds).toBe(3);
  });

  it("count a delayed add when its delay ends, not when it is asked for", () => {
    const { clock, queue, seen } = setup();
    queue.addAfter("a", 100);
    queue.addAfter("a", 50);
    expect(seen.adds).toBe(0);
    clock.advance(50);
    expect(seen.adds).toBe(1);
  });

  it("move depth +1 when a key becomes ready and −1 when a worker gets it, per priority (workqueue_depth)", async () => {
    const { queue, seen } = setup();
    queue.add("a");
    queue.add("b", LOW_PRIORITY);
    queue.add("c", LOW_PRIORITY);
    expect(Object.fromEntries(seen.depth)).toEqual({ 0: 1, [LOW_PRIORITY]: 2 });
    queue.add("c"); // raised: moves from −100 to 0
    expect(Object.fromEntries(seen.depth)).toEqual({ 0: 2, [LOW_PRIORITY]: 1 });
    const a = (await queue.get()) as string;
    queue.add("a", 2); // dirty while processing: in the depth, like client-go's dirty set
    expect(Object.fromEntries(seen.depth)).toEqual({ 0: 1, 2: 1, [LOW_PRIORITY]: 1 });
    queue.done(a);
    while (queue.length > 0) queue.done((await queue.get()) as string);
    expect(Object.fromEntries(seen.depth)).toEqual({ 0: 0, 2: 0, [LOW_PRIORITY]: 0 });
  });

  it("leave keys in their delay out of the depth", () => {
    const { queue, seen } = setup();
    queue.addAfter("a", 100, 3);
    expect(seen.calls.filter((c) => c.startsWith("depth"))).toEqual([]);
  });

  it("time the queue from when a key became ready to get, and the work from get to done", async () => {
    const { clock, queue, seen } = setup();
    queue.add("a");
    clock.advance(1500);
    const a = (await queue.get()) as string;
    clock.advance(250);
    queue.done(a);
    queue.addAfter("b", 1000);
    clock.advance(1000); // ready now
    clock.advance(500);
    queue.done((await queue.get()) as string);
    expect(seen.queueSeconds).toEqual([1.5, 0.5]);
    expect(seen.workSeconds).toEqual([0.25, 0]);
  });

  it("time the queue from the add that made a key dirty while processing, not from its done", async () => {
    const { clock, queue, seen } = setup();
    queue.add("a");
    const a = (await queue.get()) as string;
    queue.add("a");
    clock.advance(2000);
    queue.done(a);
    await queue.get();
    expect(seen.queueSeconds).toEqual([0, 2]);
  });

  it("count every addAfter and addRateLimited as a retry, even with zero delay, like client-go (workqueue_retries_total)", () => {
    const { queue, seen } = setup();
    queue.add("a");
    queue.addAfter("b", 10);
    queue.addAfter("b", 5);
    queue.addAfter("c", 0);
    queue.addRateLimited("d");
    expect(seen.retries).toBe(4);
    queue.shutDown();
    queue.addAfter("e", 10);
    queue.addRateLimited("e");
    expect(seen.retries).toBe(4);
  });

  it("may be partial: a queue with only some hooks works", async () => {
    let work = 0;
    const queue = new WorkQueue<string>({ metrics: { workDuration: () => work++ } });
    queue.add("a");
    queue.add("a", 5);
    queue.done((await queue.get()) as string);
    expect(work).toBe(1);
  });
});
