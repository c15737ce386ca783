import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  configMap,
  namespaces,
  rejection,
  serverFeatureEnabled,
  startPlane,
  stopPlane,
} from "../../test/helpers.js";
import { ConfigMap, Deployment } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { kubectl } from "../testing/kubectl.js";
import { sleep } from "../util/index.js";
import { Client } from "./client.js";
import { inClusterConfig } from "./config.js";
import { Discovery } from "./discovery.js";
import {
  Conflict,
  Forbidden,
  Invalid,
  NotFound,
  Unauthorized,
  UnknownKind,
  UnsupportedMediaType,
} from "./errors.js";
import { refTo, type TypedObjectRef } from "./object-ref.js";
import { type KubeObject, resourceType } from "./types.js";

const fixtures = join(import.meta.dirname, "../../test/fixtures");
const Widget = resourceType<KubeObject & { spec?: { size?: number } }>("test.kubeloop.dev/v1", "Widget");

let plane: ControlPlane;
let client: Client;

/** A fresh namespace per test: tests share the plane, never their objects. */
const namespace = namespaces(() => client, "client");

beforeAll(async () => {
  ({ plane, client } = await startPlane({ crds: [join(fixtures, "crds/widgets.yaml")] }));
});
afterAll(() => stopPlane(plane, client));

