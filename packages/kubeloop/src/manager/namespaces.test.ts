import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readyz, rejection, startManager, until } from "../../test/helpers.js";
import { WatchForbidden } from "../cache/errors.js";
import type { Informer } from "../cache/informer.js";
import { Client } from "../client/client.js";
import { NotFound } from "../client/errors.js";
import type { KubeObject } from "../client/types.js";
import { controller } from "../controller/builder.js";
import { rbacRoles } from "../controller/rbac.js";
import { ConfigMap, Namespace, Secret } from "../k8s/index.js";
import { ControlPlane } from "../testing/control-plane.js";
import { Manager, watchNamespaces } from "./manager.js";

// An operator that may only see some namespaces: its ServiceAccount is bound to Roles in team-a
// and team-b (no ClusterRole), authenticated with a token minted by the TokenRequest API.

const WATCHED = ["team-a", "team-b"];
const SERVICE_ACCOUNT = { namespace: "ops", name: "copier" };

let plane: ControlPlane;
let admin: Client;
let operator: Client;

/** A ConfigMap labelled copy=yes gets a Secret with the same data; the reconciler notes what it reads. */
function copier(seen: { listed: string[]; got: boolean[] }) {
  return controller(ConfigMap)
    .named("copier")
    .owns(Secret)
    .reconcile(async (configMap, ctx) => {
      if (ctx.gone || configMap.metadata?.labels?.copy !== "yes") return;
      // Without a namespace, the list spans every watched namespace's informer.
      seen.listed = ctx.cache
        .list(ConfigMap, { labels: { copy: "yes" } })
        .map((cm) => `${cm.metadata?.namespace}/${cm.metadata?.name}`)
        .sort();
      seen.got.push(
        ctx.cache.get({ type: ConfigMap, namespace: ctx.namespace, name: ctx.name })?.metadata?.uid ===
          configMap.metadata.uid,
      );
      await ctx.apply({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: ctx.name, namespace: ctx.namespace ?? "" },
        stringData: configMap.data ?? {},
      });
    });
}

async function tokenClient(): Promise<Client> {
  // A token from the TokenRequest API: the ServiceAccount's own identity, as in a pod.
  const { kubeconfigPath } = await plane.serviceAccountUser(SERVICE_ACCOUNT.namespace, SERVICE_ACCOUNT.name);
  return Client.connect({ kubeconfig: kubeconfigPath });
}

beforeAll(async () => {
  plane = await new ControlPlane().start();
  admin = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  for (const name of [SERVICE_ACCOUNT.namespace, ...WATCHED, "team-c"]) {
    await admin.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }
  await admin.create({ apiVersion: "v1", kind: "ServiceAccount", metadata: SERVICE_ACCOUNT });
  // The Roles generation derives for these namespaces, bound to the ServiceAccount: nothing else.
  const roles = rbacRoles([copier({ listed: [], got: [] }).spec], { namespaces: WATCHED });
  expect(roles.cluster).toEqual([]);
  expect(Object.keys(roles.namespaced)).toEqual(WATCHED);
  for (const [namespace, rules] of Object.entries(roles.namespaced)) {
    await admin.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "copier", namespace },
      rules,
    });
    await admin.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "copier", namespace },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "copier" },
      subjects: [{ kind: "ServiceAccount", ...SERVICE_ACCOUNT }],
    });
  }
  for (const namespace of [...WATCHED, "team-c"]) {
    await admin.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "settings", namespace, labels: { copy: "yes" } },
      data: { color: namespace },
    });
  }
  operator = await tokenClient();
});
afterAll(async () => {
  await operator?.close();
  await admin?.close();
  await plane?.stop();
});

const copied = async (namespace: string) =>
  admin.get({ type: Secret, namespace, name: "settings" }).catch((error: unknown) => {
    if (error instanceof NotFound) return undefined;
    throw error;
  });

