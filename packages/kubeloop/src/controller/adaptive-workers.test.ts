import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturingLogger, startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { ConfigMap } from "../k8s/index.js";
import { Manager } from "../manager/manager.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { adaptiveDefaults, decide, type LoadSample } from "./adaptive-workers.js";
import { controller } from "./builder.js";

const options = adaptiveDefaults({ min: 2, max: 20 });
const calm: LoadSample = { queued: 0, active: 0, waitMs: 0, throttled: 0, apiLatencyMs: 20 };

describe("decide (one tick of adaptive workers)", () => {
  it("grows by a quarter while keys wait longer than the target, the wait is not falling and the workers are busy", () => {
    const busy = { ...calm, queued: 300, active: 8, waitMs: 400 };
    expect(decide(8, busy, 300, 0, options)).toMatchObject({ limit: 10, reason: "grow" });
    expect(decide(2, busy, 300, 0, options)).toMatchObject({ limit: 3, reason: "grow" });
    expect(decide(19, { ...busy, active: 19 }, 300, 0, options).limit).toBe(20);
    expect(decide(20, { ...busy, active: 20 }, 300, 0, options).reason).toBe("hold"); // the cap
    expect(decide(8, { ...busy, waitMs: 200 }, 400, 0, options).reason).toBe("hold"); // falling: enough
    expect(decide(8, { ...busy, active: 3 }, 300, 0, options).reason).toBe("hold"); // workers idle: not the bottleneck
  });

  it("backs off on a 429 or high API latency, whatever the queue says, and names why", () => {
    const busy = { ...calm, queued: 300, active: 8, waitMs: 400 };
    expect(decide(8, { ...busy, throttled: 2 }, 300, 0, options)).toEqual({
      limit: 6,
      reason: "back-off",
      because: "the API server answered 429 2 times",
    });
    expect(decide(8, { ...busy, apiLatencyMs: 1500 }, 300, 0, options)).toMatchObject({
      limit: 6,
      because: "API latency p90 1500 ms > 1000 ms",
    });
    expect(decide(2, { ...busy, throttled: 1 }, 300, 0, options).limit).toBe(2); // the floor
  });

  it("shrinks after enough idle ticks, not before, and not below the floor", () => {
    expect(decide(12, calm, 0, 4, options).reason).toBe("hold");
    expect(decide(12, calm, 0, 5, options)).toMatchObject({ limit: 9, reason: "shrink" });
    expect(decide(2, calm, 0, 50, options).reason).toBe("hold");
  });

  it("rejects bounds that make no sense, naming them", () => {
    expect(() => adaptiveDefaults({ min: 0, max: 4 })).toThrow("min must be a whole number ≥ 1, got 0");
    expect(() => adaptiveDefaults({ min: 8, max: 4 })).toThrow("max must be a whole number ≥ min (8), got 4");
    expect(() => controller(ConfigMap).adaptiveConcurrency({ max: 0 })).toThrow(/max must be/);
  });
});

describe("adaptive workers on a real API server", () => {
  let plane: ControlPlane;
  let client: Client;
  beforeAll(async () => {
    ({ plane, client } = await startPlane());
  }, 120_000);
  afterAll(async () => {
    await stopPlane(plane, client);
  });

  it("grow under a burst and shrink back to the floor after it, logging each decision", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "burst" } });
    const { logger, lines } = capturingLogger<{ msg: string; decision?: string; to?: number }>();
    const reconciled = new Set<string>();
    const burst = controller(ConfigMap)
      .named("burst")
      .inNamespace("burst")
      .adaptiveConcurrency({ min: 1, max: 16, tickMs: 250, idleTicks: 4 })
      .reconcile(async (cm) => {
        await sleep(100); // a reconcile that waits on something: workers, not CPU, are the limit
        reconciled.add(cm.metadata?.name ?? "");
      });
    // The manager's own client (from the kubeconfig): its responses feed the API-pressure signal.
    const manager = new Manager({
      kubeconfig: plane.kubeconfigPath,
      logger,
      probes: false,
      metrics: false,
      handleSignals: false,
    }).add(burst);
    const running = manager.start();
    await manager.ready;
    expect(burst.concurrency).toBe(1);
    const names = Array.from({ length: 400 }, (_, i) => `cm-${i}`);
    let peak = 1;
    const watchPeak = setInterval(() => {
      peak = Math.max(peak, burst.concurrency);
    }, 50);
    await Promise.all(
      names.map((name) =>
        client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "burst" } }),
      ),
    );
    await until(() => reconciled.size === names.length, 120_000, "the burst to be reconciled");
    await until(() => burst.concurrency === 1, 60_000, "the workers to shrink back to 1");
    clearInterval(watchPeak);
    expect(peak).toBeGreaterThanOrEqual(4);
    const decisions = lines.filter((line) => line.decision);
    expect(
      decisions.some((line) => line.decision === "grow" && /queue wait \d+ ms > 100 ms/.test(line.msg)),
    ).toBe(true);
    expect(decisions.some((line) => line.decision === "shrink" && /idle for 4 ticks/.test(line.msg))).toBe(
      true,
    );
    expect(decisions.at(-1)?.to).toBe(1);
    await manager.stop();
    await running;
  }, 180_000);
});