describe("Client CRUD", () => {
  it("creates, gets, updates and deletes a typed object", async () => {
    const ns = await namespace();
    const created = await client.create(configMap(ns, "settings", { color: "blue" }));
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    const got = await client.get({ type: ConfigMap, namespace: ns, name: "settings" });
    expect(got.data).toEqual({ color: "blue" });
    // The positional form of 0.1, deprecated until 0.3, reads the same object.
    expect((await client.get(ConfigMap, "settings", { namespace: ns })).metadata?.uid).toBe(
      got.metadata?.uid,
    );
    got.data = { color: "red" };
    const updated = await client.update(got);
    expect(updated.data?.color).toBe("red");
    expect(updated.metadata?.resourceVersion).not.toBe(got.metadata?.resourceVersion);
    await client.delete(ConfigMap, "settings", { namespace: ns });
    expect(await rejection(client.get({ type: ConfigMap, namespace: ns, name: "settings" }))).toBeInstanceOf(
      NotFound,
    );
  });

  it("gets by a reference, the shape every read takes, and names the fix for a reference without its type", async () => {
    const ns = await namespace();
    await client.create(configMap(ns, "by-ref", { color: "green" }));
    expect((await client.get(refTo(ConfigMap, "by-ref", ns))).data).toEqual({ color: "green" });
    expect((await client.get({ type: ConfigMap, namespace: ns, name: "by-ref" })).data).toEqual({
      color: "green",
    });
    const untyped = { namespace: ns, name: "by-ref" } as TypedObjectRef;
    await expect(client.get(untyped)).rejects.toThrow(
      /needs its type: get\(\{ type: ConfigMap, namespace, name \}\)/,
    );
  });

  it("get, create and update give up when their signal aborts, and take a timeout of their own", async () => {
    const ns = await namespace();
    const stopped = new AbortController();
    stopped.abort(new Error("stopped by the caller"));
    const signal = stopped.signal;
    await expect(
      client.get({ type: ConfigMap, namespace: ns, name: "settings" }, { signal }),
    ).rejects.toThrow("stopped by the caller");
    await expect(client.create(configMap(ns, "settings"), { signal })).rejects.toThrow(
      "stopped by the caller",
    );
    await expect(client.get({ type: ConfigMap, namespace: ns, name: "settings" })).rejects.toBeInstanceOf(
      NotFound,
    );
    const created = await client.create(configMap(ns, "settings"), { timeoutMs: 5_000 });
    await expect(client.update({ ...created, data: { a: "b" } }, { signal })).rejects.toThrow(
      "stopped by the caller",
    );
    expect(
      (await client.get({ type: ConfigMap, namespace: ns, name: "settings" }, { timeoutMs: 5_000 })).data,
    ).toBeUndefined();
  });

  it("lists with label selectors, one namespace or all, and pages with limit/continue", async () => {
    const ns = await namespace();
    for (let i = 0; i < 7; i++) {
      const cm = configMap(ns, `item-${i}`);
      cm.metadata = { ...cm.metadata, labels: { parity: i % 2 ? "odd" : "even" } };
      await client.create(cm);
    }
    const odd = await client.list(ConfigMap, { namespace: ns, labelSelector: "parity=odd" });
    expect(odd.items.map((c) => c.metadata?.name).sort()).toEqual(["item-1", "item-3", "item-5"]);
    const everywhere = await client.list(ConfigMap, { labelSelector: "parity" });
    expect(everywhere.items.filter((c) => c.metadata?.namespace === ns)).toHaveLength(7);
    const pages: number[] = [];
    for await (const page of client.listPages(ConfigMap, {
      namespace: ns,
      labelSelector: "parity",
      limit: 3,
    })) {
      pages.push(page.items.length);
    }
    expect(pages).toEqual([3, 3, 1]);
    const byName = await client.list(ConfigMap, { namespace: ns, fieldSelector: "metadata.name=item-4" });
    expect(byName.items.map((c) => c.metadata?.name)).toEqual(["item-4"]);
  });

  it("lists metadata only", async () => {
    const ns = await namespace();
    await client.create(configMap(ns, "big", { payload: "x".repeat(10_000) }));
    const list = await client.listMetadata(ConfigMap, { namespace: ns });
    expect(list.kind).toBe("PartialObjectMetadataList");
    expect(list.items[0]?.metadata.name).toBe("big");
    expect(JSON.stringify(list).length).toBeLessThan(2_000);
  });

  it("patches with merge, JSON and strategic merge patches", async () => {
    const ns = await namespace();
    await client.create(configMap(ns, "p", { a: "1", b: "2" }));
    const merged = await client.patch(ConfigMap, "p", { data: { b: null, c: "3" } }, { namespace: ns });
    expect(merged.data).toEqual({ a: "1", c: "3" });
    const json = await client.patch(ConfigMap, "p", [{ op: "replace", path: "/data/a", value: "9" }], {
      namespace: ns,
      type: "json",
    });
    expect(json.data?.a).toBe("9");
    await client.create(deployment(ns, "web", 1));
    const strategic = await client.patch(
      Deployment,
      "web",
      { spec: { template: { spec: { containers: [{ name: "web", image: "nginx:2" }] } } } },
      { namespace: ns, type: "strategic" },
    );
    expect(strategic.spec?.template.spec?.containers.map((c) => `${c.name}=${c.image}`)).toEqual([
      "web=nginx:2",
    ]);
  });

  it("says strategic merge is unsupported for custom resources", async () => {
    const ns = await namespace();
    await client.create({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Widget",
      metadata: { name: "w", namespace: ns },
    });
    const error = await rejection(
      client.patch(Widget, "w", { spec: { size: 2 } }, { namespace: ns, type: "strategic" }),
    );
    expect(error).toBeInstanceOf(UnsupportedMediaType);
  });

  it("creates nothing on a dry run, yet validates", async () => {
    const ns = await namespace();
    const dry = await client.create(configMap(ns, "dry"), { dryRun: true });
    expect(dry.metadata?.name).toBe("dry");
    expect(await rejection(client.get({ type: ConfigMap, namespace: ns, name: "dry" }))).toBeInstanceOf(
      NotFound,
    );
    const invalid = await rejection(client.create(configMap(ns, "Not_Valid"), { dryRun: true }));
    expect(invalid).toBeInstanceOf(Invalid);
  });

  it("deletes with preconditions, and collections by label", async () => {
    const ns = await namespace();
    const cm = await client.create(configMap(ns, "guarded"));
    const wrong = await rejection(
      client.delete(ConfigMap, "guarded", {
        namespace: ns,
        preconditions: { uid: "00000000-0000-0000-0000-000000000000" },
      }),
    );
    expect(wrong).toBeInstanceOf(Conflict);
    await client.delete(ConfigMap, "guarded", {
      namespace: ns,
      preconditions: { uid: cm.metadata?.uid as string },
    });
    for (const name of ["a", "b", "keep"]) {
      const item = configMap(ns, name);
      item.metadata = { ...item.metadata, labels: { doomed: String(name !== "keep") } };
      await client.create(item);
    }
    await client.deleteCollection(ConfigMap, { namespace: ns, labelSelector: "doomed=true" });
    const left = await client.list(ConfigMap, { namespace: ns, labelSelector: "doomed" });
    expect(left.items.map((c) => c.metadata?.name)).toEqual(["keep"]);
  });

  it("reads and writes the scale and status subresources", async () => {
    const ns = await namespace();
    await client.create(deployment(ns, "scaled", 1));
    const scale = await client.getScale(Deployment, "scaled", { namespace: ns });
    expect(scale.spec?.replicas).toBe(1);
    await client.updateScale(Deployment, "scaled", 4, { namespace: ns });
    expect((await client.get({ type: Deployment, namespace: ns, name: "scaled" })).spec?.replicas).toBe(4);
    const status = await client.getStatus(Deployment, "scaled", { namespace: ns });
    expect(status.metadata?.name).toBe("scaled");
    const patched = await client.patch(
      Deployment,
      "scaled",
      { status: { observedGeneration: 7 } },
      { namespace: ns, subresource: "status" },
    );
    expect(patched.status?.observedGeneration).toBe(7);
  });
});

