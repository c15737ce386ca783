import type { Logger } from "pino";

/**
 * A component the manager starts and stops with the rest (controller-runtime's `Runnable`). Give
 * it to `Manager.addRunnable(runnable, group)`.
 *
 * @example
 * ```ts
 * import { Manager, type Runnable } from "kubeloop/manager";
 *
 * let timer: NodeJS.Timeout | undefined;
 * const reporter: Runnable = {
 *   name: "usage-reporter",
 *   start: () => { timer = setInterval(() => {}, 60_000); },
 *   stop: () => clearInterval(timer),
 * };
 * new Manager().addRunnable(reporter, "leader"); // runs only while this replica leads
 * ```
 */
export interface Runnable {
  /** Named in logs, and in the shutdown's warnings when it is slow to stop. */
  readonly name: string;
  /** Starts it; the manager waits for this to resolve before it starts the next group. */
  start(): Promise<void> | void;
  /** Stops it; the manager waits for this before it stops the group before. */
  stop(): Promise<void> | void;
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

/** The manager's runnables, by group, started and stopped in the written order. */
export class RunnableGroups {
  private readonly groups = new Map<RunnableGroup, Runnable[]>(RUNNABLE_GROUPS.map((g) => [g, []]));
  private readonly started = new Set<Runnable>();

  constructor(private readonly logger: Logger) {}

  add(group: RunnableGroup, runnable: Runnable): void {
    const members = this.groups.get(group);
    if (!members)
      throw new TypeError(`Unknown runnable group "${group}": one of ${RUNNABLE_GROUPS.join(", ")}`);
    members.push(runnable);
  }

  /** The runnables of a group, in the order they were added. */
  of(group: RunnableGroup): readonly Runnable[] {
    return this.groups.get(group) ?? [];
  }

  /** Starts a group's runnables, one after the other. */
  async start(group: RunnableGroup): Promise<void> {
    for (const runnable of this.of(group)) {
      await runnable.start();
      this.started.add(runnable);
    }
  }

  /** Stops a group's started runnables (all at once), then forgets them: a group can start again. */
  async stop(group: RunnableGroup): Promise<void> {
    const started = this.of(group).filter((r) => this.started.has(r));
    for (const runnable of started) this.started.delete(runnable);
    await Promise.all(started.map((runnable) => this.stopOne(runnable)));
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
