import type { Logger } from "pino";
import type { InformerView } from "../cache/index.js";
import { type Client, type KubeObject, objectKey, refOfKey } from "../client/index.js";
import { sleep } from "../util/index.js";
import { type Duration, parseDuration } from "./result.js";

/**
 * Per-object timers and daemons (kopf's `@timer` and `@daemon`): work that belongs to one live
 * object and lasts as long as it does. A reconcile is the right place for "make the world match";
 * these are for what is not: a health probe of an external endpoint every 30 s per object, a
 * connection held open per object, a log tailed per object.
 *
 * Where they run: on the replica that reconciles the object, and only while it does. They start
 * when the controller starts (on the leader, after the caches synced), for each object in its cache
 * (with a shard, those of this replica's shard), and stop:
 * - when the object is deleted, or leaves this replica's cache (moved to another shard);
 * - when the controller stops: shutdown, or leadership lost (the manager stops its controllers).
 * A daemon's `ctx.signal` aborts then, with the reason; a timer stops firing.
 *
 * Timers wait `initialDelay` (default: one interval), then run every `interval` after the previous
 * run ended (runs never overlap); with `idle`, a run happens only once the object has not changed
 * for that long (a run due earlier waits for the quiet). A throwing timer is logged and runs again
 * at its next interval. A daemon that throws is logged and restarted after a backoff (1 s, ×2, up
 * to 5 min, reset after it ran 5 min); one that returns is done for that object.
 *
 * These are not durable: a restart starts them over. Work that must survive one is a reconcile
 * returning `after(…)` with its state in status (see `nextRun`).
 */

/** What a timer or daemon gets besides the object. */
export interface ObjectTaskContext<T extends KubeObject> {
  /** Aborts when the object is deleted or leaves this replica, or the controller stops; `reason` says which. */
  readonly signal: AbortSignal;
  readonly name: string;
  readonly namespace: string | undefined;
  readonly logger: Logger;
  readonly client: Client;
  /** The object as the cache has it now; undefined once it is gone. */
  latest(): T | undefined;
}

/** A timer's or daemon's work on one object. */
export type ObjectTask<T extends KubeObject> = (object: T, ctx: ObjectTaskContext<T>) => Promise<void> | void;

/** When a per-object timer runs. */
export interface TimerOptions {
  /** Before the first run (default: one interval). */
  initialDelay?: Duration;
  /** Run only once the object has not changed for this long. */
  idle?: Duration;
}

/** A daemon's restart backoff after a throw. */
export interface DaemonOptions {
  /** The first wait (default 1 s); doubled on each throw in a row. */
  backoff?: Duration;
  /** The longest wait (default 5 min). */
  maxBackoff?: Duration;
}

/** What the builder records for one timer or daemon. */
export type ObjectTaskSpec<T extends KubeObject> =
  | { kind: "timer"; intervalMs: number; initialDelayMs: number; idleMs: number; task: ObjectTask<T> }
  | { kind: "daemon"; backoffMs: number; maxBackoffMs: number; task: ObjectTask<T> };

const DEFAULT_DAEMON_BACKOFF_MS = 1_000;
/** A daemon failing forever retries every 5 min: it is cheap to retry, and it is logged each time. */
const DEFAULT_DAEMON_MAX_BACKOFF_MS = 300_000;
/** A daemon that ran this long before throwing starts its backoff over. */
const DAEMON_HEALTHY_MS = 300_000;

function positive(duration: Duration | undefined, fallback: number, what: string, zeroOk = false): number {
  if (duration === undefined) return fallback;
  const ms = parseDuration(duration);
  if (!(ms > 0) && !(zeroOk && ms === 0))
    throw new RangeError(`${what} must be longer than 0, got ${String(duration)}`);
  return ms;
}

/** The spec of `.timer(interval, task, options)`, checked. */
export function timerSpec<T extends KubeObject>(
  interval: Duration,
  task: ObjectTask<T>,
  options: TimerOptions = {},
): ObjectTaskSpec<T> {
  const intervalMs = positive(interval, 0, "timer interval");
  return {
    kind: "timer",
    intervalMs,
    initialDelayMs: positive(options.initialDelay, intervalMs, "timer initialDelay", true),
    idleMs: positive(options.idle, 0, "timer idle"),
    task,
  };
}

/** The spec of `.daemon(task, options)`, checked. */
export function daemonSpec<T extends KubeObject>(
  task: ObjectTask<T>,
  options: DaemonOptions = {},
): ObjectTaskSpec<T> {
  return {
    kind: "daemon",
    backoffMs: positive(options.backoff, DEFAULT_DAEMON_BACKOFF_MS, "daemon backoff"),
    maxBackoffMs: positive(options.maxBackoff, DEFAULT_DAEMON_MAX_BACKOFF_MS, "daemon maxBackoff"),
    task,
  };
}