describe("Server-side apply", () => {
  it("creates, then updates, idempotently", async () => {
    const ns = await namespace();
    const first = await client.apply(configMap(ns, "ssa", { a: "1" }), { fieldManager: "alpha" });
    const again = await client.apply(configMap(ns, "ssa", { a: "1" }), { fieldManager: "alpha" });
    expect(again.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    const changed = await client.apply(configMap(ns, "ssa", { a: "2" }), { fieldManager: "alpha" });
    expect(changed.data).toEqual({ a: "2" });
    expect(changed.metadata?.managedFields?.map((f) => f.manager)).toContain("alpha");
  });

  it("reports a Conflict naming the field another manager owns, and takes it with force", async () => {
    const ns = await namespace();
    await client.apply(configMap(ns, "shared", { owner: "alpha" }), { fieldManager: "alpha" });
    const conflict = await rejection(
      client.apply(configMap(ns, "shared", { owner: "beta" }), { fieldManager: "beta" }),
    );
    expect(conflict).toBeInstanceOf(Conflict);
    expect((conflict as Conflict).causes.map((c) => c.field)).toEqual([".data.owner"]);
    expect(conflict.message).toContain('conflict with "alpha"');
    const forced = await client.apply(configMap(ns, "shared", { owner: "beta" }), {
      fieldManager: "beta",
      force: true,
    });
    expect(forced.data?.owner).toBe("beta");
  });
});

describe("Discovery", () => {
  it("finds a kind whose CRD was installed after the first lookup", async () => {
    await client.list(ConfigMap);
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition" as const,
      metadata: { name: "latecomers.test.kubeloop.dev" },
      spec: {
        group: "test.kubeloop.dev",
        scope: "Cluster",
        names: { plural: "latecomers", kind: "Latecomer" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
          },
        ],
      },
    };
    await plane.installCrdObjects([crd]);
    await sleep(1_100); // past the refresh interval
    const Latecomer = resourceType("test.kubeloop.dev/v1", "Latecomer");
    await client.create({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Latecomer",
      metadata: { name: "late" },
    });
    const info = await client.resolve(Latecomer);
    expect(info).toMatchObject({ resource: "latecomers", namespaced: false });
  });

  it("reads the legacy per-group documents as it reads aggregated discovery, for servers without it", async () => {
    const legacy = new Discovery(client.transport, { aggregated: false });
    const kinds = [
      ["v1", "ConfigMap"],
      ["v1", "Namespace"],
      ["apps/v1", "Deployment"],
      ["events.k8s.io/v1", "Event"],
      ["test.kubeloop.dev/v1", "Widget"],
    ] as const;
    for (const [apiVersion, kind] of kinds) {
      expect(await legacy.resolve(apiVersion, kind)).toEqual(
        await client.discovery.resolve(apiVersion, kind),
      );
    }
    const deployments = await legacy.resolve("apps/v1", "Deployment");
    expect(deployments).toMatchObject({ resource: "deployments", namespaced: true });
    expect([...deployments.subresources].sort()).toEqual(["scale", "status"]);
    expect(await rejection(legacy.resolve("apps/v1", "Nope"))).toBeInstanceOf(UnknownKind);
  });

  it("reads the legacy documents of every other group when one aggregated API is down, and names it", async () => {
    const apiService = {
      apiVersion: "apiregistration.k8s.io/v1",
      kind: "APIService",
      metadata: { name: "v1.down.test.kubeloop.dev" },
      spec: {
        group: "down.test.kubeloop.dev",
        version: "v1",
        groupPriorityMinimum: 1000,
        versionPriority: 15,
        insecureSkipTLSVerify: true,
        service: { namespace: "default", name: "nothing-listens-here", port: 443 },
      },
    };
    await client.create(apiService);
    try {
      const legacy = new Discovery(client.transport, { aggregated: false });
      expect(await legacy.resolve("v1", "ConfigMap")).toMatchObject({ resource: "configmaps" });
      const error = await rejection(legacy.resolve("down.test.kubeloop.dev/v1", "Thing"));
      expect(error).toBeInstanceOf(UnknownKind);
      expect(error.message).toMatch(
        /could not describe down\.test\.kubeloop\.dev\/v1: .*check that the service is available/s,
      );
    } finally {
      await client.delete(resourceType("apiregistration.k8s.io/v1", "APIService"), apiService.metadata.name);
    }
  });
});

