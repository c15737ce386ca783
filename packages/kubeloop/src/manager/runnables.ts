import type { Logger } from "pino";

/**
 * A component the manager starts and stops with the rest (controller-runtime's `Runnable`). Give
 * it to `Manager.addRunnable(runnable, group)`, before or after `start()`: added to a group that
 * runs, it starts at once; to one that has not started yet (the `leader` group of a standby), when
 * that group starts; once the manager is stopping, `addRunnable` throws.
 *
 * A runnable that breaks after it started fails the whole manager through `context.fail(error)`
 * (so does a `start()` that rejects): the manager stops gracefully and `Manager.start()` rejects
 * with that error, so the process exits non-zero and its pod restarts (controller-runtime's
 * runnable returning an error from `Start`).
 *
 * @example
 * ```ts
 * import { Manager, type Runnable } from "kubeloop/manager";
 *
 * let timer: NodeJS.Timeout | undefined;
 * const reporter: Runnable = {
 *   name: "usage-reporter",
 *   start: ({ fail }) => {
 *     timer = setInterval(() => {
 *       if (!process.env.USAGE_ENDPOINT) fail(new Error("USAGE_ENDPOINT is gone: set it in the Deployment"));
 *     }, 60_000);
 *   },
 *   stop: () => clearInterval(timer),
 * };
 * new Manager().addRunnable(reporter, "leader"); // runs only while this replica leads
 * ```
 */
export interface Runnable {
  /** Named in logs, and in the shutdown's warnings when it is slow to stop. */
  readonly name: string;
  /**
   * Starts it; the manager waits for this to resolve before it starts the next group. Keep
   * `context` to report a failure later: it stops the manager with that error.
   */
  start(context: RunnableContext): Promise<void> | void;
  /** Stops it; the manager waits for this before it stops the group before. */
  stop(): Promise<void> | void;
}

/** What a runnable is handed when it starts. */
export interface RunnableContext {
  /**
   * Stops the manager because this runnable cannot go on: logged with the runnable's name, the
   * manager shuts down gracefully, and `Manager.start()` rejects with `error`. Only the first
   * failure counts; once the manager is stopping, a failure is only logged.
   */
  fail(error: Error): void;
}

/**
 * When a runnable runs. They start in this order, and stop in the reverse one:
 * - `servers`: the probe and metrics servers, listening first so the kubelet sees the process;
 * - `webhooks`: the webhook server, on every replica, before the caches (reading a kind through
 *   its conversion webhook needs it);
 * - `caches`: the informers, started and synced (warm also on standby replicas);
 * - `always`: components that run on every replica, once the caches have synced;
 * - `leader`: the controllers and leader-only components, once this replica leads (at once
 *   without leader election; sharded, once its shard Lease is held); stopped first, and at once
 *   when leadership is lost.
 */
export type RunnableGroup = "servers" | "webhooks" | "caches" | "always" | "leader";

/** The start order of the groups. */
export const RUNNABLE_GROUPS: readonly RunnableGroup[] = [
  "servers",
  "webhooks",
  "caches",
  "always",
  "leader",
];

/** How often a runnable that has not stopped is named in a warning. */
const STOP_WARNING_MS = 5_000;

/** Where a group is: not started (or stopped, and may start again), starting, or running. */
type GroupState = "idle" | "starting" | "running";

/**
 * The manager's runnables, by group, started and stopped in the written order. A runnable added to
 * a group that runs starts at once; one added to a group that is starting is started by that start;
 * once `close()`d (the manager is stopping) nothing may be added or started.
 */
export class RunnableGroups {
  private readonly groups = new Map<RunnableGroup, Runnable[]>(RUNNABLE_GROUPS.map((g) => [g, []]));
  private readonly states = new Map<RunnableGroup, GroupState>(RUNNABLE_GROUPS.map((g) => [g, "idle"]));
  private readonly started = new Set<Runnable>();
  private closed = false;

  constructor(
    private readonly logger: Logger,
    /** A runnable failed (its `fail`, or a late `start()` that rejected): the manager stops. */
    private readonly onFail: (runnable: string, error: Error) => void,
  ) {}

  add(group: RunnableGroup, runnable: Runnable): void {
    const members = this.groups.get(group);
    if (!members)
      throw new TypeError(`Unknown runnable group "${group}": one of ${RUNNABLE_GROUPS.join(", ")}`);
    if (this.closed)
      throw new Error(
        `Cannot add "${runnable.name}": the manager is stopping. Add runnables and controllers before it stops (or to a new Manager).`,
      );
    members.push(runnable);
    // A group that is starting reaches the new member in its own loop; a running one starts it now.
    if (this.states.get(group) === "running") {
      this.startOne(group, runnable).catch((error: unknown) => this.onFail(runnable.name, asError(error)));
    }
  }

  /** The runnables of a group, in the order they were added. */
  of(group: RunnableGroup): readonly Runnable[] {
    return this.groups.get(group) ?? [];
  }

  /** Starts a group's runnables, one after the other (also those added while it starts). */
  async start(group: RunnableGroup): Promise<void> {
    if (this.closed) return;
    this.states.set(group, "starting");
    // Indexed, not iterated over a copy: a runnable added meanwhile is started here too.
    const members = this.of(group);
    for (let i = 0; i < members.length && this.states.get(group) === "starting"; i++) {
      const runnable = members[i];
      if (runnable && !this.started.has(runnable)) await this.startOne(group, runnable);
    }
    if (this.states.get(group) === "starting") this.states.set(group, "running");
  }

  /** Stops a group's started runnables (all at once), then forgets them: a group can start again. */
  async stop(group: RunnableGroup): Promise<void> {
    this.states.set(group, "idle");
    const started = this.of(group).filter((r) => this.started.has(r));
    for (const runnable of started) this.started.delete(runnable);
    await Promise.all(started.map((runnable) => this.stopOne(runnable)));
  }

  /** The manager is stopping: from now on nothing is added or started. */
  close(): void {
    this.closed = true;
  }

  private async startOne(group: RunnableGroup, runnable: Runnable): Promise<void> {
    await runnable.start({ fail: (error) => this.onFail(runnable.name, error) });
    if (this.states.get(group) === "idle") {
      // Its group stopped while it started (leadership lost, shutdown): stop it too.
      await this.stopOne(runnable);
      return;
    }
    this.started.add(runnable);
  }

  private stopOne(runnable: Runnable): Promise<void> {
    return this.step(
      runnable.name,
      Promise.resolve().then(() => runnable.stop()),
    );
  }

  /**
   * Waits for one step of the shutdown; every 5 s it has not ended, a warning names it, so a
   * shutdown that hangs (and ends in the kubelet's SIGKILL) says what it was waiting for.
   */
  async step(name: string, done: Promise<unknown> | undefined): Promise<void> {
    if (!done) return;
    const started = performance.now();
    const timer = setInterval(() => {
      const seconds = Math.round((performance.now() - started) / 1000);
      this.logger.warn({ step: name, seconds }, "shutdown still waiting");
    }, STOP_WARNING_MS);
    try {
      await done;
    } finally {
      clearInterval(timer);
    }
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
