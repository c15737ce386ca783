import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturingLogger, readyz, startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import type { KubeObject } from "../client/types.js";
import { controller } from "../controller/builder.js";
import { done } from "../controller/result.js";
import { ConfigMap, CustomResourceDefinition } from "../k8s/index.js";
import { defineResource } from "../resources/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { Manager } from "./manager.js";

// A controller that follows its CRD on a real API server: the manager starts and is Ready without
// the CRD; the controller starts when it is created, stops when it is deleted, starts again when it
// comes back; the manager stays Ready throughout, and no process restarts.

const Gadget = defineResource({
  group: "follow.kubeloop.dev",
  version: "v1",
  kind: "Gadget",
  spec: Type.Object({ size: Type.Integer({ default: 1 }) }),
});
const CRD_NAME = "gadgets.follow.kubeloop.dev";

let plane: ControlPlane;
let client: Client;

beforeAll(async () => {
  ({ plane, client } = await startPlane());
});
afterAll(() => stopPlane(plane, client));

async function installCrd(): Promise<void> {
  await client.create(Gadget.crd() as KubeObject);
  await until(
    async () => {
      const crd = (await client.get({ type: CustomResourceDefinition, name: CRD_NAME })) as {
        status?: { conditions?: { type: string; status: string }[] };
      };
      return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ?? false;
    },
    20_000,
    "the CRD established",
  );
}

async function deleteCrd(): Promise<void> {
  await client.delete(CustomResourceDefinition, CRD_NAME);
  await until(
    async () =>
      (await client.list(CustomResourceDefinition)).items.every((crd) => crd.metadata?.name !== CRD_NAME),
    30_000,
    "the CRD gone",
  );
}

describe("a controller that follows its CRD", () => {
  it("waits while the CRD is missing, starts when it is created, stops when it is deleted, starts again when it returns; the manager stays Ready", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "follow" } });
    const { logger, lines } = capturingLogger<{ msg: string; "crd-follower"?: string; reason?: string }>();
    const reconciled: string[] = [];
    const configMaps: string[] = [];
    const manager = new Manager({
      client,
      logger,
      probes: { port: 0 },
      metrics: false,
      handleSignals: false,
    });
    manager.add(
      controller(Gadget)
        .named("gadgets")
        .followsCrds()
        .reconcile((gadget) => {
          reconciled.push(gadget.metadata?.name ?? "");
          return done();
        }),
    );
    manager.add(
      controller(ConfigMap)
        .named("others")
        .inNamespace("follow")
        .reconcile((cm) => {
          configMaps.push(cm.metadata?.name ?? "");
          return done();
        }),
    );
    const running = manager.start();
    // Readiness sampled all along: it must never fail.
    const notReady: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const answer = await readyz(manager);
        if (answer && answer.status !== 200) notReady.push(answer.body);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const untilServed = (what: string) =>
      until(
        async () =>
          /\[\+\]crds ok: every controller's kinds are served/.test((await readyz(manager))?.body ?? ""),
        20_000,
        what,
      );
    try {
      await manager.ready;
      // Everything else runs, and /readyz says what waits and why.
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "other", namespace: "follow" },
      });
      await until(() => configMaps.includes("other"), 10_000, "the other controller reconciling");
      await until(
        async () =>
          /\[\+\]crds ok: controller "gadgets" waits: kind Gadget/.test((await readyz(manager))?.body ?? ""),
        10_000,
        "/readyz naming the waiting controller",
      );
      expect(lines.some((l) => l["crd-follower"] === "waiting" && /not served/.test(l.reason ?? ""))).toBe(
        true,
      );

      await installCrd();
      await untilServed("the controller running");
      await client.create({
        apiVersion: Gadget.apiVersion,
        kind: Gadget.kind,
        metadata: { name: "first", namespace: "follow" },
        spec: { size: 1 },
      });
      await until(() => reconciled.includes("first"), 20_000, "the first Gadget reconciled");

      await deleteCrd();
      await until(
        async () => /waits: (the CRD of kind Gadget|kind Gadget)/.test((await readyz(manager))?.body ?? ""),
        20_000,
        "the controller waiting again",
      );
      expect(lines.some((l) => /controller "gadgets" stops/.test(l.msg))).toBe(true);

      await installCrd();
      // As after the first install: the kind served in discovery before the test's own create (a
      // discovery read the follower made while the CRD was settling is remembered for 1 s).
      await untilServed("the controller running again");
      await client.create({
        apiVersion: Gadget.apiVersion,
        kind: Gadget.kind,
        metadata: { name: "second", namespace: "follow" },
        spec: { size: 2 },
      });
      await until(() => reconciled.includes("second"), 30_000, "the Gadget of the recreated CRD reconciled");
    } finally {
      sampling = false;
      await sampler;
      await manager.stop();
      await running;
    }
    expect(notReady).toEqual([]);
  });
});