describe("Manager watching some namespaces", () => {
  it("reconciles in its namespaces only, under Roles there alone, reading them as one cache", async () => {
    const seen = { listed: [] as string[], got: [] as boolean[] };
    const manager = new Manager({
      client: operator,
      namespaces: WATCHED,
      logger: pino({ level: "silent" }),
      probes: { port: 0 },
      metrics: false,
      handleSignals: false,
    });
    manager.add(copier(seen));
    const running = manager.start();
    await manager.ready;
    await until(
      async () => (await copied("team-a")) !== undefined && (await copied("team-b")) !== undefined,
      15_000,
      "the Secrets in team-a and team-b",
    );
    expect(Buffer.from((await copied("team-b"))?.data?.color ?? "", "base64").toString()).toBe("team-b");
    expect(seen.listed).toEqual(["team-a/settings", "team-b/settings"]);
    expect(seen.got.length).toBeGreaterThanOrEqual(2);
    expect(seen.got.every(Boolean)).toBe(true);
    // One informer per namespace and type; none cluster-wide.
    const scopes = manager.registry.informers.map((i) => `${i.type.kind}/${i.namespace ?? "*"}`).sort();
    expect(scopes).toEqual(["ConfigMap/team-a", "ConfigMap/team-b", "Secret/team-a", "Secret/team-b"]);

    // An owned child's change reaches its owner through its namespace's informer.
    const before = await copied("team-b");
    await admin.delete(Secret, "settings", { namespace: "team-b" });
    await until(
      async () => {
        const now = await copied("team-b");
        return now !== undefined && now.metadata?.uid !== before?.metadata?.uid;
      },
      15_000,
      "the Secret in team-b recreated",
    );
    const ready = await fetch(`http://127.0.0.1:${manager.ports.probes}/readyz`);
    expect(ready.status).toBe(200);
    await manager.stop();
    await running;

    // Nothing happened in team-c, and the identity really has no cluster-wide grant.
    expect(await copied("team-c")).toBeUndefined();
    const clusterWide = await rejection(operator.list(ConfigMap));
    expect(clusterWide.message).toMatch(
      /cannot list resource "configmaps" in API group "" at the cluster scope/,
    );
  });

  it("names the namespace it may not watch and the grant missing: in /readyz, in the logs, and when start-up fails", async () => {
    const lines: string[] = [];
    const logs = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    });
    const manager = new Manager({
      client: operator,
      namespaces: [...WATCHED, "team-c"],
      logger: pino({ level: "warn" }, logs),
      probes: { port: 0 },
      metrics: false,
      cacheSyncTimeoutMs: 4_000,
      handleSignals: false,
    });
    manager.add(copier({ listed: [], got: [] }));
    const running = manager.start();
    let body = "";
    let failed: Informer<KubeObject> | undefined;
    await until(
      async () => {
        const answer = await readyz(manager);
        body = answer?.body ?? "";
        failed ??= manager.registry.informers.find((i) => i.namespace === "team-c" && i.health.lastError);
        // Once team-a and team-b have synced, team-c's informers are all that is wrong.
        const others = /namespace "team-a"|namespace "team-b"/.test(body);
        return answer?.status === 500 && body.includes("forbidden") && failed !== undefined && !others;
      },
      10_000,
      "/readyz to report the forbidden namespace, and it alone",
    );
    const error = failed?.health.lastError;
    expect(error).toBeInstanceOf(WatchForbidden);
    expect(error).toMatchObject({ namespace: "team-c", code: 403 });
    expect((error as WatchForbidden).resource).toMatch(/^(configmaps|secrets)$/);
    expect(body).toMatch(
      /\[-\]informers failed: .*(ConfigMap|Secret) \(v1\) in namespace "team-c": .*cannot list resource "(configmaps|secrets)" in API group "" in the namespace "team-c"\. Grant get, list and watch on (configmaps|secrets) in "team-c"/,
    );
    await expect(running).rejects.toThrow(
      /Caches did not sync within 4s:\n {2}(ConfigMap|Secret) \(v1\) in namespace "team-c": (configmaps|secrets) is forbidden/,
    );
    const warned = lines.map((line) => JSON.parse(line) as { msg: string; namespace?: string });
    expect(
      warned.some((l) => l.namespace === "team-c" && /list\/watch error; retrying with backoff/.test(l.msg)),
    ).toBe(true);
    expect(warned.some((l) => l.namespace === "team-a" || l.namespace === "team-b")).toBe(false);
  });
});

