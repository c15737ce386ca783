import { join } from "node:path";
import type { ConfigMap as ConfigMapObject } from "kubernetes-types/core/v1.js";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startPlane, stopPlane, until } from "../../test/helpers.js";
import { InformerRegistry } from "../cache/registry.js";
import type { Client } from "../client/client.js";
import { ignoreNotFound } from "../client/errors.js";
import { type KubeObject, resourceType } from "../client/types.js";
import { ConfigMap, Secret } from "../k8s/index.js";
import { addFinalizer, hasFinalizer, setControllerReference } from "../resources/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { pollUntil, sleep } from "../util/index.js";
import { controller } from "./builder.js";
import type { Condition } from "./context.js";
import type { Controller, ControllerMetricsSink } from "./controller.js";
import { generationChanged } from "./predicates.js";
import { after, done, terminal } from "./result.js";

interface CounterObject extends KubeObject {
  spec?: { step?: number; fail?: string };
  status?: { count?: number; observedGeneration?: number; conditions?: Condition[] };
}
const Counter = resourceType<CounterObject>("test.kubeloop.dev/v1", "Counter");

let plane: ControlPlane;
let client: Client;
let registry: InformerRegistry;
const running: Controller<KubeObject>[] = [];
const logger = pino({ level: process.env.TEST_LOG ?? "silent" });

beforeAll(async () => {
  ({ plane, client } = await startPlane({
    crds: [join(import.meta.dirname, "../../test/fixtures/controller/counters.yaml")],
  }));
  registry = new InformerRegistry(client);
});
afterEach(async () => {
  for (const c of running.splice(0)) await c.stop(1_000);
});
afterAll(async () => {
  await registry?.stopAll();
  await stopPlane(plane, client);
});

const namespace = namespaces(() => client, "ctrl");

/** Prepares and starts a controller the way the manager does (informers synced first). */
async function run<T extends KubeObject>(
  c: Controller<T>,
  metrics?: ControllerMetricsSink,
): Promise<Controller<T>> {
  c.prepare({ client, registry, logger, ...(metrics ? { metrics } : {}) });
  await Promise.all(c.allInformers.map((i) => i.synced));
  c.start();
  running.push(c as unknown as Controller<KubeObject>);
  return c;
}

