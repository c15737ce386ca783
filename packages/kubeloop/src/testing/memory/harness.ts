import pino from "pino";
import { InformerRegistry } from "../../cache/index.js";
import type { Client, KubeObject } from "../../client/index.js";
import type { EventSink } from "../../controller/index.js";
import { Controller } from "../../controller/index.js";
import { FakeClock } from "../../queue/index.js";
import { MemoryApiServer, type MemoryApiServerOptions } from "./server.js";

/** An event a reconcile recorded (`ctx.event`, or a failure's Warning). */
export interface RecordedEvent {
  regarding: { kind?: string | undefined; namespace?: string | undefined; name?: string | undefined };
  type: "Normal" | "Warning";
  reason: string;
  action: string;
  note?: string | undefined;
}

/** What one reconcile did: its key and how it ended. */
export interface ReconcileStep {
  /** `namespace/name` (or `name` for a cluster-scoped object). */
  key: string;
  result: "success" | "error" | "requeue_after" | "terminal" | "skipped";
}

/**
 * The controller's logger: silent, and writing nowhere (a pino logger per harness on stdout would
 * open a stream and fsync it, which costs more than a whole reconcile test).
 */
const SILENT = pino({ level: "silent" }, { write: () => undefined });

/** The server a {@link ReconcileHarness} runs against: one you made, or the options of a new one. */
export interface ReconcileHarnessOptions extends MemoryApiServerOptions {
  /** The server to run against (default: a new one with these options). */
  server?: MemoryApiServer;
}

/**
 * Runs a controller against a {@link MemoryApiServer} one step at a time, with no workers and a
 * fake clock: `settle()` lets the informers see every change, `reconcileNext()` runs one reconcile
 * of the next ready key, `advance(ms)` moves time so `after(…)` requeues and backoffs fall due.
 * The controller is the real one (its queue, cache, expectations, status and event handling); only
 * the scheduling is in the test's hands, so interleavings are deterministic.
 *
 * @example
 * ```ts
 * import { ReconcileHarness } from "kubeloop/testing";
 * import { nginxController } from "../src/nginx.ts";
 * import { Nginx } from "../src/resources.ts";
 *
 * const h = await ReconcileHarness.start(nginxController, { resources: [Nginx] });
 * await h.client.create({ apiVersion: Nginx.apiVersion, kind: "Nginx", metadata: { name: "web", namespace: "default" }, spec: {} });
 * await h.reconcileUntilIdle();
 * const deployment = await h.client.get({ type: Deployment, namespace: "default", name: "web" });
 * await h.stop();
 * ```
 */
export class ReconcileHarness<T extends KubeObject> {
  /** Every event the controller recorded, in order: assert on reasons without reading Events back. */
  readonly events: RecordedEvent[] = [];

  private constructor(
    /** The server the controller runs against: seed objects, add webhooks, or break it. */
    readonly server: MemoryApiServer,
    /** An admin client of that server, for the test's own reads and writes. */
    readonly client: Client,
    /** The controller's clock: {@link ReconcileHarness.advance} moves it. */
    readonly clock: FakeClock,
    /** The harness's copy of the controller. */
    readonly controller: Controller<T>,
    private readonly registry: InformerRegistry,
  ) {}

  /** Prepares a copy of `controller` (its spec, with the harness's clock) against the server and waits for its caches. */
  static async start<T extends KubeObject>(
    controller: Controller<T>,
    options: ReconcileHarnessOptions = {},
  ): Promise<ReconcileHarness<T>> {
    const server = options.server ?? new MemoryApiServer(options);
    const client = server.client();
    const clock = new FakeClock(Date.parse("2030-01-01T00:00:00Z"));
    const copy = new Controller<T>({ ...controller.spec, clock });
    const registry = new InformerRegistry(client);
    let harness: ReconcileHarness<T> | undefined;
    const events: EventSink = {
      event: (regarding, event) =>
        harness?.events.push({
          regarding: {
            kind: regarding.kind,
            namespace: regarding.metadata?.namespace,
            name: regarding.metadata?.name,
          },
          ...event,
        }),
    };
    copy.prepare({ client, registry, logger: SILENT, events });
    harness = new ReconcileHarness(server, client, clock, copy, registry);
    try {
      await refuseNotEmulated(client, registry);
    } catch (error) {
      await registry.stopAll();
      throw error;
    }
    await registry.waitForSync();
    await harness.settle();
    return harness;
  }

  /** Lets the informers see every change the server has made so far (and queue the keys they map to). */
  settle(): Promise<void> {
    return this.server.settled();
  }

  /** Settles, then runs one reconcile of the next ready key; undefined when no key is ready. */
  async reconcileNext(): Promise<ReconcileStep | undefined> {
    await this.settle();
    const outcome = await this.controller.reconcileNext();
    return outcome && { key: outcome.key, result: outcome.result };
  }

  /** Reconciles until no key is ready (after settling each time); throws past `max` steps (a hot loop). */
  async reconcileUntilIdle(max = 100): Promise<ReconcileStep[]> {
    const steps: ReconcileStep[] = [];
    for (let step = await this.reconcileNext(); step; step = await this.reconcileNext()) {
      steps.push(step);
      if (steps.length > max)
        throw new Error(
          `reconcileUntilIdle: still reconciling after ${max} steps: ${steps
            .slice(-5)
            .map((s) => s.key)
            .join(", ")}…`,
        );
    }
    return steps;
  }

  /** Moves the fake clock forward: `after(…)` requeues and retry backoffs that fall due become ready. */
  advance(ms: number): void {
    this.clock.advance(ms);
  }

  /** Stops the controller's informers. */
  async stop(): Promise<void> {
    await this.controller.stop(0);
    await this.registry.stopAll();
  }
}

/**
 * Fails at once, naming the kind, when the controller watches a kind the in-memory server refuses
 * to emulate (a Service, say): its informer would otherwise retry the list for ever.
 */
async function refuseNotEmulated(client: Client, registry: InformerRegistry): Promise<void> {
  for (const informer of registry.informers) {
    try {
      await client.list(informer.type, { limit: 1 });
    } catch (error) {
      const message = (error as Error).message;
      if (!/not emulated/.test(message)) continue;
      throw new Error(
        `ReconcileHarness: the controller watches ${informer.type.kind} (${informer.type.apiVersion}), which the in-memory ` +
          `API server does not emulate (${message}). Test this controller on a real API server (ControlPlane), or ` +
          "move the part that owns or watches it into a controller of its own.",
      );
    }
  }
}
