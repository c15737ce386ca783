import pino from "pino";
import { afterEach, expect, it } from "vitest";
import { InformerRegistry } from "../src/cache/index.js";
import type { ObjectOf } from "../src/client/index.js";
import { controller, dependents } from "../src/controller/index.js";
import { ConfigMap } from "../src/k8s/index.js";
import { type Backend, Counter } from "./dependents-cases.js";
import { until } from "./helpers.js";

/**
 * Per-pass inputs and create-only children, on the two API servers of dependents-cases.ts: what a
 * reconcile computed before its children (a password read back, an elected instance) reaches the
 * desired functions, `when` and readiness; a create-only child (a Job's immutable template) is made
 * once and read afterwards, never re-applied.
 */
export function dependentsInputCases(backend: () => Backend): void {
  let stop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await stop?.();
    stop = undefined;
  });

  it("gives each pass's inputs to desired, when and readiness; a createOnly child is made once and not updated", async () => {
    const { client } = backend();
    const ns = await backend().namespace();
    const pass = { stamp: "1", ready: false, extra: false };
    const map = (c: ObjectOf<typeof Counter>, name: string, stamp?: string) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: c.metadata?.namespace ?? "" },
      ...(stamp ? { data: { stamp } } : {}),
    });
    const children = dependents<ObjectOf<typeof Counter>, typeof pass>(Counter)
      .child("stamped", ConfigMap, (c, _, inputs) => map(c, "stamped", inputs.stamp), {
        ready: (_, { primary, inputs }) => inputs.ready || `not yet for ${primary.metadata?.name}`,
      })
      .child("once", ConfigMap, (c, _, inputs) => map(c, "once", inputs.stamp), {
        dependsOn: ["stamped"],
        createOnly: true,
      })
      .child("extra", ConfigMap, (c) => map(c, "extra"), { when: (_, inputs) => inputs.extra });
    const c = controller(Counter)
      .named("inputs")
      .inNamespace(ns)
      .owns(ConfigMap)
      .reconcile(async (primary, ctx) => (await children.reconcile(primary, ctx, { ...pass })).result);
    const registry = new InformerRegistry(client);
    c.prepare({ client, registry, logger: pino({ level: "silent" }), events: { event: () => {} } });
    await Promise.all(c.allInformers.map((i) => i.synced));
    c.start();
    stop = async () => {
      await c.stop(1_000);
      await registry.stopAll();
    };
    const data = (name: string) =>
      client.get(ConfigMap, name, { namespace: ns }).then(
        (m) => m.data?.stamp,
        () => undefined,
      );
    const poke = (step: number) =>
      client.patch(Counter, "p", { spec: { step } }, { namespace: ns, type: "merge" });

    await client.create({
      apiVersion: Counter.apiVersion,
      kind: Counter.kind,
      metadata: { name: "p", namespace: ns },
    });
    await until(async () => (await data("stamped")) === "1", 20_000, "the stamped ConfigMap");
    await until(
      async () =>
        (await client.get(Counter, "p", { namespace: ns })).status?.conditions?.[0]?.message?.includes(
          "not yet for p",
        ) === true,
      20_000,
      "the readiness message, from the primary and the inputs",
    );
    expect(await data("once")).toBeUndefined();

    pass.ready = true;
    await poke(1);
    await until(async () => (await data("once")) === "1", 20_000, "the createOnly child made");
    pass.stamp = "2";
    pass.extra = true;
    await poke(2);
    await until(async () => (await data("stamped")) === "2", 20_000, "the stamped ConfigMap updated");
    await until(
      () =>
        client.get(ConfigMap, "extra", { namespace: ns }).then(
          () => true,
          () => false,
        ),
      20_000,
      "extra, wanted once the inputs say so",
    );
    // Made once: the pass's new stamp is not applied to it.
    expect(await data("once")).toBe("1");
  });
}