describe("Controller", () => {
  it("reconciles existing objects at start, then every new one, with the latest state from the cache", async () => {
    const ns = await namespace();
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "early", namespace: ns },
      data: { v: "1" },
    });
    const seen = new Map<string, string>();
    await run(
      controller(ConfigMap)
        .named("latest")
        .inNamespace(ns)
        .reconcile((cm) => {
          seen.set(cm.metadata?.name ?? "", cm.data?.v ?? "");
          return done();
        }),
    );
    await until(() => seen.get("early") === "1", 10_000, "the existing object");
    const late = await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "late", namespace: ns },
      data: { v: "1" },
    });
    await client.update({ ...late, data: { v: "2" } });
    await until(() => seen.get("late") === "2", 10_000, "the latest state of the new object");
  });

  it("never runs one key on two workers, and runs once more after changes made during a run", async () => {
    const ns = await namespace();
    const cm = await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "busy", namespace: ns },
      data: { v: "0" },
    });
    let active = 0;
    let maxActive = 0;
    const versions: string[] = [];
    await run(
      controller(ConfigMap)
        .named("exclusive")
        .inNamespace(ns)
        .concurrency(8)
        .reconcile(async (object) => {
          active++;
          maxActive = Math.max(maxActive, active);
          versions.push(object.data?.v ?? "");
          await sleep(150);
          active--;
          return done();
        }),
    );
    await until(() => versions.length >= 1, 10_000, "the first reconcile");
    for (let i = 1; i <= 10; i++)
      await client.patch(ConfigMap, "busy", { data: { v: String(i) } }, { namespace: ns });
    await until(() => versions.at(-1) === "10", 10_000, "a reconcile of the last state");
    await sleep(400);
    expect(maxActive).toBe(1);
    expect(versions.at(-1)).toBe("10");
    // Ten changes during a few runs collapse into far fewer reconciles (dedupe), never more.
    expect(versions.length).toBeLessThan(10);
    expect(cm.metadata.name).toBe("busy");
  });

  it("retries a failing reconcile with growing backoff, and stops after success", async () => {
    const ns = await namespace();
    await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "flaky", namespace: ns } });
    const attempts: number[] = [];
    await run(
      controller(ConfigMap)
        .named("flaky")
        .inNamespace(ns)
        .reconcile(() => {
          attempts.push(performance.now());
          if (attempts.length < 9) throw new Error("not yet");
          return done();
        }),
    );
    await until(() => attempts.length >= 9, 15_000, "nine attempts");
    await sleep(500);
    expect(attempts).toHaveLength(9);
    const gaps = attempts.slice(1).map((t, i) => t - (attempts[i] as number));
    // 5 ms × 2ⁿ: the last gap (~640 ms) is far longer than the first ones.
    expect(gaps.at(-1)).toBeGreaterThan(400);
    expect(gaps.at(-1)).toBeGreaterThan(4 * (gaps[2] as number));
  });

  it("does not retry a terminal error, and records it in the Ready condition", async () => {
    const ns = await namespace();
    await client.create({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Counter",
      metadata: { name: "bad", namespace: ns },
      spec: { fail: "yes" },
    });
    let attempts = 0;
    await run(
      controller(Counter)
        .named("terminal")
        .inNamespace(ns)
        .reconcile(() => {
          attempts++;
          throw terminal(new Error("spec.fail must not be set"), "InvalidSpec");
        }),
    );
    await until(async () => {
      const object = await client.get({ type: Counter, namespace: ns, name: "bad" });
      return (
        object.status?.conditions?.some((c) => c.type === "Ready" && c.reason === "InvalidSpec") ?? false
      );
    });
    const object = await client.get({ type: Counter, namespace: ns, name: "bad" });
    expect(object.status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "InvalidSpec",
      message: "spec.fail must not be set",
    });
    await sleep(700);
    // Its own status write does not wake it again.
    expect(attempts).toBe(1);
  });

  it("reads its own writes: increments from the cache are never lost", async () => {
    const ns = await namespace();
    await client.create({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Counter",
      metadata: { name: "c", namespace: ns },
      spec: {},
    });
    let runs = 0;
    await run(
      controller(Counter)
        .named("increment")
        .inNamespace(ns)
        .reconcile(async (object, ctx) => {
          const count = object.status?.count ?? 0;
          if (count >= 25) return done();
          runs++;
          await ctx.status({ count: count + 1 });
          return after(0);
        }),
    );
    await until(
      async () => (await client.get({ type: Counter, namespace: ns, name: "c" })).status?.count === 25,
      20_000,
      "25",
    );
    expect(runs).toBe(25);
  });

  it("reads its own writes through ctx.client: a finalizer, a create and a delete are in the cache at the next reconcile", async () => {
    const ns = await namespace();
    const names = Array.from({ length: 8 }, (_, i) => `own${i}`);
    for (const name of names) {
      await client.create({
        apiVersion: Counter.apiVersion,
        kind: "Counter",
        metadata: { name, namespace: ns },
        spec: {},
      });
    }
    const FINALIZER = "test.kubeloop.dev/own-writes";
    /** The last write of each key's reconciles, which its next reconcile must see in the cache. */
    const wrote = new Map<string, "finalizer" | "created" | "deleted">();
    const stale: string[] = [];
    const finished = new Set<string>();
    await run(
      controller(Counter)
        .named("own-writes")
        .inNamespace(ns)
        .owns(ConfigMap)
        .reconcile(async (object, ctx) => {
          if (ctx.deleted || finished.has(ctx.name)) return done();
          const childName = `${ctx.name}-child`;
          const child = ctx.cache.get({ type: ConfigMap, namespace: ns, name: childName });
          switch (wrote.get(ctx.name)) {
            case undefined:
              await addFinalizer(ctx.client, object, FINALIZER);
              wrote.set(ctx.name, "finalizer");
              return after(0);
            case "finalizer":
              if (!hasFinalizer(object, FINALIZER)) stale.push(`${ctx.name}: its finalizer`);
              await ctx.client.create(
                setControllerReference(
                  { apiVersion: "v1", kind: "ConfigMap", metadata: { name: childName, namespace: ns } },
                  object,
                ),
              );
              wrote.set(ctx.name, "created");
              return after(0);
            case "created":
              if (!child) stale.push(`${ctx.name}: the ConfigMap it created`);
              await ctx.client.delete(ConfigMap, childName, { namespace: ns });
              wrote.set(ctx.name, "deleted");
              return after(0);
            case "deleted":
              if (child) stale.push(`${ctx.name}: the ConfigMap it deleted`);
              finished.add(ctx.name);
              return done();
          }
        }),
    );
    await until(() => finished.size === names.length, 20_000, "every object through its three writes");
    expect(stale).toEqual([]);
  });

  it("reconciles an owner when its children change, and tells a reconcile when its object is deleted", async () => {
    const ns = await namespace();
    await client.create({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Counter",
      metadata: { name: "parent", namespace: ns },
      spec: {},
    });
    const deletedSeen: string[] = [];
    await run(
      controller(Counter)
        .named("parent")
        .inNamespace(ns)
        .owns(ConfigMap)
        .reconcile(async (object, ctx) => {
          if (ctx.deleted) {
            deletedSeen.push(object.metadata?.name ?? "");
            return done();
          }
          await ctx.apply({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: `${object.metadata?.name}-child`, namespace: ns },
            data: { owner: object.metadata?.name ?? "" },
          } as ConfigMapObject);
          return done();
        }),
    );
    const child = async () =>
      client.get({ type: ConfigMap, namespace: ns, name: "parent-child" }).catch(ignoreNotFound);
    await until(async () => (await child()) !== undefined, 10_000, "the child");
    const created = (await child()) as ConfigMapObject;
    expect(created.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "Counter",
      name: "parent",
      controller: true,
    });
    await client.delete(ConfigMap, "parent-child", { namespace: ns });
    await until(
      async () => {
        const again = await child();
        return again !== undefined && again.metadata?.uid !== created.metadata?.uid;
      },
      10_000,
      "the child to be recreated",
    );
    await client.delete(Counter, "parent", { namespace: ns });
    await until(() => deletedSeen.includes("parent"), 10_000, "the deleted reconcile");
  });

  it("filters primary changes with predicates", async () => {
    const ns = await namespace();
    const created = await client.create({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Counter",
      metadata: { name: "p", namespace: ns },
      spec: { step: 1 },
    });
    const generations: number[] = [];
    await run(
      controller(Counter)
        .named("generation")
        .inNamespace(ns)
        .withPredicates(generationChanged())
        .reconcile((object) => {
          generations.push(object.metadata?.generation ?? 0);
          return done();
        }),
    );
    await until(() => generations.length === 1, 10_000, "the first reconcile");
    await client.patch(Counter, "p", { metadata: { labels: { touched: "yes" } } }, { namespace: ns });
    await client.patch(Counter, "p", { status: { count: 5 } }, { namespace: ns, subresource: "status" });
    await client.patch(Counter, "p", { spec: { step: 2 } }, { namespace: ns });
    await until(() => generations.length >= 2, 10_000, "the spec change");
    await sleep(300);
    expect(generations).toEqual([created.metadata.generation, (created.metadata.generation ?? 0) + 1]);
  });

  it("survives a reconciler that throws on one key while others proceed", async () => {
    const ns = await namespace();
    for (const name of ["good-1", "poison", "good-2"]) {
      await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns } });
    }
    const ok = new Set<string>();
    await run(
      controller(ConfigMap)
        .named("poison")
        .inNamespace(ns)
        .reconcile((cm) => {
          if (cm.metadata?.name === "poison") throw new TypeError("boom");
          ok.add(cm.metadata?.name ?? "");
          return done();
        }),
    );
    await until(() => ok.has("good-1") && ok.has("good-2"), 10_000, "the good keys");
  });

  it("counts a programming error as a panic and an error, and a thrown Error as an error only", async () => {
    const ns = await namespace();
    for (const name of ["bug", "failure"]) {
      await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns } });
    }
    const counted = countingMetrics();
    await run(
      controller(ConfigMap)
        .named("panics")
        .inNamespace(ns)
        .reconcile((cm) => {
          // The bug: this ConfigMap has no data, so reading a key of it throws a TypeError.
          if (cm.metadata?.name === "bug") return (cm.data as Record<string, string>).mode ? done() : done();
          throw new Error("the database is down");
        }),
      counted.sink,
    );
    await until(() => counted.errors >= 4 && counted.panics >= 1, 10_000, "errors of both keys");
    // Both keys fail and retry; only the bug's failures are panics.
    expect(counted.panics).toBeGreaterThanOrEqual(1);
    expect(counted.panics).toBeLessThan(counted.errors);
    expect(counted.timeouts).toBe(0);
  });

  it("aborts ctx.signal past reconcileTimeout, counts a timeout, and says so in the Ready condition", async () => {
    const ns = await namespace();
    await client.create({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Counter",
      metadata: { name: "slow", namespace: ns },
    });
    const counted = countingMetrics();
    let aborted: unknown;
    await run(
      controller(Counter)
        .named("timeouts")
        .inNamespace(ns)
        .reconcileTimeout("200ms")
        .reconcile(async (_counter, ctx) => {
          try {
            await sleep(30_000, ctx.signal);
          } catch (error) {
            aborted = error;
            throw error;
          }
          return done();
        }),
      counted.sink,
    );
    await until(() => counted.timeouts >= 1, 10_000, "a timed-out reconcile");
    expect(String((aborted as Error).message)).toContain("reconcileTimeout");
    expect(counted.panics).toBe(0);
    const ready = await pollUntil(
      async () =>
        (await client.get({ type: Counter, namespace: ns, name: "slow" })).status?.conditions?.find(
          (c) => c.type === "Ready" && c.reason === "ReconcileTimeout",
        ),
      { timeoutMs: 10_000, message: "the ReconcileTimeout condition" },
    );
    expect(ready.status).toBe("False");
    expect(ready.message).toContain("200 ms");
  });

  it("reconciles on a timer source", async () => {
    const ns = await namespace();
    await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ticked", namespace: ns } });
    let reconciles = 0;
    await run(
      controller(ConfigMap)
        .named("timer")
        .inNamespace(ns)
        .every("100ms", () => [{ namespace: ns, name: "ticked" }])
        .reconcile(() => {
          reconciles++;
          return done();
        }),
    );
    await until(() => reconciles >= 4, 10_000, "timer reconciles");
  });
  it("is not woken by the echo of its own apply to a metadata-only owned child", async () => {
    const ns = await namespace();
    let runs = 0;
    await run(
      controller(ConfigMap)
        .named("metadata-echo")
        .inNamespace(ns)
        .owns(Secret, { metadataOnly: true })
        .reconcile(async (cm, ctx) => {
          runs++;
          // A different Secret each run: only recognising the echo as ours stops the loop.
          await ctx.apply({
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: cm.metadata?.name ?? "", namespace: ns },
            stringData: { run: String(runs) },
          });
          return done();
        }),
    );
    await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "owner", namespace: ns } });
    await sleep(2_000);
    // The ConfigMap's creation and the Secret's (an `added` event always wakes the owner); an echo
    // that outruns the apply's response is held until the response names its version, so a loaded
    // machine does not turn each apply into the next reconcile's trigger.
    expect(runs).toBeLessThanOrEqual(3);
  });
});

/** A metrics sink that counts what the controller reports. */
function countingMetrics() {
  const counted = {
    errors: 0,
    panics: 0,
    timeouts: 0,
    sink: undefined as unknown as ControllerMetricsSink,
  };
  counted.sink = {
    queue: {},
    reconciled: (result) => {
      if (result === "error") counted.errors++;
    },
    panicked: () => {
      counted.panics++;
    },
    timedOut: () => {
      counted.timeouts++;
    },
    activeWorkers: () => undefined,
    maxConcurrent: () => undefined,
  };
  return counted;
}