describe("Raw watch", () => {
  it("streams ADDED, MODIFIED and DELETED events in order", async () => {
    const ns = await namespace();
    const controller = new AbortController();
    const events: string[] = [];
    const watching = (async () => {
      try {
        for await (const event of client.watch(ConfigMap, { namespace: ns, signal: controller.signal })) {
          if (event.type === "BOOKMARK") continue;
          events.push(`${event.type} ${event.object.metadata?.name} ${event.object.data?.v ?? ""}`.trim());
          if (event.type === "DELETED") break;
        }
      } catch (error) {
        if ((error as Error).name !== "AbortError") throw error;
      }
    })();
    await sleep(300);
    const cm = await client.create(configMap(ns, "watched", { v: "1" }));
    await client.update({ ...cm, data: { v: "2" } });
    await client.delete(ConfigMap, "watched", { namespace: ns });
    await watching;
    controller.abort();
    expect(events).toEqual(["ADDED watched 1", "MODIFIED watched 2", "DELETED watched 2"]);
  });

  it("streams the initial state first, then marks its end with a bookmark (sendInitialEvents)", async () => {
    const ns = await namespace();
    await client.create(configMap(ns, "one"));
    await client.create(configMap(ns, "two"));
    const seen: string[] = [];
    const options = { namespace: ns, sendInitialEvents: true, resourceVersionMatch: "NotOlderThan" } as const;
    if (!(await serverFeatureEnabled(plane.kubeconfigPath, "WatchList"))) {
      // Kubernetes 1.33 ships WatchList off: the request must fail plainly, never hang or half-list.
      const error = await rejection(client.watch(ConfigMap, options)[Symbol.asyncIterator]().next());
      expect(error).toBeInstanceOf(Invalid);
      expect(error.message).toMatch(/sendInitialEvents is forbidden .*WatchList feature/);
      return;
    }
    for await (const event of client.watch(ConfigMap, options)) {
      if (event.type === "BOOKMARK") {
        expect(event.object.metadata?.annotations?.["k8s.io/initial-events-end"]).toBe("true");
        break;
      }
      seen.push(`${event.type} ${event.object.metadata?.name}`);
    }
    expect(seen.sort()).toEqual(["ADDED one", "ADDED two"]);
  });
});

function deployment(ns: string, name: string, replicas: number) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "web", image: "nginx:1" }] },
      },
    },
  };
}

describe("in-cluster configuration", () => {
  it("authenticates as the pod's service account from the mounted files, and picks up a rotated token", async () => {
    const ns = await namespace();
    await client.create({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "operator", namespace: ns },
    });
    const token = await kubectl(["-n", ns, "create", "token", "operator"], {
      kubeconfig: plane.kubeconfigPath,
    });
    expect(token.code, token.stderr).toBe(0);
    // The folder the kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount.
    const mounted = mkdtempSync(join(tmpdir(), "kubeloop-serviceaccount-"));
    writeFileSync(join(mounted, "token"), token.stdout.trim());
    writeFileSync(join(mounted, "ca.crt"), plane.caCert);
    writeFileSync(join(mounted, "namespace"), ns);
    const server = new URL(plane.server);
    const env = { KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port };
    expect(inClusterConfig(mounted, {})).toBeUndefined(); // not in a pod
    const config = inClusterConfig(mounted, env);
    expect(config?.namespace).toBe(ns);
    const pod = new Client(config as NonNullable<typeof config>);
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      // The service account has no rights: the API server names who asked.
      const forbidden = await rejection(pod.list(ConfigMap, { namespace: ns }));
      expect(forbidden).toBeInstanceOf(Forbidden);
      expect(forbidden.message).toContain(`system:serviceaccount:${ns}:operator`);
      // The kubelet replaces the token; once the refresh interval has passed, the new one is sent.
      writeFileSync(join(mounted, "token"), "not-a-token");
      expect(await rejection(pod.list(ConfigMap, { namespace: ns }))).toBeInstanceOf(Forbidden);
      vi.setSystemTime(Date.now() + 11_000);
      expect(await rejection(pod.list(ConfigMap, { namespace: ns }))).toBeInstanceOf(Unauthorized);
    } finally {
      vi.useRealTimers();
      await pod.close();
      rmSync(mounted, { recursive: true, force: true });
    }
  });
});
