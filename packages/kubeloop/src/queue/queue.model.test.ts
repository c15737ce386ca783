import { describe, expect, it } from "vitest";
import { seededRandom } from "../../test/random.js";
import { FakeClock } from "./clock.js";
import { LOW_PRIORITY, type QueueCounts, WorkQueue } from "./queue.js";
import { ExponentialRateLimiter } from "./rate-limiters.js";

/**
 * Random sequences of operations (add, addAfter with the fake clock moving, addRateLimited, forget,
 * get and done by concurrent workers, shutdown) run against the queue and against a reference model
 * written as plainly as possible from the rules in queue.ts. After every operation:
 *
 * - every worker's `get` settles exactly when the model hands it a key, with the same key and
 *   priority (so order, priority, dedupe and the dirty/processing rules all agree);
 * - the counts agree;
 * - checked without the model: no key is held by two workers, no key is both queued and held.
 *
 * With fairness, the keys fall in groups of different weights and the model's lines are rings of
 * groups (the rule in fair-line.ts); without, every key is in one group, which is plain FIFO. With
 * a group limit (`maxInFlight`), a group with that many keys held is passed over, and a worker
 * waits while only such groups have queued keys.
 *
 * At the end, with no more adds, the workers drain the queue (the clock jumps to each pending
 * delay) and every key must have been handed out after its last add.
 */

const KEYS = ["a", "b", "c", "d", "e", "f"];
const PRIORITIES = [0, 0, 0, LOW_PRIORITY, 7];
const WORKERS = 3;
const MAX_BACKOFF_MS = 200;

interface PendingRun {
  priority: number;
  waiting: boolean;
  readyAt: number;
  seq: number;
}
type Pick = { key: string; priority: number } | undefined;

/** How the model and the queue group keys: the queue's `fairness` option, or undefined for one group. */
interface Grouping {
  key(key: string): string;
  weight(group: string): number;
  maxInFlight?: number;
}

/** One priority's queued keys: a ring of groups, each a FIFO list (one group without fairness). */
class Ring {
  /** Groups with queued keys, front first. */
  readonly order: string[] = [];
  readonly keys = new Map<string, string[]>();
  /** Takes of each group since it last moved to the back (or joined). */
  readonly turns = new Map<string, number>();
  constructor(private readonly grouping: Grouping | undefined) {}

  get length(): number {
    return [...this.keys.values()].reduce((n, keys) => n + keys.length, 0);
  }

  push(key: string): void {
    const group = this.grouping?.key(key) ?? "";
    const keys = this.keys.get(group);
    if (keys !== undefined) keys.push(key);
    else {
      this.keys.set(group, [key]);
      this.order.push(group);
    }
  }

  remove(key: string): void {
    const group = this.grouping?.key(key) ?? "";
    const keys = this.keys.get(group) as string[];
    keys.splice(keys.indexOf(key), 1);
    if (keys.length === 0) this.leave(group);
  }

  /** The first key of the first group in ring order that is not `blocked`. */
  shift(blocked: (group: string) => boolean): string | undefined {
    const group = this.order.find((g) => !blocked(g));
    if (group === undefined) return undefined;
    const keys = this.keys.get(group) as string[];
    const key = keys.shift();
    if (keys.length === 0) this.leave(group);
    else {
      const turns = (this.turns.get(group) ?? 0) + 1;
      this.turns.set(group, turns);
      if (turns >= (this.grouping?.weight(group) ?? 1)) {
        this.turns.set(group, 0);
        this.order.splice(this.order.indexOf(group), 1);
        this.order.push(group);
      }
    }
    return key;
  }

  private leave(group: string): void {
    this.turns.delete(group);
    this.order.splice(this.order.indexOf(group), 1);
    this.keys.delete(group);
  }
}

/** The rules, one map or array per concept, no cleverness. */
class Model {
  constructor(private readonly grouping: Grouping | undefined) {}
  now = 0;
  shut = false;
  private seq = 0;
  readonly pending = new Map<string, PendingRun>();
  readonly processing = new Set<string>();
  /** A group with `maxInFlight` keys held is passed over. */
  private readonly blocked = (group: string): boolean =>
    this.grouping?.maxInFlight !== undefined &&
    [...this.processing].filter((key) => this.grouping?.key(key) === group).length >=
      this.grouping.maxInFlight;
  readonly lines = new Map<number, Ring>();
  readonly waiters: number[] = [];
  readonly failures = new Map<string, number>();
  /** What each worker's outstanding get resolves with, once the model decided. */
  readonly handoffs = new Map<number, Pick>();

  add(key: string, priority: number): void {
    if (this.shut) return;
    const run = this.pending.get(key);
    if (run === undefined) {
      this.pending.set(key, { priority, waiting: false, readyAt: this.now, seq: 0 });
      this.becameReady(key);
    } else if (run.waiting) {
      run.waiting = false;
      run.priority = Math.max(run.priority, priority);
      this.becameReady(key);
    } else if (priority > run.priority) {
      this.raise(key, run, priority);
    }
  }

