import type { ConfigMap as ConfigMapObject, Secret as SecretObject } from "kubernetes-types/core/v1.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, serverFeatureEnabled, startPlane, stopPlane, until } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { loadConfig } from "../client/config.js";
import { Forbidden } from "../client/errors.js";
import type { KubeObject } from "../client/types.js";
import { ConfigMap, Secret } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { type FaultProxy, startFaultProxy } from "../testing/faults/fault-proxy.js";
import { sleep } from "../util/index.js";
import { Informer } from "./informer.js";
import { InformerRegistry } from "./registry.js";

let plane: ControlPlane;
let client: Client;
const fast = { backoff: { initialMs: 100, maxMs: 1_000 } };

const namespace = namespaces(() => client, "cache");

function configMap(
  ns: string,
  name: string,
  data: Record<string, string> = {},
  labels?: Record<string, string>,
) {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: ns, ...(labels ? { labels } : {}) },
    data,
  };
}

function secret(ns: string, name: string): SecretObject {
  return { apiVersion: "v1", kind: "Secret", metadata: { name, namespace: ns } };
}

/** A client whose connections go through `proxy`. */
async function clientThrough(proxy: FaultProxy, requestTimeoutMs = 60_000): Promise<Client> {
  const config = await loadConfig({ kubeconfig: plane.kubeconfigPath });
  return new Client({ ...config, server: proxy.url }, { requestTimeoutMs });
}

beforeAll(async () => {
  // Secrets bypass the watch cache: compacting etcd then makes old resourceVersions Gone for them.
  ({ plane, client } = await startPlane({ apiServerArgs: ["--watch-cache-sizes=secrets#0"] }));
});
afterAll(() => stopPlane(plane, client));