describe("A controller's own namespaces", () => {
  it("watch namespaced types per namespace and cluster-scoped ones cluster-wide; a mapping to an unwatched namespace is dropped", async () => {
    const reconciled: string[] = [];
    let unwatchedRead: unknown;
    const labeller = controller(ConfigMap)
      .named("labeller")
      .inNamespaces(WATCHED)
      // A Namespace's change concerns the ConfigMap "settings" in it.
      .watches(Namespace, (ns) => ({ namespace: ns.metadata?.name, name: "settings" }))
      .reconcile((_cm, ctx) => {
        reconciled.push(ctx.key);
        // Nothing of team-c is cached: reading there is an error, never a silent "none".
        try {
          ctx.cache.list(ConfigMap, { namespace: "team-c" });
        } catch (error) {
          unwatchedRead = error;
        }
      });
    const { manager, running } = await startManager(
      { client: admin, logger: pino({ level: "silent" }) },
      labeller,
    );
    expect(manager.namespaces).toBeUndefined(); // the controller's set, not the manager's
    const scopes = manager.registry.informers.map((i) => `${i.type.kind}/${i.namespace ?? "*"}`).sort();
    expect(scopes).toEqual(["ConfigMap/team-a", "ConfigMap/team-b", "Namespace/*"]);
    await until(
      () => reconciled.includes("team-a/settings") && reconciled.includes("team-b/settings"),
      10_000,
      "the initial reconciles",
    );
    const before = reconciled.filter((key) => key === "team-a/settings").length;
    for (const name of ["team-c", "team-a"]) {
      await admin.patch(Namespace, name, { metadata: { labels: { touched: "yes" } } });
    }
    await until(
      () => reconciled.filter((key) => key === "team-a/settings").length > before,
      10_000,
      "team-a's Namespace change to reconcile team-a/settings",
    );
    await manager.stop();
    await running;
    expect(reconciled).not.toContain("team-c/settings");
    expect((unwatchedRead as Error | undefined)?.message).toBe(
      'ConfigMap in namespace "team-c" is not cached by controller "labeller": it watches "team-a", "team-b" ' +
        "only (its .inNamespace(s), or the Manager's namespaces / WATCH_NAMESPACE). Read it with ctx.client, " +
        "or watch that namespace too.",
    );
  });
});

describe("WATCH_NAMESPACE", () => {
  it("is operator-sdk's comma-separated list; empty or unset means all namespaces", () => {
    expect(watchNamespaces("team-a,team-b")).toEqual(["team-a", "team-b"]);
    expect(watchNamespaces(" team-a , team-b ,")).toEqual(["team-a", "team-b"]);
    expect(watchNamespaces("")).toBeUndefined();
    expect(watchNamespaces(undefined)).toBeUndefined();
    expect(() => watchNamespaces("team-a,Team_B")).toThrow(
      'WATCH_NAMESPACE="team-a,Team_B": "Team_B" is not a namespace name',
    );
    expect(() => watchNamespaces("a,a")).toThrow('namespace "a" is given twice');
  });

  it("is what a Manager watches when it is given no namespaces; the option wins over it", () => {
    const saved = process.env.WATCH_NAMESPACE;
    try {
      process.env.WATCH_NAMESPACE = "team-a,team-b";
      expect(new Manager({ handleSignals: false }).namespaces).toEqual(["team-a", "team-b"]);
      expect(new Manager({ handleSignals: false, namespaces: ["x"] }).namespaces).toEqual(["x"]);
      process.env.WATCH_NAMESPACE = "";
      expect(new Manager({ handleSignals: false }).namespaces).toBeUndefined();
    } finally {
      if (saved === undefined) delete process.env.WATCH_NAMESPACE;
      else process.env.WATCH_NAMESPACE = saved;
    }
  });
});
