import { describe, expect, it } from "vitest";
import { LOW_PRIORITY, WorkQueue } from "./queue.js";

const byNamespace = { key: (key: string) => key.slice(0, key.indexOf("/")) };

/** Takes `n` keys (each done at once), in the order the queue hands them out. */
async function drain(queue: WorkQueue<string>, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const key = (await queue.get()) as string;
    out.push(key);
    queue.done(key);
  }
  return out;
}

describe("WorkQueue fairness", () => {
  it("hands a quiet namespace's key out second, not behind a busy namespace's 1,000", async () => {
    const queue = new WorkQueue<string>({ fairness: byNamespace });
    for (let i = 0; i < 1000; i++) queue.add(`busy/w-${i}`);
    queue.add("quiet/a");
    queue.add("calm/b");
    expect(await drain(queue, 4)).toEqual(["busy/w-0", "quiet/a", "calm/b", "busy/w-1"]);
  });

  it("is FIFO without fairness (the default), and within one group", async () => {
    const fifo = new WorkQueue<string>();
    for (let i = 0; i < 3; i++) fifo.add(`busy/w-${i}`);
    fifo.add("quiet/a");
    expect(await drain(fifo, 4)).toEqual(["busy/w-0", "busy/w-1", "busy/w-2", "quiet/a"]);
    const fair = new WorkQueue<string>({ fairness: byNamespace });
    for (const key of ["a/3", "a/1", "a/2"]) fair.add(key);
    expect(await drain(fair, 3)).toEqual(["a/3", "a/1", "a/2"]);
  });

  it("gives a group `weight` keys in a row per turn", async () => {
    const queue = new WorkQueue<string>({
      fairness: { ...byNamespace, weight: (group) => (group === "gold" ? 3 : 1) },
    });
    for (let i = 0; i < 5; i++) queue.add(`gold/${i}`);
    for (let i = 0; i < 3; i++) queue.add(`tin/${i}`);
    expect(await drain(queue, 8)).toEqual([
      "gold/0",
      "gold/1",
      "gold/2",
      "tin/0",
      "gold/3",
      "gold/4",
      "tin/1",
      "tin/2",
    ]);
  });

  it("keeps priorities first: fairness applies within a priority", async () => {
    const queue = new WorkQueue<string>({ fairness: byNamespace });
    queue.add("a/listed", LOW_PRIORITY);
    queue.add("b/listed", LOW_PRIORITY);
    queue.add("a/fresh");
    queue.add("a/fresh2");
    expect(await drain(queue, 4)).toEqual(["a/fresh", "a/fresh2", "a/listed", "b/listed"]);
  });

  it("keeps a key raised to a higher priority out of its old group's turn", async () => {
    const queue = new WorkQueue<string>({ fairness: byNamespace });
    queue.add("a/1", LOW_PRIORITY);
    queue.add("b/1", LOW_PRIORITY);
    queue.add("a/1", 5); // raised: its low-priority entry is a tombstone, and group a is empty there
    expect(await drain(queue, 2)).toEqual(["a/1", "b/1"]);
    expect(queue.counts()).toEqual({ queued: 0, dirty: 0, processing: 0, waiting: 0 });
  });

  it("refuses a weight that is not a whole number ≥ 1, naming the group", () => {
    const queue = new WorkQueue<string>({ fairness: { ...byNamespace, weight: () => 0.5 } });
    expect(() => queue.add("team-a/x")).toThrow(
      /fairness weight of group "team-a" must be a whole number ≥ 1, got 0.5/,
    );
  });

  it("passes over a group at its maxInFlight, and hands its next key out when one is done", async () => {
    const queue = new WorkQueue<string>({ fairness: { ...byNamespace, maxInFlight: 2 } });
    for (let i = 0; i < 4; i++) queue.add(`busy/w-${i}`);
    expect([await queue.get(), await queue.get()]).toEqual(["busy/w-0", "busy/w-1"]);
    // busy is at its limit: a third worker waits though two busy keys are queued...
    let third: string | undefined;
    void queue.get().then((key) => {
      third = key;
    });
    await Promise.resolve();
    expect(third).toBeUndefined();
    expect(queue.counts()).toEqual({ queued: 2, dirty: 2, processing: 2, waiting: 0 });
    // ...and takes a quiet key at once, or the busy one's next when a busy key is done.
    queue.add("quiet/a");
    await Promise.resolve();
    expect(third).toBe("quiet/a");
    const fourth = queue.get();
    queue.done("busy/w-0");
    expect(await fourth).toBe("busy/w-2");
  });

  it("refuses a maxInFlight that is not a whole number ≥ 1", () => {
    expect(() => new WorkQueue<string>({ fairness: { ...byNamespace, maxInFlight: 0 } })).toThrow(
      /fairness maxInFlight must be a whole number ≥ 1, got 0/,
    );
  });
});