describe("Informer", () => {
  it("syncs what exists, then reports adds, updates and deletes, and keeps its indexes", async () => {
    const ns = await namespace();
    await client.create(configMap(ns, "before", {}, { tier: "a" }));
    const informer = new Informer(client, ConfigMap, {
      namespace: ns,
      indexes: { tier: (cm) => [cm.metadata?.labels?.tier ?? ""] },
    });
    const log: string[] = [];
    informer.on({
      added: (cm, { initial }) => log.push(`added ${cm.metadata?.name}${initial ? " (initial)" : ""}`),
      updated: (old, cm) => log.push(`updated ${cm.metadata?.name} ${old.data?.v ?? "-"}→${cm.data?.v}`),
      deleted: (cm, { tombstone }) =>
        log.push(`deleted ${cm.metadata?.name}${tombstone ? " (tombstone)" : ""}`),
    });
    informer.start();
    await informer.synced;
    expect(informer.get("before", ns)?.metadata?.name).toBe("before");
    const created = await client.create(configMap(ns, "after", { v: "1" }, { tier: "b" }));
    await client.update({ ...created, data: { v: "2" } });
    await client.delete(ConfigMap, "before", { namespace: ns });
    await until(() => log.length === 4, 10_000, "four events");
    expect(log).toEqual(["added before (initial)", "added after", "updated after 1→2", "deleted before"]);
    expect(informer.byIndex("tier", "b").map((cm) => cm.metadata?.name)).toEqual(["after"]);
    expect(informer.byIndex("tier", "a")).toEqual([]);
    expect(informer.list({ namespace: ns }).map((cm) => cm.metadata?.name)).toEqual(["after"]);
    expect(informer.get("after", ns)?.metadata?.managedFields).toBeUndefined();
    expect(informer.health).toMatchObject({ state: "watching", synced: true, lastError: undefined });
    await informer.stop();
    expect(informer.health.state).toBe("stopped");
  });

  it.each([
    ["a streamed LIST from the watch cache", {}],
    ["consistent pages", { pageSize: 2 }],
    ["a streaming watch (sendInitialEvents)", { watchList: true }],
  ])("takes its initial state from %s", async (_, strategy) => {
    const ns = await namespace();
    for (const name of ["a", "b", "c", "d", "e"]) await client.create(configMap(ns, name, { name }));
    const informer = new Informer<ConfigMapObject>(client, ConfigMap, { namespace: ns, ...strategy });
    const initial: string[] = [];
    informer.on({
      added: (cm, { initial: isInitial }) => isInitial && initial.push(cm.metadata?.name ?? ""),
    });
    informer.start();
    await informer.synced;
    expect(initial.sort()).toEqual(["a", "b", "c", "d", "e"]);
    expect(informer.get("c", ns)?.data?.name).toBe("c");
    await client.create(configMap(ns, "f"));
    await until(() => informer.size === 6, 10_000, "the watch after the initial state");
    // A server without WatchList (Kubernetes 1.33) refuses the streaming list once; the informer
    // falls back to LIST and carries on.
    const refused =
      "watchList" in strategy && !(await serverFeatureEnabled(plane.kubeconfigPath, "WatchList"));
    expect(informer.stats.watchListFallbacks).toBe(refused ? 1 : 0);
    await informer.stop();
  });

  it("caches metadata only when asked", async () => {
    const ns = await namespace();
    await client.create(configMap(ns, "heavy", { payload: "x".repeat(5_000) }));
    const informer = new Informer(client, ConfigMap, { namespace: ns, metadataOnly: true });
    informer.start();
    await informer.synced;
    const cached = informer.get("heavy", ns) as KubeObject & { data?: unknown };
    expect(cached.metadata?.name).toBe("heavy");
    expect(cached.data).toBeUndefined();
    await informer.stop();
  });

  it("lists and syncs 10,000 objects", async () => {
    const ns = await namespace();
    const total = 10_000;
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < total) {
          const i = next++;
          await client.create(configMap(ns, `cm-${i}`, { i: String(i) }));
        }
      }),
    );
    const informer = new Informer<ConfigMapObject>(client, ConfigMap, { namespace: ns });
    informer.start();
    await informer.synced;
    expect(informer.size).toBe(total);
    expect(informer.get("cm-9999", ns)?.data?.i).toBe("9999");
    await informer.stop();
  }, 300_000);

  it("reports Forbidden instead of stalling, and recovers once RBAC allows the list", async () => {
    // The admin impersonates a service account, as `kubectl --as` does.
    const limited = await Client.connect({
      kubeconfig: plane.kubeconfigPath,
      impersonate: {
        user: "system:serviceaccount:default:watcher",
        groups: ["system:serviceaccounts", "system:authenticated"],
      },
    });
    const informer = new Informer(limited, Secret, { namespace: "default", ...fast });
    const errors: Error[] = [];
    informer.onError((error) => errors.push(error));
    informer.start();
    await until(() => errors.length > 0, 10_000, "an error");
    expect(errors[0]).toBeInstanceOf(Forbidden);
    expect(errors[0]?.message).toMatch(/cannot (list|watch) resource "secrets"/);
    expect(informer.health.lastError).toBeInstanceOf(Forbidden);
    expect(informer.isSynced).toBe(false);
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "secret-watcher" },
      rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["list", "watch"] }],
    } as KubeObject);
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "secret-watcher" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "secret-watcher" },
      subjects: [
        {
          kind: "User",
          name: "system:serviceaccount:default:watcher",
          apiGroup: "rbac.authorization.k8s.io",
        },
      ],
    } as KubeObject);
    await informer.synced;
    expect(informer.health.lastError).toBeUndefined();
    await informer.stop();
    await limited.close();
  });
});

