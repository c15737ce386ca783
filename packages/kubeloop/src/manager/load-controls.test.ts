import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startManager, startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { controller } from "../controller/builder.js";
import { done } from "../controller/result.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import type { Manager } from "./manager.js";

// The per-object cap and the informer size gauges, on a real API server, through a manager's
// /metrics as a user scrapes it.

let plane: ControlPlane;
let client: Client;
const logger = pino({ level: process.env.TEST_LOG ?? "silent" });

beforeAll(async () => {
  ({ plane, client } = await startPlane());
});
afterAll(() => stopPlane(plane, client));

const namespace = namespaces(() => client, "load");

/** The value of the one sample of `name` with `labels` in the manager's /metrics; undefined if none. */
async function metric(
  manager: Manager,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${manager.ports.metrics}/metrics`)).text();
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const labelText = line.slice(name.length + 1, line.indexOf("}"));
    if (wanted.every((pair) => labelText.split(",").includes(pair))) return Number(line.split(" ").at(-1));
  }
  return undefined;
}

describe("per-object reconcile cap", () => {
  it("reconciles one object at most twice a second however fast it changes, and the last change is not lost", async () => {
    const ns = await namespace();
    const starts: number[] = [];
    const seen: string[] = [];
    const { manager, running } = await startManager(
      { client, logger, metrics: { port: 0 } },
      controller(ConfigMap)
        .named("capped")
        .inNamespace(ns)
        .maxReconcilesPerObject(2, "1s")
        .reconcile((cm) => {
          starts.push(performance.now());
          seen.push(cm.data?.v ?? "");
          return done();
        }),
    );
    try {
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "busy", namespace: ns },
        data: { v: "0" },
      });
      // Changes as fast as the API server takes them (a child churning, say), for at least 1.5 s
      // and 40 changes: long enough to need a second window.
      const from = performance.now();
      let v = 0;
      while (v < 40 || performance.now() - from < 1_500) {
        v++;
        await client.patch(ConfigMap, "busy", { data: { v: String(v) } }, { namespace: ns });
      }
      const last = String(v);
      await until(() => seen.at(-1) === last, 20_000, "a reconcile that sees the last change");
      expect(starts.length).toBeGreaterThanOrEqual(3);
      // Any three consecutive starts span at least the window (less a few ms: the cap admits a
      // reconcile a moment before the reconciler records its start).
      for (let i = 2; i < starts.length; i++) {
        expect((starts[i] as number) - (starts[i - 2] as number), `starts ${i - 2}..${i}`).toBeGreaterThan(
          1_000 - 20,
        );
      }
      // The changes were merged into few reconciles, not replayed one by one.
      expect(starts.length).toBeLessThan(v);
      expect(
        await metric(manager, "kubeloop_reconcile_deferred_total", { controller: "capped" }),
      ).toBeGreaterThan(0);
    } finally {
      await manager.stop();
      await running;
    }
  });
});

describe("informer size gauges", () => {
  it("show each informer's objects and approximate bytes in /metrics, following the cache", async () => {
    const ns = await namespace();
    const { manager, running } = await startManager(
      { client, logger, metrics: { port: 0 } },
      controller(ConfigMap)
        .named("sized")
        .inNamespace(ns)
        .reconcile(() => done()),
    );
    const labels = { kind: "ConfigMap", namespace: ns };
    const objects = () => metric(manager, "kubeloop_informer_objects", labels);
    const bytes = async () => (await metric(manager, "kubeloop_informer_bytes", labels)) ?? 0;
    try {
      // Whatever the namespace held before (a bare API server creates nothing in it).
      const before = (await objects()) ?? 0;
      for (let i = 0; i < 20; i++) {
        await client.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `cm-${i}`, namespace: ns },
          data: { payload: "x".repeat(1_000) },
        });
      }
      await until(async () => (await objects()) === before + 20, 10_000, "20 more objects in the gauge");
      const twenty = await bytes();
      // 20 objects of ~1 KB of data each: between 20 KB and 60 KB with their metadata.
      expect(twenty).toBeGreaterThan(20_000);
      expect(twenty).toBeLessThan(60_000);
      for (let i = 0; i < 10; i++) await client.delete(ConfigMap, `cm-${i}`, { namespace: ns });
      await until(async () => (await objects()) === before + 10, 10_000, "10 fewer objects in the gauge");
      expect(await bytes()).toBeLessThan(twenty * 0.7);
    } finally {
      await manager.stop();
      await running;
    }
  });
});