  addAfter(key: string, ms: number, priority: number): void {
    if (this.shut) return;
    if (ms <= 0) {
      this.add(key, priority);
      return;
    }
    const readyAt = this.now + ms;
    const run = this.pending.get(key);
    if (run === undefined) {
      this.pending.set(key, { priority, waiting: true, readyAt, seq: this.seq++ });
    } else if (run.waiting) {
      run.priority = Math.max(run.priority, priority);
      if (readyAt < run.readyAt) {
        run.readyAt = readyAt;
        run.seq = this.seq++;
      }
    } else if (priority > run.priority) {
      this.raise(key, run, priority);
    }
  }

  addRateLimited(key: string, priority: number): void {
    if (this.shut) return;
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    this.addAfter(key, Math.min(5 * 2 ** n, MAX_BACKOFF_MS), priority);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      let next: [string, PendingRun] | undefined;
      for (const [key, run] of this.pending) {
        if (!run.waiting || run.readyAt > target) continue;
        if (
          next === undefined ||
          run.readyAt < next[1].readyAt ||
          (run.readyAt === next[1].readyAt && run.seq < next[1].seq)
        ) {
          next = [key, run];
        }
      }
      if (next === undefined) break;
      this.now = Math.max(this.now, next[1].readyAt);
      next[1].waiting = false;
      this.becameReady(next[0]);
    }
    this.now = target;
  }

  get(worker: number): void {
    if (this.shut) {
      this.handoffs.set(worker, undefined);
      return;
    }
    this.waiters.push(worker);
    this.serve();
  }

  done(key: string): void {
    this.processing.delete(key);
    const run = this.pending.get(key);
    if (run !== undefined && !run.waiting) this.enqueue(key);
    this.serve();
  }

  /** Waiting workers, first come first served, take what may be taken: highest priority first. */
  private serve(): void {
    while (this.waiters.length > 0) {
      let key: string | undefined;
      for (const priority of [...this.lines.keys()].sort((x, y) => y - x)) {
        key = this.lines.get(priority)?.shift(this.blocked);
        if (key !== undefined) break;
      }
      if (key === undefined) return;
      this.handoffs.set(this.waiters.shift() as number, { key, priority: this.start(key) });
    }
  }

  shutDown(): void {
    if (this.shut) return;
    this.shut = true;
    for (const [key, run] of this.pending) if (run.waiting) this.pending.delete(key);
    for (const worker of this.waiters.splice(0)) this.handoffs.set(worker, undefined);
  }

  counts(): QueueCounts {
    const runs = [...this.pending.values()];
    return {
      queued: [...this.lines.values()].reduce((n, ring) => n + ring.length, 0),
      dirty: runs.filter((run) => !run.waiting).length,
      processing: this.processing.size,
      waiting: runs.filter((run) => run.waiting).length,
    };
  }

  private raise(key: string, run: PendingRun, priority: number): void {
    if (!this.processing.has(key)) {
      this.line(run.priority).remove(key);
      this.line(priority).push(key);
    }
    run.priority = priority;
  }

  private becameReady(key: string): void {
    if (!this.processing.has(key)) this.enqueue(key);
  }

  private enqueue(key: string): void {
    this.line((this.pending.get(key) as PendingRun).priority).push(key);
    this.serve();
  }

  private start(key: string): number {
    const run = this.pending.get(key) as PendingRun;
    this.pending.delete(key);
    this.processing.add(key);
    return run.priority;
  }

  private line(priority: number): Ring {
    let line = this.lines.get(priority);
    if (line === undefined) {
      line = new Ring(this.grouping);
      this.lines.set(priority, line);
    }
    return line;
  }
}

interface Worker {
  id: number;
  holding?: string;
  /** An outstanding get: filled in when it settles. */
  asking?: { settled: boolean; value: Pick; withPriority: boolean };
  stopped: boolean;
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** One random run: the queue and the model side by side, with the workers that ask them. */
class Run {
  readonly rand: () => number;
  readonly clock = new FakeClock();
  readonly queue: WorkQueue<string>;
  readonly model: Model;
  readonly workers: Worker[] = Array.from({ length: WORKERS }, (_, id) => ({ id, stopped: false }));
  readonly lastAdd = new Map<string, number>();
  readonly lastStart = new Map<string, number>();
  step = 0;
  drained: { done: boolean } | undefined;
  log: string[] = [];