describe("Shared informers", () => {
  it("give consumers of one type and scope a single watch, stopped with its last holder", async () => {
    const ns = await namespace();
    const requests: string[] = [];
    const counting = await Client.connect({
      kubeconfig: plane.kubeconfigPath,
      onResponse: ({ method }) => requests.push(method),
    });
    const registry = new InformerRegistry(counting);
    const a = registry.acquire(ConfigMap, { namespace: ns });
    const b = registry.acquire(ConfigMap, { namespace: ns });
    const other = registry.acquire(ConfigMap, { namespace: ns, labelSelector: "app=x" });
    expect(a.informer).toBe(b.informer);
    expect(other.informer).not.toBe(a.informer);
    await registry.waitForSync();
    const watches = () => requests.filter((m) => m === "WATCH").length;
    await until(() => watches() >= 2, 10_000, "the watches");
    await sleep(300);
    expect(watches()).toBe(2);
    await a.release();
    expect(registry.informers).toHaveLength(2);
    await b.release();
    expect(registry.informers).toEqual([other.informer]);
    expect(a.informer.health.state).toBe("stopped");
    await registry.stopAll();
    await counting.close();
  });
});

describe("Watch resilience", () => {
  it("resumes after a kube-apiserver restart without a relist", async () => {
    const ns = await namespace();
    const informer = new Informer(client, Secret, { namespace: ns, ...fast });
    informer.start();
    await informer.synced;
    const listsBefore = informer.stats.lists;
    await plane.restartApiServer();
    await client.create(secret(ns, "after-restart"));
    await until(() => informer.get("after-restart", ns) !== undefined, 30_000, "the new secret");
    expect(informer.stats.lists).toBe(listsBefore);
    expect(informer.stats.relistsAfterGone).toBe(0);
    expect(informer.stats.watches).toBeGreaterThan(1);
    await informer.stop();
  });

  it("relists after 410 Gone and delivers the deletes it missed as tombstones", async () => {
    const ns = await namespace();
    await client.create(secret(ns, "doomed"));
    await client.create(secret(ns, "kept"));
    const proxy = await startFaultProxy({ target: new URL(plane.server) });
    const viaProxy = await clientThrough(proxy);
    const informer = new Informer(viaProxy, Secret, { namespace: ns, ...fast });
    const deletes: string[] = [];
    informer.on({
      deleted: (s, { tombstone }) => deletes.push(`${s.metadata?.name}${tombstone ? " (tombstone)" : ""}`),
    });
    informer.start();
    await informer.synced;
    await proxy.refuse();
    proxy.reset();
    await client.delete(Secret, "doomed", { namespace: ns });
    await client.create(secret(ns, "born"));
    await client.create(secret(ns, "one-more"));
    await plane.compactEtcd();
    await proxy.heal();
    await until(() => informer.get("born", ns) !== undefined, 30_000, "the relist");
    expect(deletes).toEqual(["doomed (tombstone)"]);
    expect(informer.stats.relistsAfterGone).toBe(1);
    expect(
      informer
        .list()
        .map((s) => s.metadata?.name)
        .sort(),
    ).toEqual(["born", "kept", "one-more"]);
    await informer.stop();
    await viaProxy.close();
    await proxy.close();
  });

  it("detects a half-open connection by its silence and recovers without a relist", async () => {
    const ns = await namespace();
    const proxy = await startFaultProxy({ target: new URL(plane.server) });
    const viaProxy = await clientThrough(proxy, 3_000);
    const informer = new Informer(viaProxy, ConfigMap, {
      namespace: ns,
      ...fast,
      inactivityTimeoutMs: 1_500,
    });
    const errors: Error[] = [];
    informer.onError((error) => errors.push(error));
    informer.start();
    await informer.synced;
    const lists = informer.stats.lists;
    proxy.stall({ newConnections: true });
    await client.create(configMap(ns, "while-silent"));
    await until(() => errors.length > 0, 10_000, "the silence to be noticed");
    await proxy.heal();
    await until(() => informer.get("while-silent", ns) !== undefined, 30_000, "recovery");
    expect(informer.stats.lists).toBe(lists);
    expect(errors[0]?.message).toMatch(/timeout/i);
    await informer.stop();
    await viaProxy.close();
    await proxy.close();
  });
});
