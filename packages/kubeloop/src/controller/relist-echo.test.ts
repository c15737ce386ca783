import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startPlane, stopPlane, until } from "../../test/helpers.js";
import { InformerRegistry } from "../cache/registry.js";
import type { Client } from "../client/client.js";
import type { ObjectRef } from "../client/object-ref.js";
import { type KubeObject, resourceType } from "../client/types.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { controller } from "./builder.js";
import type { Controller } from "./controller.js";
import { done } from "./result.js";

/**
 * A lost update seen with leader election on a restarting API server: the new leader reconciled
 * from a cache that was behind (its watch was down), and its status write landed on top of a spec
 * change it had not seen. The relist then brought that spec change and the status write as one
 * update, at the resourceVersion the controller had written: it was taken for the echo of its own
 * write, and the spec change was never reconciled.
 */

interface CounterObject extends KubeObject {
  spec?: { step?: number };
  status?: { count?: number; observedGeneration?: number };
}
const Counter = resourceType<CounterObject>("test.kubeloop.dev/v1", "Counter");

let plane: ControlPlane;
let client: Client;
let registry: InformerRegistry;
const logger = pino({ level: process.env.TEST_LOG ?? "silent" });

beforeAll(async () => {
  ({ plane, client } = await startPlane({
    crds: [join(import.meta.dirname, "../../test/fixtures/controller/counters.yaml")],
  }));
  registry = new InformerRegistry(client);
});
afterAll(async () => {
  await registry?.stopAll();
  await stopPlane(plane, client);
});

const namespace = namespaces(() => client, "relist-echo");

/** A fresh namespace holding Counter `c` (spec.step 1). */
async function counterIn(): Promise<string> {
  const ns = await namespace();
  await client.create({
    apiVersion: Counter.apiVersion,
    kind: Counter.kind,
    metadata: { name: "c", namespace: ns },
    spec: { step: 1 },
  });
  return ns;
}

/** A source whose keys the test pushes, to reconcile a key while the primary's cache is behind. */
function pushSource(): {
  source: (signal: AbortSignal) => AsyncIterable<ObjectRef>;
  push(ref: ObjectRef): void;
} {
  const waiting: ObjectRef[] = [];
  let wake: (() => void) | undefined;
  return {
    push(ref) {
      waiting.push(ref);
      wake?.();
    },
    async *source(signal) {
      while (!signal.aborted) {
        const next = waiting.shift();
        if (next) yield next;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}

describe("Controller after a relist", () => {
  it("reconciles a spec change that a relist delivers together with its own status write", async () => {
    const ns = await counterIn();
    const seen: number[] = [];
    let written = 0;
    const trigger = pushSource();
    const c: Controller<CounterObject> = controller(Counter)
      .named("relist-echo")
      .inNamespace(ns)
      .source(trigger.source)
      .reconcile(async (counter, ctx) => {
        seen.push(counter.spec?.step ?? 0);
        await ctx.status({ count: counter.spec?.step ?? 0 });
        written++;
        return done();
      });
    c.prepare({ client, registry, logger });
    try {
      await Promise.all(c.allInformers.map((i) => i.synced));
      c.start();
      const server = () => client.get({ type: Counter, namespace: ns, name: "c" });
      await until(async () => (await server()).status?.observedGeneration === 1, 10_000, "first status");

      // The watch goes down (the API server restarts); meanwhile the spec changes (generation 2)...
      const [primary] = c.allInformers;
      await primary?.stop();
      await client.patch(Counter, "c", { spec: { step: 2 } }, { namespace: ns });
      // ...and the key is reconciled from the stale cache: its status write lands on generation 2.
      const before = written;
      trigger.push({ namespace: ns, name: "c" });
      await until(() => written > before, 10_000, "the reconcile from the stale cache");
      expect(seen.at(-1)).toBe(1);
      expect((await server()).metadata?.generation).toBe(2);

      // The watch comes back with a relist: the spec change must be reconciled.
      primary?.start();
      await until(
        async () => (await server()).status?.observedGeneration === 2,
        10_000,
        "the spec change reconciled after the relist",
      );
      expect(seen.at(-1)).toBe(2);
      expect((await server()).status?.count).toBe(2);
    } finally {
      await c.stop(1_000);
    }
  });
});

describe("Controller echo filtering", () => {
  it("delivers someone else's status-only change of the primary made while its reconcile writes status", async () => {
    const ns = await counterIn();
    const seen: (number | undefined)[] = [];
    let interposed = false;
    let c: Controller<CounterObject> | undefined;
    const cached = () => c?.allInformers[0]?.list().find((o) => o.metadata?.name === "c") as CounterObject;
    // The reconcile's first status write: before it reaches the API server, someone else changes
    // only the status, and the controller's cache hears of it while our write is under way.
    const interposing = new Proxy(client, {
      get(original, property) {
        if (property !== "patch") return Reflect.get(original, property, original);
        return async (...args: Parameters<Client["patch"]>) => {
          if (!interposed && args[3]?.subresource === "status") {
            interposed = true;
            await client.patch(
              Counter,
              "c",
              { status: { count: 42 } },
              { namespace: ns, subresource: "status" },
            );
            await until(
              () => cached()?.status?.count === 42,
              10_000,
              "the other writer's change in the cache",
            );
          }
          return original.patch(...args);
        };
      },
    });
    c = controller(Counter)
      .named("status-echo")
      .inNamespace(ns)
      .reconcile(async (counter, ctx) => {
        seen.push(counter.status?.count);
        await ctx.status({});
        return done();
      });
    c.prepare({ client: interposing, registry, logger });
    try {
      await Promise.all(c.allInformers.map((i) => i.synced));
      c.start();
      // Its status-only change is not our echo: it wakes the key, and a reconcile sees it.
      await until(() => seen.includes(42), 10_000, "a reconcile that sees the other writer's status");
      expect(seen[0]).toBeUndefined();
    } finally {
      await c.stop(1_000);
    }
  });
});