  constructor(
    readonly seed: number,
    grouping?: Grouping,
  ) {
    this.rand = seededRandom(seed);
    this.queue = new WorkQueue<string>({
      clock: this.clock,
      rateLimiter: new ExponentialRateLimiter({ baseDelayMs: 5, maxDelayMs: MAX_BACKOFF_MS }),
      ...(grouping ? { fairness: grouping } : {}),
    });
    this.model = new Model(grouping);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rand() * xs.length)] as T;
  }

  where(): string {
    return `seed ${this.seed}, step ${this.step}: ${this.log.slice(-12).join("; ")}`;
  }

  ask(worker: Worker): void {
    const withPriority = this.rand() < 0.5;
    const asking = { settled: false, value: undefined as Pick, withPriority };
    worker.asking = asking;
    const settle = (value: Pick) => {
      asking.settled = true;
      asking.value = value;
    };
    if (withPriority) void this.queue.getWithPriority().then(settle);
    else
      void this.queue
        .get()
        .then((key) => settle(key === undefined ? undefined : { key, priority: Number.NaN }));
    this.model.get(worker.id);
  }

  finish(worker: Worker): void {
    const key = worker.holding as string;
    worker.holding = undefined;
    this.queue.done(key);
    this.model.done(key);
  }

  /** After each step: every get the model decided has settled to the model's key, and the counts agree. */
  async check(): Promise<void> {
    await flush();
    for (const worker of this.workers) this.settle(worker);
    const counts = this.queue.counts();
    const where = this.where();
    expect(counts, where).toEqual(this.model.counts());
    // Without the model: queued keys are distinct and none is held; dirty ones are queued or held.
    const held = this.workers.filter((w) => w.holding !== undefined).length;
    expect(counts.processing, where).toBe(held);
    expect(counts.queued + counts.processing, where).toBeLessThanOrEqual(KEYS.length);
    expect(counts.dirty - counts.queued, where).toBeLessThanOrEqual(counts.processing);
    expect(this.queue.length).toBe(counts.queued);
  }

  private settle(worker: Worker): void {
    const asking = worker.asking;
    if (asking === undefined) return;
    const decided = this.model.handoffs.has(worker.id);
    expect(asking.settled, `worker ${worker.id} get settled? ${this.where()}`).toBe(decided);
    if (!decided) return;
    const expected = this.model.handoffs.get(worker.id);
    this.model.handoffs.delete(worker.id);
    worker.asking = undefined;
    if (expected === undefined) {
      expect(asking.value, this.where()).toBeUndefined();
      worker.stopped = true;
      return;
    }
    expect(asking.value?.key, this.where()).toBe(expected.key);
    if (asking.withPriority) expect(asking.value?.priority, this.where()).toBe(expected.priority);
    const key = expected.key;
    // Never two workers on one key.
    expect(
      this.workers.some((w) => w.holding === key),
      this.where(),
    ).toBe(false);
    worker.holding = key;
    this.lastStart.set(key, this.step);
  }

  shutDown(): void {
    if (this.rand() < 0.5) {
      this.log.push("shutDown");
      this.queue.shutDown();
    } else {
      this.log.push("shutDownWithDrain");
      const state = { done: false };
      this.drained = state;
      void this.queue.shutDownWithDrain().then(() => {
        state.done = true;
      });
    }
    this.model.shutDown();
  }

  /** One random operation, done to the queue and the model alike. */
  randomOp(): void {
    const roll = this.rand();
    const key = this.pick(KEYS);
    const priority = this.pick(PRIORITIES);
    const idle = this.workers.filter((w) => !w.stopped && w.holding === undefined && w.asking === undefined);
    const holding = this.workers.filter((w) => w.holding !== undefined);
    let op: string;
    if (roll < 0.2) op = "add";
    else if (roll < 0.34) op = "addAfter";
    else if (roll < 0.42) op = "addRateLimited";
    else if (roll < 0.46) op = "forget";
    else if (roll < 0.58) op = "advance";
    else if (roll < 0.79) op = idle.length > 0 ? "get" : "advance";
    else op = holding.length > 0 ? "done" : "add";
    this.apply(op, key, priority, idle, holding);
    if (ADD_OPS.includes(op) && !this.model.shut) this.lastAdd.set(key, this.step);
  }

  private apply(op: string, key: string, priority: number, idle: Worker[], holding: Worker[]): void {
    const { queue, model, log } = this;
    if (op === "add") {
      log.push(`add(${key},${priority})`);
      queue.add(key, priority);
      model.add(key, priority);
    } else if (op === "addAfter") {
      const ms = this.rand() < 0.1 ? 0 : 1 + Math.floor(this.rand() * 50);
      log.push(`addAfter(${key},${ms},${priority})`);
      queue.addAfter(key, ms, priority);
      model.addAfter(key, ms, priority);
    } else if (op === "addRateLimited") {
      log.push(`addRateLimited(${key},${priority})`);
      queue.addRateLimited(key, priority);
      model.addRateLimited(key, priority);
    } else if (op === "forget") {
      log.push(`forget(${key})`);
      queue.forget(key);
      model.forget(key);
    } else if (op === "advance") {
      const ms = Math.floor(this.rand() * 30);
      log.push(`advance(${ms})`);
      this.clock.advance(ms);
      model.advance(ms);
    } else if (op === "get") {
      const worker = this.pick(idle);
      log.push(`get#${worker.id}`);
      this.ask(worker);
    } else {
      const worker = this.pick(holding);
      log.push(`done#${worker.id}(${worker.holding})`);
      this.finish(worker);
    }
  }

  /** After shutdown nothing is handed out; once every held key is done, a drain has ended. */
  async afterShutdown(): Promise<void> {
    const { workers } = this;
    for (const worker of workers) if (worker.holding !== undefined) this.finish(worker);
    await this.check();
    for (const worker of workers) if (!worker.stopped && worker.asking === undefined) this.ask(worker);
    await this.check();
    expect(
      workers.every((w) => w.stopped),
      this.where(),
    ).toBe(true);
    if (this.drained !== undefined) expect(this.drained.done, this.where()).toBe(true);
  }

  /** No more adds: workers drain the queue, the clock jumping to each pending delay. */
  async drainToEmpty(): Promise<void> {
    const { workers, queue, model } = this;
    for (let rounds = 0; rounds < 1000; rounds++) {
      this.step++;
      for (const worker of workers) if (worker.holding !== undefined) this.finish(worker);
      for (const worker of workers) if (worker.asking === undefined) this.ask(worker);
      await this.check();
      const counts = queue.counts();
      if (
        counts.queued + counts.processing + counts.waiting === 0 &&
        workers.every((w) => w.holding === undefined)
      ) {
        break;
      }
      if (counts.queued === 0 && counts.processing === 0) {
        const ms = (this.clock.nextTimerAt() as number) - this.clock.now();
        this.clock.advance(ms);
        model.advance(ms);
        await this.check();
      }
    }
    expect(queue.counts(), this.where()).toEqual({ queued: 0, dirty: 0, processing: 0, waiting: 0 });
    // Every key was handed out after its last add.
    for (const [key, added] of this.lastAdd) {
      expect(
        this.lastStart.get(key) ?? -1,
        `${key} added at step ${added}; ${this.where()}`,
      ).toBeGreaterThanOrEqual(added);
    }
    // Shutting down releases the workers still waiting.
    queue.shutDown();
    model.shutDown();
    await this.check();
    expect(workers.every((w) => w.stopped)).toBe(true);
  }
}

