import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startManager, startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { ConfigMap, Lease } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { sleep } from "../util/index.js";
import { controller } from "./builder.js";
import { done } from "./result.js";

// Per-object timers and daemons on a real API server, run by a manager as a user runs them.

let plane: ControlPlane;
let client: Client;
const logger = pino({ level: process.env.TEST_LOG ?? "silent" });

beforeAll(async () => {
  ({ plane, client } = await startPlane());
});
afterAll(() => stopPlane(plane, client));

const namespace = namespaces(() => client, "tasks");
const configMap = (name: string, ns: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: ns },
  data: { v: "1" },
});

/** A daemon per object that records when it starts and why its signal aborted. */
function recordingDaemon() {
  const started: string[] = [];
  const aborted = new Map<string, string>();
  const daemon = async (cm: { metadata?: { name?: string } }, ctx: { signal: AbortSignal }) => {
    const name = cm.metadata?.name ?? "";
    started.push(name);
    await new Promise<void>((resolve) =>
      ctx.signal.addEventListener("abort", () => {
        aborted.set(name, String((ctx.signal.reason as Error).message));
        resolve();
      }),
    );
  };
  return { started, aborted, daemon };
}

describe("per-object timers", () => {
  it("fire for each live object, and stop for an object once it is deleted", async () => {
    const ns = await namespace();
    const fired = new Map<string, number>();
    const { manager, running } = await startManager(
      { client, logger },
      controller(ConfigMap)
        .named("timed")
        .inNamespace(ns)
        .timer(
          "100ms",
          (cm) => {
            const name = cm.metadata?.name ?? "";
            fired.set(name, (fired.get(name) ?? 0) + 1);
          },
          { initialDelay: 0 },
        )
        .reconcile(() => done()),
    );
    try {
      await client.create(configMap("a", ns));
      await client.create(configMap("b", ns));
      await until(
        () => (fired.get("a") ?? 0) >= 3 && (fired.get("b") ?? 0) >= 3,
        10_000,
        "both timers firing",
      );
      await client.delete(ConfigMap, "a", { namespace: ns });
      await sleep(300); // the delete event reaches the cache, a run under way ends
      const a = fired.get("a") ?? 0;
      const b = fired.get("b") ?? 0;
      await sleep(500);
      expect(fired.get("a")).toBe(a);
      expect(fired.get("b") ?? 0).toBeGreaterThan(b);
    } finally {
      await manager.stop();
      await running;
    }
  });
});

describe("per-object daemons", () => {
  it("get a signal that aborts when their object is deleted, and on shutdown for the rest", async () => {
    const ns = await namespace();
    const { started, aborted, daemon } = recordingDaemon();
    const { manager, running } = await startManager(
      { client, logger },
      controller(ConfigMap)
        .named("daemons")
        .inNamespace(ns)
        .daemon(daemon)
        .reconcile(() => done()),
    );
    await client.create(configMap("gone", ns));
    await client.create(configMap("kept", ns));
    await until(() => started.includes("gone") && started.includes("kept"), 10_000, "both daemons started");
    await client.delete(ConfigMap, "gone", { namespace: ns });
    await until(() => aborted.has("gone"), 10_000, "the deleted object's daemon aborted");
    expect(aborted.get("gone")).toMatch(/deleted/);
    expect(aborted.has("kept")).toBe(false);
    await manager.stop();
    await running;
    expect(aborted.get("kept")).toMatch(/controller is stopping/);
  });

  it("are restarted with backoff when they throw", async () => {
    const ns = await namespace();
    const starts: number[] = [];
    const { manager, running } = await startManager(
      { client, logger },
      controller(ConfigMap)
        .named("flaky")
        .inNamespace(ns)
        .daemon(
          async (_cm, ctx) => {
            starts.push(performance.now());
            if (starts.length < 3) throw new Error("the endpoint is down");
            await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
          },
          { backoff: "200ms" },
        )
        .reconcile(() => done()),
    );
    try {
      await client.create(configMap("flaky", ns));
      await until(() => starts.length >= 3, 10_000, "three starts");
      // 200 ms, then 400 ms (doubled), between the starts.
      expect((starts[1] as number) - (starts[0] as number)).toBeGreaterThanOrEqual(195);
      expect((starts[2] as number) - (starts[1] as number)).toBeGreaterThanOrEqual(395);
    } finally {
      await manager.stop();
      await running;
    }
    expect(starts).toHaveLength(3);
  });

  it("get a signal that aborts when the manager loses leadership", async () => {
    const ns = await namespace();
    const { started, aborted, daemon } = recordingDaemon();
    let lost: Error | undefined;
    const { manager, running } = await startManager(
      {
        client,
        logger,
        operatorNamespace: ns,
        leaderElection: {
          id: "tasks-leader",
          leaseDurationMs: 2_000,
          renewDeadlineMs: 1_500,
          retryPeriodMs: 200,
        },
        onLeadershipLost: (error) => {
          lost = error;
        },
      },
      controller(ConfigMap)
        .named("led")
        .inNamespace(ns)
        .daemon(daemon)
        .reconcile(() => done()),
    );
    try {
      await client.create(configMap("led", ns));
      await until(() => started.includes("led"), 10_000, "the daemon started on the leader");
      // Another replica takes the Lease: this one sees another holder at its next renewal.
      const now = new Date().toISOString().replace("Z", "000Z");
      await client.patch(
        Lease,
        "tasks-leader",
        { spec: { holderIdentity: "usurper", renewTime: now, acquireTime: now, leaseDurationSeconds: 60 } },
        { namespace: ns },
      );
      await until(() => aborted.has("led"), 10_000, "the daemon aborted on leadership loss");
      expect(lost).toBeDefined();
      expect(aborted.get("led")).toMatch(/leadership lost/);
    } finally {
      await manager.stop();
      await running;
    }
  });
});
