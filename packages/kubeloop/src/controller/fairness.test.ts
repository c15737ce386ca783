import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startPlane, stopPlane, until } from "../../test/helpers.js";
import { InformerRegistry } from "../cache/registry.js";
import type { Client } from "../client/client.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { sleep } from "../util/index.js";
import { controller } from "./builder.js";
import { done } from "./result.js";

// One API server for the file; each test stops its controller (`using`-style, in `finally`).
let plane: ControlPlane;
let client: Client;
let registry: InformerRegistry;
const logger = pino({ level: process.env.TEST_LOG ?? "silent" });
beforeAll(async () => {
  ({ plane, client } = await startPlane());
  registry = new InformerRegistry(client);
});
afterAll(() => registry?.stopAll().then(() => stopPlane(plane, client)));

const namespace = namespaces(() => client, "fair");

/**
 * A busy namespace with five ConfigMaps whose reconciles hang until released, and a quiet one
 * with one: whether the quiet one is reconciled while the busy ones hold the workers, and how many
 * busy reconciles ran at once.
 */
async function busyAndQuiet(spareWorkers: number) {
  const busy = await namespace();
  const quiet = await namespace();
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const seen = { quiet: false, busyActive: 0, busyPeak: 0, busyDone: 0 };
  const c = controller(ConfigMap)
    .named(`spare-${spareWorkers}`)
    .inNamespaces([busy, quiet])
    .concurrency(2)
    .fairness({ spareWorkers })
    .reconcile(async (cm) => {
      if (!cm.metadata?.name?.startsWith("cm-")) return done(); // the namespace's root CA
      if (cm.metadata.namespace === quiet) {
        seen.quiet = true;
        return done();
      }
      seen.busyPeak = Math.max(seen.busyPeak, ++seen.busyActive);
      await gate;
      seen.busyActive--;
      seen.busyDone++;
      return done();
    });
  c.prepare({ client, registry, logger });
  await Promise.all(c.allInformers.map((i) => i.synced));
  c.start();
  for (let i = 0; i < 5; i++)
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `cm-${i}`, namespace: busy },
    });
  await until(() => seen.busyActive === 2, 10_000, "two busy reconciles under way");
  await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm-q", namespace: quiet } });
  return { seen, release, workers: c.concurrency, stop: () => c.stop(1_000) };
}

describe("Controller fairness, spare workers", () => {
  it("reconciles a quiet namespace's change while a busy one holds `concurrency` workers", async () => {
    const { seen, release, workers, stop } = await busyAndQuiet(1);
    try {
      expect(workers).toBe(3); // concurrency 2 + 1 spare
      await until(() => seen.quiet, 10_000, "the quiet namespace's reconcile, on the spare worker");
      expect(seen.busyPeak).toBe(2); // the busy namespace never had the spare one
      release();
      await until(() => seen.busyDone === 5, 10_000, "every busy reconcile, after the release");
      expect(seen.busyPeak).toBe(2);
    } finally {
      release();
      await stop();
    }
  });

  it("without spare workers, the quiet change waits for a busy reconcile to end", async () => {
    const { seen, release, workers, stop } = await busyAndQuiet(0);
    try {
      expect(workers).toBe(2);
      await sleep(1_000);
      expect(seen.quiet).toBe(false); // both workers hang in the busy namespace
      release();
      await until(() => seen.quiet, 10_000, "the quiet namespace's reconcile, once a worker is free");
      await until(() => seen.busyDone === 5, 10_000, "every busy reconcile");
    } finally {
      release();
      await stop();
    }
  });

  it("refuses spareWorkers that are not a whole number ≥ 0, in the builder", () => {
    expect(() => controller(ConfigMap).fairness({ spareWorkers: -1 })).toThrow(
      /fairness spareWorkers must be a whole number ≥ 0, got -1/,
    );
    expect(() => controller(ConfigMap).fairness({ spareWorkers: 0.5 })).toThrow(/got 0.5/);
  });
});