const ADD_OPS = ["add", "addAfter", "addRateLimited"];

async function run(seed: number, steps: number, shutdownAt: number | undefined, grouping?: Grouping) {
  const r = new Run(seed, grouping);
  for (r.step = 0; r.step < steps; r.step++) {
    if (r.step === shutdownAt) {
      r.shutDown();
      await r.check();
      continue;
    }
    r.randomOp();
    await r.check();
    if (r.log.length > 100) r.log = r.log.slice(-20);
  }
  if (shutdownAt !== undefined) await r.afterShutdown();
  else await r.drainToEmpty();
}

describe("WorkQueue against a reference model (random operations, concurrent workers)", () => {
  it("agrees with the model and keeps its invariants over 60 random runs of 1500 operations", async () => {
    for (let seed = 1; seed <= 60; seed++) await run(seed, 1500, undefined);
  });

  it("agrees with the model when it shuts down, with or without drain, midway", async () => {
    for (let seed = 101; seed <= 140; seed++) await run(seed, 600, 300 + (seed % 7) * 20);
  });

  // Three groups: x (a, b, c), y (d, e; two takes per turn), z (f).
  const GROUPS: Grouping = {
    key: (key) => (key <= "c" ? "x" : key <= "e" ? "y" : "z"),
    weight: (group) => (group === "y" ? 2 : 1),
  };

  it("agrees with the model with fairness among weighted groups over 30 random runs", async () => {
    for (let seed = 201; seed <= 230; seed++) await run(seed, 1500, undefined, GROUPS);
  });

  it("agrees with the model with fairness when it shuts down midway", async () => {
    for (let seed = 301; seed <= 320; seed++) await run(seed, 600, 300 + (seed % 7) * 20, GROUPS);
  });

  // The same groups, none with more than one key held (three workers: one group never holds them all).
  const LIMITED: Grouping = { ...GROUPS, maxInFlight: 1 };

  it("agrees with the model with a group limit (maxInFlight) over 30 random runs", async () => {
    for (let seed = 401; seed <= 430; seed++) await run(seed, 1500, undefined, LIMITED);
  });

  it("agrees with the model with a group limit when it shuts down midway", async () => {
    for (let seed = 501; seed <= 520; seed++) await run(seed, 600, 300 + (seed % 7) * 20, LIMITED);
  });
});
