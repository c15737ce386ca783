import type { Lease } from "kubernetes-types/coordination/v1.js";
import type { ConfigMap as ConfigMapObject } from "kubernetes-types/core/v1.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturingLogger, startPlane, stopPlane, until } from "../../../test/helpers.js";
import { InformerRegistry } from "../../cache/registry.js";
import type { Client } from "../../client/client.js";
import type { KubeObject } from "../../client/index.js";
import { ConfigMap, Lease as LeaseType } from "../../k8s/index.js";
import { microTime } from "../../resources/events.js";
import type { ControlPlane } from "../../testing/control-plane.js";
import { sleep } from "../../util/index.js";
import { LeaderElector } from "../leader-election.js";
import { drainLabel, RING_LABEL, shardLabel } from "./ring.js";
import { ShardMember } from "./shard.js";
import { Sharder } from "./sharder.js";

/**
 * Bad input for the sharder: a shard Lease edited by hand, a replica whose clock is off; its pass
 * between resyncs; and a shard's side of a handover, which must never take a move for a deletion.
 */

const NS = "ring";
const RING = "bad-input";
const HANDOVER_RING = "handover";
let plane: ControlPlane;
let client: Client;

beforeAll(async () => {
  ({ plane, client } = await startPlane());
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
}, 120_000);
afterAll(() => stopPlane(plane, client));

async function labelsOf(): Promise<string[]> {
  const list = await client.listMetadata(ConfigMap, { namespace: NS, labelSelector: "sharded=yes" });
  return list.items.map((item) => item.metadata?.labels?.[shardLabel(RING)] ?? "");
}

/** A shard of `ring` named `id`, renewing its Lease through the real elector once run. */
function shardElector(id: string, ring: string): LeaderElector {
  return new LeaderElector({
    client,
    id,
    namespace: NS,
    identity: id,
    labels: { [RING_LABEL]: ring },
    leaseDurationMs: 4_000,
    renewDeadlineMs: 3_000,
    retryPeriodMs: 500,
  });
}

describe("the sharder, given bad input", () => {
  it("reports a skewed clock without acting on it, and treats a Lease edited by hand as unavailable", async () => {
    const { logger, lines } = capturingLogger<{ level: number; msg: string; lease?: string }>();
    // Shard "steady" renews through the real elector; shard "skewed" writes renewTimes 10 s ahead.
    const steady = shardElector("steady", RING);
    const steadyRun = steady.run();
    const skewedAhead = () => microTime(Date.now() + 10_000);
    await client.create<Lease>({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "skewed", namespace: NS, labels: { [RING_LABEL]: RING } },
      spec: { holderIdentity: "skewed", leaseDurationSeconds: 4, renewTime: skewedAhead() },
    });
    let renewing = true;
    const renewSkewed = (async () => {
      while (renewing) {
        await sleep(500);
        const lease = await client.get({ type: LeaseType, namespace: NS, name: "skewed" });
        if (lease.spec?.holderIdentity !== "skewed") continue; // edited: the replica lost it
        lease.spec.renewTime = skewedAhead();
        await client.update(lease).catch(() => {});
      }
    })();
    for (let i = 0; i < 40; i++)
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `cm-${i}`, namespace: NS, labels: { sharded: "yes" } },
      });
    const registry = new InformerRegistry(client);
    const sharder = new Sharder({
      client,
      registry,
      logger,
      ring: RING,
      namespace: NS,
      identity: "test-sharder",
      types: [{ type: ConfigMap, namespaces: [NS] }],
      childTypes: [],
    });
    try {
      await sharder.start();
      await until(async () => sharder.shards.join() === "skewed,steady", 20_000, "both shards in the ring");
      await until(
        async () => {
          const labels = await labelsOf();
          return labels.every((l) => l === "steady" || l === "skewed") && new Set(labels).size === 2;
        },
        20_000,
        "the objects spread over both shards",
      );
      // The skew is reported, naming the shard and the fix; the shard keeps its objects.
      await until(
        () => lines.some((l) => l.msg.includes("shard skewed's clock is 10s ahead")),
        10_000,
        "skew",
      );
      const skewLine = lines.find((l) => l.msg.includes("clock is 10s ahead"));
      expect(skewLine?.level).toBe(40);
      expect(skewLine?.msg).toContain("fix the node's time sync");
      expect(sharder.shards).toContain("skewed");

      // Someone edits the skewed shard's Lease by hand: another holder.
      const lease = await client.get({ type: LeaseType, namespace: NS, name: "skewed" });
      await client.update({ ...lease, spec: { ...lease.spec, holderIdentity: "mallory" } });
      await until(() => lines.some((l) => l.msg.includes('names holder "mallory"')), 10_000, "the edit");
      expect(lines.find((l) => l.msg.includes('names holder "mallory"'))?.msg).toContain(
        "treated as unavailable and its objects move",
      );
      await until(
        async () => (await labelsOf()).every((label) => label === "steady"),
        20_000,
        "the edited shard's objects to move to the steady one",
      );
      expect(sharder.shards).toEqual(["steady"]);

      // A Lease without a duration (the API server refuses 0, not an unset field) is no Lease either.
      const edited = await client.get({ type: LeaseType, namespace: NS, name: "skewed" });
      await client.update({
        ...edited,
        spec: { ...edited.spec, holderIdentity: "skewed", leaseDurationSeconds: undefined },
      });
      await until(
        () => lines.some((l) => l.msg.includes("has no positive leaseDurationSeconds (unset)")),
        10_000,
        "the missing duration",
      );
      expect(sharder.shards).toEqual(["steady"]);
      expect(steady.isLeader).toBe(true); // the rest kept working throughout
    } finally {
      renewing = false;
      await renewSkewed;
      await sharder.stop();
      await registry.stopAll();
      await steady.stop();
      await steadyRun;
    }
  }, 120_000);
});