interface Running {
  abort: AbortController;
  changedAt: number;
  runs: Promise<void>[];
}

interface Deps<T extends KubeObject> {
  controller: string;
  specs: readonly ObjectTaskSpec<T>[];
  primary: InformerView<T>;
  /** The shard gate's `mayReconcile` (spec.ts `ControllerShard`): tasks run where reconciles do. */
  shard: { mayReconcile(key: string, cached: KubeObject | undefined): boolean } | undefined;
  client: Client;
  logger: Logger;
}

/** One controller's timers and daemons, per live object. */
export class ObjectTasks<T extends KubeObject> {
  private readonly running = new Map<string, Running>();
  private active = false;
  private readonly off: () => void;

  constructor(private readonly deps: Deps<T>) {
    this.off = deps.primary.on({
      added: (object) => this.add(object),
      updated: (_old, object) => {
        const key = objectKey(object);
        const entry = this.running.get(key);
        if (object.metadata?.deletionTimestamp) this.remove(key, "the object is being deleted");
        else if (entry) entry.changedAt = performance.now();
        else this.add(object);
      },
      deleted: (object) =>
        this.remove(objectKey(object), "the object was deleted or left this replica's cache"),
    });
  }

  /** Starts the tasks of every cached object; from now on, of every new one. */
  start(): void {
    this.active = true;
    for (const object of this.deps.primary.list()) this.add(object);
  }

  /** Aborts every task (`reason`: why) and waits for them to end, up to `graceMs`. */
  async stop(reason: string, graceMs: number): Promise<void> {
    this.active = false;
    this.off();
    const runs = [...this.running.keys()].flatMap((key) => this.remove(key, reason));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(runs), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
  }

  private add(object: T): void {
    if (!this.active || object.metadata?.deletionTimestamp) return;
    const key = objectKey(object);
    if (this.running.has(key) || (this.deps.shard && !this.deps.shard.mayReconcile(key, object))) return;
    const entry: Running = { abort: new AbortController(), changedAt: performance.now(), runs: [] };
    this.running.set(key, entry);
    const { namespace, name } = refOfKey(key);
    const logger = this.deps.logger.child({ controller: this.deps.controller, namespace, name });
    const ctx: ObjectTaskContext<T> = {
      signal: entry.abort.signal,
      name,
      namespace,
      logger,
      client: this.deps.client,
      latest: () => this.deps.primary.get({ namespace, name }),
    };
    for (const spec of this.deps.specs) {
      const run = spec.kind === "timer" ? this.timer(spec, entry, ctx) : this.daemon(spec, ctx);
      entry.runs.push(run.catch(() => {}));
    }
  }

  private remove(key: string, reason: string): Promise<void>[] {
    const entry = this.running.get(key);
    if (!entry) return [];
    this.running.delete(key);
    entry.abort.abort(new Error(reason));
    return entry.runs;
  }

  private async timer(
    spec: Extract<ObjectTaskSpec<T>, { kind: "timer" }>,
    entry: Running,
    ctx: ObjectTaskContext<T>,
  ): Promise<void> {
    await sleep(spec.initialDelayMs, ctx.signal);
    for (;;) {
      const quietFor = performance.now() - entry.changedAt;
      if (quietFor < spec.idleMs) {
        await sleep(spec.idleMs - quietFor, ctx.signal);
        continue;
      }
      const object = ctx.latest();
      if (object === undefined) return;
      try {
        await spec.task(object, ctx);
      } catch (error) {
        if (ctx.signal.aborted) return;
        ctx.logger.error({ err: error }, "timer failed; it runs again at its next interval");
      }
      await sleep(spec.intervalMs, ctx.signal);
    }
  }

  private async daemon(
    spec: Extract<ObjectTaskSpec<T>, { kind: "daemon" }>,
    ctx: ObjectTaskContext<T>,
  ): Promise<void> {
    let backoff = spec.backoffMs;
    for (;;) {
      const object = ctx.latest();
      if (object === undefined || ctx.signal.aborted) return;
      const startedAt = performance.now();
      try {
        await spec.task(object, ctx);
        return; // done for this object
      } catch (error) {
        if (ctx.signal.aborted) return;
        if (performance.now() - startedAt >= DAEMON_HEALTHY_MS) backoff = spec.backoffMs;
        ctx.logger.error({ err: error, backoffMs: backoff }, "daemon failed; restarting after a backoff");
        await sleep(backoff, ctx.signal);
        backoff = Math.min(backoff * 2, spec.maxBackoffMs);
      }
    }
  }
}
