import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../client/types.js";
import { controller } from "../../controller/builder.js";
import { after, done, terminal } from "../../controller/result.js";
import { ConfigMap, Service } from "../../k8s/index.js";
import { ReconcileHarness } from "./harness.js";

// The harness's own promises: one reconcile per step in queue order, changes made between steps
// seen by the next one, fake time for after() and backoff, and a hot loop caught.

const cm = (
  name: string,
  data: Record<string, string> = {},
): KubeObject & { data: Record<string, string> } => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
  data,
});

describe("ReconcileHarness", () => {
  it("runs one reconcile per step, and a change made between steps is what the next one reads", async () => {
    const seen: string[] = [];
    const c = controller(ConfigMap)
      .named("reader")
      .reconcile((object) => {
        seen.push(`${object.metadata?.name}=${object.data?.v ?? ""}`);
        return done();
      });
    const h = await ReconcileHarness.start(c);
    await h.client.create(cm("a", { v: "1" }));
    await h.client.create(cm("b", { v: "1" }));
    expect(await h.reconcileNext()).toEqual({ key: "default/a", result: "success" });
    await h.client.patch(ConfigMap, "b", { data: { v: "2" } }, { namespace: "default" });
    expect(await h.reconcileNext()).toEqual({ key: "default/b", result: "success" });
    expect(await h.reconcileNext()).toBeUndefined();
    expect(seen).toEqual(["a=1", "b=2"]);
    await h.stop();
  });

  it("makes after() and retry backoff fall due only when the fake clock gets there", async () => {
    let failures = 0;
    const c = controller(ConfigMap)
      .named("timed")
      .reconcile((object) => {
        if (object.metadata?.name === "later") return after("10s");
        failures++;
        throw new Error("not yet");
      });
    const h = await ReconcileHarness.start(c);
    await h.client.create(cm("later"));
    await h.client.create(cm("failing"));
    expect(await h.reconcileUntilIdle()).toEqual([
      { key: "default/later", result: "requeue_after" },
      { key: "default/failing", result: "error" },
    ]);
    h.advance(5); // the first retry: 5 ms
    expect(await h.reconcileNext()).toEqual({ key: "default/failing", result: "error" });
    h.advance(9); // the second: 10 ms, not yet
    expect(await h.reconcileNext()).toBeUndefined();
    h.advance(1);
    expect(await h.reconcileNext()).toEqual({ key: "default/failing", result: "error" });
    h.advance(10_000);
    expect((await h.reconcileUntilIdle()).map((s) => s.key).sort()).toEqual([
      "default/failing",
      "default/later",
    ]);
    expect(failures).toBe(4);
    expect(h.events.filter((e) => e.type === "Warning").map((e) => e.note)).toContain("not yet");
    await h.stop();
  });

  it("reports a terminal error, and catches a controller that wakes itself forever", async () => {
    const c = controller(ConfigMap)
      .named("looping")
      .reconcile(async (object, ctx) => {
        if (object.metadata?.name === "broken") throw terminal(new Error("cannot"));
        // Writes a new value each time and asks for another turn at once (the echo of its own
        // write does not wake it, write-awareness.ts): it never settles.
        await ctx.client.patch(
          ConfigMap,
          object.metadata?.name ?? "",
          { data: { n: String(Number(object.data?.n ?? 0) + 1) } },
          { namespace: "default" },
        );
        return after(0);
      });
    const h = await ReconcileHarness.start(c);
    await h.client.create(cm("broken"));
    expect(await h.reconcileUntilIdle()).toEqual([{ key: "default/broken", result: "terminal" }]);
    await h.client.create(cm("loop"));
    await expect(h.reconcileUntilIdle(20)).rejects.toThrow(/still reconciling after 20 steps: default\/loop/);
    await h.stop();
  });

  it("refuses at once a controller that owns a kind the in-memory server does not emulate", async () => {
    const owner = controller(ConfigMap)
      .named("service-owner")
      .owns(Service)
      .reconcile(async () => done());
    await expect(ReconcileHarness.start(owner)).rejects.toThrow(
      /the controller watches Service \(v1\), which the in-memory API server does not emulate/,
    );
  });
});
