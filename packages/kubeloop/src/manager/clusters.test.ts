import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturingLogger, until } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { controller } from "../controller/builder.js";
import { RetryableError } from "../controller/result.js";
import { ConfigMap, Secret } from "../k8s/index.js";
import { ControlPlane } from "../testing/control-plane.js";
import { Clusters, kubeconfigFiles, kubeconfigSecrets } from "./clusters.js";
import { Manager } from "./manager.js";

/**
 * One manager, three API servers: a hub operator copies the hub's ConfigMap `site` to every member
 * cluster (a cluster provider reading a folder of kubeconfig files), and a controller run in each
 * member reports back to the hub which version it holds. Members go away and come back; one's
 * kubeconfig stops working.
 */

let hub: ControlPlane;
let members: ControlPlane[];
let hubClient: Client;
let memberClients: Client[];
let folder: string;

beforeAll(async () => {
  const planes = await Promise.all([0, 1, 2].map(() => new ControlPlane().start()));
  hub = planes[0] as ControlPlane;
  members = planes.slice(1);
  hubClient = await Client.connect({ kubeconfig: hub.kubeconfigPath });
  memberClients = await Promise.all(members.map((m) => Client.connect({ kubeconfig: m.kubeconfigPath })));
  await hubClient.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "hub" } });
  folder = mkdtempSync(join(tmpdir(), "kubeloop-clusters-"));
}, 180_000);

afterAll(async () => {
  await Promise.all([hubClient, ...(memberClients ?? [])].map((c) => c?.close()));
  await Promise.all([hub, ...(members ?? [])].map((p) => p?.stop()));
  if (folder) rmSync(folder, { recursive: true, force: true });
});

const memberFile = (i: number) => join(folder, `member-${i + 1}.kubeconfig`);

async function versionIn(client: Client): Promise<string | undefined> {
  const cm = await client.get({ type: ConfigMap, namespace: "default", name: "site" }).catch(() => undefined);
  return cm?.data?.v;
}