describe("the sharder, between resyncs", () => {
  it("labels an object created after a settled pass at once, not at the next resync", async () => {
    const ring = "between-resyncs";
    const only = shardElector("only", ring);
    const onlyRun = only.run();
    const registry = new InformerRegistry(client);
    const sharder = new Sharder({
      client,
      registry,
      logger: capturingLogger().logger,
      ring,
      namespace: NS,
      identity: "test-sharder-resync",
      types: [{ type: ConfigMap, namespaces: [NS] }],
      childTypes: [],
    });
    const create = (name: string) =>
      client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: NS } });
    const labelled = async (name: string) =>
      (await client.get({ type: ConfigMap, namespace: NS, name })).metadata?.labels?.[shardLabel(ring)] ===
      "only";
    try {
      await sharder.start();
      await until(async () => sharder.shards.join() === "only", 20_000, "the shard in the ring");
      await create("early");
      await until(() => labelled("early"), 10_000, "the first object's label");
      // Every object labelled: the next pass is the resync, a minute away (the default).
      await sleep(2_000);
      const createdAt = performance.now();
      await create("late");
      await until(() => labelled("late"), 5_000, "the new object's label, well before the resync");
      expect(performance.now() - createdAt).toBeLessThan(5_000);
    } finally {
      await sharder.stop();
      await registry.stopAll();
      await only.stop();
      await onlyRun;
    }
  }, 60_000);
});

describe("the handover of a drained object", () => {
  it("takes its own release, which the shard's watch shows as a deletion, for a move", async () => {
    const member = new ShardMember(client, HANDOVER_RING, "a");
    const drained = await client.create<ConfigMapObject>({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "moving",
        namespace: NS,
        labels: { [shardLabel(HANDOVER_RING)]: "a", [drainLabel(HANDOVER_RING)]: "" },
      },
    });
    // The watch shard a's informers run: its label selector, from the drained object's version.
    const abort = new AbortController();
    const events: { type: string; object: KubeObject }[] = [];
    const watching = (async () => {
      const stream = client.watch(ConfigMap, {
        namespace: NS,
        labelSelector: member.labelSelector,
        resourceVersion: drained.metadata?.resourceVersion ?? "",
        signal: abort.signal,
      });
      for await (const event of stream) events.push(event);
    })().catch(() => {});
    const forgotten: string[] = [];
    const gate = member.bind({
      name: "test",
      primary: ConfigMap,
      client,
      logger: capturingLogger().logger,
      signal: abort.signal,
      cached: () => drained,
      idle: async () => {},
      requeue: () => {},
      forget: (key) => forgotten.push(key),
    });
    try {
      // The drain request: the gate releases the object (both labels off), which leaves a's selector.
      expect(gate.admit({ type: "updated", object: drained, old: drained })).toBe(false);
      await until(() => events.some((e) => e.type === "DELETED"), 10_000, "the watch's delete event");
      const shown = events.find((e) => e.type === "DELETED")?.object as KubeObject;
      // The API server sends an object that left a selector as deleted, with its content from before.
      expect(member.ownership(shown)).toBe("drain");
      let gone = false;
      gate.deleted(shown, false, () => {
        gone = true;
      });
      await until(() => forgotten.includes(`${NS}/moving`), 10_000, "the key forgotten as moved");
      await sleep(500);
      expect(gone, "a moved object reported as deleted").toBe(false);

      // An object of ours deleted for real still is.
      const own = {
        metadata: { name: "deleted", namespace: NS, labels: { [shardLabel(HANDOVER_RING)]: "a" } },
      };
      gate.deleted(own, false, () => {
        gone = true;
      });
      expect(gone).toBe(true);
    } finally {
      abort.abort();
      await watching;
    }
  }, 60_000);
});