describe("many clusters", () => {
  it("fans a hub object out to two members, survives one going away and coming back, and one whose kubeconfig stops working", async () => {
    const { logger, lines } = capturingLogger<{ level: number; msg: string; cluster?: string }>();
    const clusters = new Clusters({ logger, healthIntervalMs: 500, disengageGraceMs: 1_000 });
    // In every member: report the version it holds on the hub object (a write to another cluster).
    clusters.addControllers((cluster) =>
      controller(ConfigMap)
        .named("report")
        .inNamespace("default")
        .reconcile(async (cm) => {
          if (cm.metadata?.name !== "site") return;
          await hubClient.patch(
            ConfigMap,
            "site",
            { metadata: { annotations: { [`seen.kubeloop.dev/${cluster.name}`]: cm.data?.v ?? "" } } },
            { namespace: "hub" },
          );
        }),
    );
    // On the hub: write `site` into every healthy member; retry while one is missing.
    const fanOut = controller(ConfigMap)
      .named("fan-out")
      .inNamespace("hub")
      .source(clusters.changes(() => [{ namespace: "hub", name: "site" }]))
      .reconcile(async (site, ctx) => {
        if (ctx.gone || site.metadata?.name !== "site") return;
        const failed: string[] = [];
        for (const member of clusters.list()) {
          if (!member.healthy) {
            failed.push(`${member.name} (${member.lastError?.message ?? "not probed yet"})`);
            continue;
          }
          // One member's failure must not keep the others from their copy.
          await member.client
            .apply(
              {
                apiVersion: "v1",
                kind: "ConfigMap",
                metadata: {
                  name: "site",
                  namespace: "default",
                  annotations: { "kubeloop.dev/from": "hub/site" },
                },
                data: { v: site.data?.v ?? "" },
              },
              { fieldManager: "fan-out", force: true },
            )
            .catch((error: Error) => failed.push(`${member.name} (${error.message})`));
        }
        if (failed.length)
          throw new RetryableError(`not written: ${failed.join(", ")}`, { reason: "MembersUnreachable" });
      });
    const manager = new Manager({
      kubeconfig: hub.kubeconfigPath,
      logger,
      probes: false,
      metrics: false,
      handleSignals: false,
    })
      .add(fanOut)
      .addClusters(clusters, kubeconfigFiles(folder, 200));
    copyFileSync(members[0]?.kubeconfigPath ?? "", memberFile(0));
    copyFileSync(members[1]?.kubeconfigPath ?? "", memberFile(1));
    const running = manager.start();
    try {
      await manager.ready;
      await until(() => clusters.list().length === 2, 30_000, "both members engaged");
      expect(
        clusters
          .list()
          .map((c) => c.name)
          .sort(),
      ).toEqual(["member-1", "member-2"]);
      await hubClient.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "site", namespace: "hub" },
        data: { v: "1" },
      });
      const [one, two] = memberClients as [Client, Client];
      await until(
        async () => (await versionIn(one)) === "1" && (await versionIn(two)) === "1",
        30_000,
        "v1 in both",
      );
      const seen = async () =>
        (await hubClient.get({ type: ConfigMap, namespace: "hub", name: "site" })).metadata?.annotations ??
        {};
      await until(
        async () => {
          const a = await seen();
          return a["seen.kubeloop.dev/member-1"] === "1" && a["seen.kubeloop.dev/member-2"] === "1";
        },
        30_000,
        "both members to report v1 to the hub",
      );

      // member-2 goes away: removed from the provider. The hub carries on with member-1.
      rmSync(memberFile(1));
      await until(() => clusters.list().length === 1, 10_000, "member-2 to be removed");
      expect(() => clusters.get("member-2")).toThrow(
        /Cluster "member-2" is not engaged \(engaged: member-1\)/,
      );
      await hubClient.patch(ConfigMap, "site", { data: { v: "2" } }, { namespace: "hub" });
      await until(async () => (await versionIn(one)) === "2", 30_000, "v2 in member-1");
      expect(await versionIn(two)).toBe("1");
      // It comes back: engaged again, and the hub's object is reconciled for it at once.
      copyFileSync(members[1]?.kubeconfigPath ?? "", memberFile(1));
      await until(async () => (await versionIn(two)) === "2", 30_000, "v2 in member-2 once it is back");
      await until(
        async () => (await seen())["seen.kubeloop.dev/member-2"] === "2",
        30_000,
        "member-2 reports v2",
      );

      // member-1's kubeconfig stops working (its server moved): found, logged with the reason.
      const good = readFileSync(members[0]?.kubeconfigPath ?? "", "utf8");
      writeFileSync(
        memberFile(0),
        good.replace(/server: https:\/\/127\.0\.0\.1:\d+/, "server: https://127.0.0.1:1"),
      );
      await until(
        () => lines.some((l) => l.level === 40 && l.msg.startsWith("cluster member-1 is unreachable (")),
        20_000,
        "the broken kubeconfig to be reported",
      );
      await hubClient.patch(ConfigMap, "site", { data: { v: "3" } }, { namespace: "hub" });
      await until(
        async () => (await versionIn(two)) === "3",
        30_000,
        "v3 in member-2 while member-1 is broken",
      );
      expect(await versionIn(one)).toBe("2");
      // Fixed: reconnected, and caught up.
      writeFileSync(memberFile(0), good);
      await until(async () => (await versionIn(one)) === "3", 60_000, "v3 in member-1 once fixed");
      expect(lines.some((l) => l.msg === "cluster member-1: kubeconfig changed; reconnecting")).toBe(true);
    } finally {
      await manager.stop();
      await running;
    }
    expect(clusters.list()).toEqual([]); // stopped with the manager
  }, 240_000);

  it("engages clusters from Secrets holding kubeconfigs, and removes one when its Secret goes", async () => {
    const logger = pino({ level: "silent" });
    // A request budget per cluster: each cluster's client has its own token bucket.
    const clusters = new Clusters({
      logger,
      healthIntervalMs: 500,
      clientOptions: { rateLimit: { qps: 20, burst: 40 } },
    });
    await hubClient.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "fleet" } });
    const secret = (name: string, i: number) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name,
        namespace: "fleet",
        labels: { "sigs.k8s.io/multicluster-runtime-kubeconfig": "true" },
      },
      stringData: { kubeconfig: readFileSync(members[i]?.kubeconfigPath ?? "", "utf8") },
    });
    await hubClient.create(secret("east", 0));
    await clusters.start(kubeconfigSecrets({ client: hubClient, namespace: "fleet" }));
    try {
      await until(() => clusters.list().some((c) => c.name === "east" && c.healthy), 30_000, "east");
      await hubClient.create(secret("west", 1));
      await until(() => clusters.list().some((c) => c.name === "west" && c.healthy), 30_000, "west");
      // Each engaged cluster's client reaches its own API server.
      const west = await clusters
        .get("west")
        .client.get({ type: ConfigMap, namespace: "default", name: "site" });
      expect(west.data?.v).toBe(await versionIn(memberClients[1] as Client));
      await hubClient.delete(Secret, "east", { namespace: "fleet" });
      await until(
        () =>
          clusters
            .list()
            .map((c) => c.name)
            .join() === "west",
        30_000,
        "east to be removed",
      );
    } finally {
      await clusters.stop();
    }
  }, 120_000);
});
