import Type from "typebox";
import { describe, expect, it } from "vitest";
import { Gone, NotFound } from "../../client/errors.js";
import { type KubeObject, resourceType } from "../../client/types.js";
import { defineResource } from "../../resources/define-resource.js";
import { defineWebhooks } from "../../webhook/define-webhooks.js";
import { BUILTIN_DISCOVERY } from "./builtin-discovery.js";
import { NotEmulated } from "./errors.js";
import { builtinKinds, listedBuiltin } from "./kinds.js";
import { MemoryApiServer } from "./server.js";

// What the conformance suite cannot compare with a bare kube-apiserver: the in-memory server's
// own controllers (garbage collection, namespace deletion), compaction, bookmarks, in-process
// webhooks, seeding and refusals. Everything here runs in process, in milliseconds.

const ConfigMap = resourceType<KubeObject & { data?: Record<string, string> }>("v1", "ConfigMap");
const Namespace = resourceType("v1", "Namespace");
const Pod = resourceType("v1", "Pod");

const Gadget = defineResource({
  group: "unit.kubeloop.dev",
  version: "v1",
  kind: "Gadget",
  spec: Type.Object({ size: Type.Integer({ minimum: 0, default: 1 }), image: Type.Optional(Type.String()) }),
  status: Type.Object({ ready: Type.Optional(Type.Boolean()) }),
});

function configMap(name: string, extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default", ...extra } };
}

function gadget(name: string, spec: Record<string, unknown>): KubeObject & { spec: object } {
  return { apiVersion: Gadget.apiVersion, kind: "Gadget", metadata: { name, namespace: "default" }, spec };
}

/** A fresh server's client with a ConfigMap `owner` in default, and owner references to it. */
async function withOwner() {
  const client = new MemoryApiServer().client();
  const owner = await client.create(configMap("owner"));
  const ownedBy = (extra: Record<string, unknown> = {}) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    name: "owner",
    uid: owner.metadata.uid ?? "",
    ...extra,
  });
  return { client, ownedBy };
}

async function collect<T>(iterable: AsyncIterable<T>, count: number): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) {
    out.push(item);
    if (out.length === count) break;
  }
  return out;
}

describe("MemoryApiServer", () => {
  it("garbage-collects dependents in the background when their owner goes", async () => {
    const { client, ownedBy } = await withOwner();
    const ref = ownedBy({ controller: true });
    await client.create(configMap("child", { ownerReferences: [ref] }));
    await client.create(
      configMap("grandchild", {
        ownerReferences: [
          {
            ...ref,
            name: "child",
            uid:
              (await client.get({ type: ConfigMap, namespace: "default", name: "child" })).metadata?.uid ??
              "",
          },
        ],
      }),
    );
    await client.delete(ConfigMap, "owner", { namespace: "default" });
    const left = await client.list(ConfigMap, { namespace: "default" });
    expect(left.items.map((i) => i.metadata?.name)).toEqual([]);
  });

  it("orphans dependents with propagationPolicy Orphan: owner references are removed", async () => {
    const { client, ownedBy } = await withOwner();
    await client.create(configMap("child", { ownerReferences: [ownedBy()] }));
    await client.delete(ConfigMap, "owner", { namespace: "default", propagationPolicy: "Orphan" });
    await expect(client.get({ type: ConfigMap, namespace: "default", name: "owner" })).rejects.toBeInstanceOf(
      NotFound,
    );
    const child = await client.get({ type: ConfigMap, namespace: "default", name: "child" });
    expect(child.metadata?.ownerReferences).toBeUndefined();
  });

  it("deletes in the foreground: the owner waits for a dependent that has a finalizer", async () => {
    const { client, ownedBy } = await withOwner();
    await client.create(
      configMap("child", {
        finalizers: ["example.com/hold"],
        ownerReferences: [ownedBy({ blockOwnerDeletion: true })],
      }),
    );
    const deleting = await client.delete(ConfigMap, "owner", {
      namespace: "default",
      propagationPolicy: "Foreground",
    });
    expect(deleting.metadata?.finalizers).toEqual(["foregroundDeletion"]);
    const child = await client.get({ type: ConfigMap, namespace: "default", name: "child" });
    expect(child.metadata?.deletionTimestamp).toBeDefined();
    await client.patch(ConfigMap, "child", { metadata: { finalizers: null } }, { namespace: "default" });
    await expect(client.get({ type: ConfigMap, namespace: "default", name: "owner" })).rejects.toBeInstanceOf(
      NotFound,
    );
  });

  it("deletes a namespace with its contents (the namespace controller's work)", async () => {
    const server = new MemoryApiServer({ namespaces: ["default", "doomed"] });
    const client = server.client();
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "a", namespace: "doomed" },
    });
    await client.delete(Namespace, "doomed");
    await expect(client.get({ type: Namespace, name: "doomed" })).rejects.toBeInstanceOf(NotFound);
    expect((await client.list(ConfigMap, { namespace: "doomed" })).items).toEqual([]);
  });

  it("with controllers off, as a bare kube-apiserver, nothing is collected", async () => {
    const server = new MemoryApiServer({ controllers: false });
    const client = server.client();
    const owner = await client.create(configMap("owner"));
    await client.create(
      configMap("child", {
        ownerReferences: [
          { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid ?? "" },
        ],
      }),
    );
    await client.delete(ConfigMap, "owner", { namespace: "default" });
    expect((await client.get({ type: ConfigMap, namespace: "default", name: "child" })).metadata?.name).toBe(
      "child",
    );
  });

  it("answers a watch from before the compaction with 410 Gone, and resumes one after it", async () => {
    const server = new MemoryApiServer({ history: 3 });
    const client = server.client();
    const start = (await client.list(ConfigMap, { namespace: "default" })).metadata.resourceVersion;
    for (let i = 0; i < 5; i++) await client.create(configMap(`c${i}`));
    await expect(
      collect(client.watch(ConfigMap, { namespace: "default", resourceVersion: start }), 1),
    ).rejects.toBeInstanceOf(Gone);
    const recent = server.resourceVersion;
    await client.create(configMap("late"));
    const [event] = await collect(
      client.watch(ConfigMap, { namespace: "default", resourceVersion: recent }),
      1,
    );
    expect(event?.type).toBe("ADDED");
    expect(event?.object.metadata?.name).toBe("late");
  });

  it("answers a continue token from before an explicit compaction with 410 Gone", async () => {
    const server = new MemoryApiServer();
    const client = server.client();
    for (let i = 0; i < 3; i++) await client.create(configMap(`c${i}`));
    const first = await client.list(ConfigMap, { namespace: "default", limit: 1 });
    server.compact();
    await expect(
      client.list(ConfigMap, { namespace: "default", limit: 1, continue: first.metadata.continue }),
    ).rejects.toBeInstanceOf(Gone);
  });

  it("sends bookmarks on request, and the initial-events-end bookmark of a WatchList", async () => {
    const server = new MemoryApiServer();
    const client = server.client();
    await client.create(configMap("a"));
    const events = client.watch(ConfigMap, {
      namespace: "default",
      sendInitialEvents: true,
      resourceVersionMatch: "NotOlderThan",
      resourceVersion: "",
    });
    const [added, end] = await collect(events, 2);
    expect(added?.type).toBe("ADDED");
    expect(end?.type).toBe("BOOKMARK");
    expect(end?.object.metadata?.annotations?.["k8s.io/initial-events-end"]).toBe("true");
    const watch = client.watch(ConfigMap, { namespace: "default", resourceVersion: server.resourceVersion });
    const next = collect(watch, 1);
    await new Promise((resolve) => setImmediate(resolve));
    server.bookmark();
    expect((await next)[0]?.type).toBe("BOOKMARK");
  });

  it("calls defineWebhooks definitions in process: defaulting, then a denial as a 403", async () => {
    const server = new MemoryApiServer({ resources: [Gadget] });
    server.addWebhooks(
      defineWebhooks(Gadget, {
        default(gadget) {
          gadget.spec.image ??= "registry.example.com/gadget:1";
        },
        validate(gadget) {
          return gadget.spec.image?.startsWith("registry.example.com/")
            ? { allowed: true }
            : { allowed: false, message: "images come from registry.example.com" };
        },
      }),
    );
    const client = server.client();
    const created = await client.create(gadget("g", { size: 1 }));
    expect((created as { spec?: { image?: string } }).spec?.image).toBe("registry.example.com/gadget:1");
    await expect(client.create(gadget("h", { size: 1, image: "docker.io/x" }))).rejects.toThrow(
      /admission webhook denied the request: images come from registry.example.com/,
    );
  });

  it("seeds pods as test data, which lists and watches see, and refuses pod writes through the API", async () => {
    const server = new MemoryApiServer();
    const client = server.client();
    server.seed({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default" },
      status: { phase: "Running" },
    } as KubeObject);
    const pods = await client.list(Pod, { namespace: "default", fieldSelector: "status.phase=Running" });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual(["p"]);
    await expect(
      client.create({ apiVersion: "v1", kind: "Pod", metadata: { name: "q", namespace: "default" } }),
    ).rejects.toBeInstanceOf(NotEmulated);
  });

  it("refuses CRDs whose CEL rules use a part of CEL it does not emulate, naming the rule and its place", () => {
    const ruled = (rule: string) =>
      defineResource({
        group: "unit.kubeloop.dev",
        version: "v1",
        kind: "Ruled",
        spec: Type.Object({ a: Type.String() }, { "x-kubernetes-validations": [{ rule }] }),
      });
    expect(
      () => new MemoryApiServer({ resources: [ruled("quantity(self.a).isGreaterThan(quantity('1'))")] }),
    ).toThrow(
      `the CEL rule "quantity(self.a).isGreaterThan(quantity('1'))" at spec (it uses the CEL function isGreaterThan())`,
    );
    expect(() => new MemoryApiServer({ resources: [ruled("self.?a.orValue('') != ''")] })).toThrow(
      "(it uses optional types",
    );
    expect(() => new MemoryApiServer({ resources: [ruled("sets.contains([self.a], ['x'])")] })).toThrow(
      "(it uses the CEL function sets.contains())",
    );
    expect(() => new MemoryApiServer({ resources: [ruled("self.a.size() > 0")] })).not.toThrow();
    const optional = defineResource({
      group: "unit.kubeloop.dev",
      version: "v1",
      kind: "Optional",
      spec: Type.Object(
        { a: Type.String() },
        { "x-kubernetes-validations": [{ rule: "self.a != ''", optionalOldSelf: true }] },
      ),
    });
    expect(() => new MemoryApiServer({ resources: [optional] })).toThrow("(it uses optionalOldSelf");
  });

  it("counts generations only for spec changes of a custom resource with a status subresource", async () => {
    const server = new MemoryApiServer({ resources: [Gadget] });
    const client = server.client();
    const created = await client.create(gadget("g", { size: 1 }));
    expect(created.metadata.generation).toBe(1);
    await client.patch(
      Gadget,
      "g",
      { status: { ready: true } },
      { namespace: "default", subresource: "status" },
    );
    await client.patch(Gadget, "g", { metadata: { labels: { a: "b" } } }, { namespace: "default" });
    const patched = await client.patch(Gadget, "g", { spec: { size: 3 } }, { namespace: "default" });
    expect(patched.metadata?.generation).toBe(2);
    expect(patched.status?.ready).toBe(true);
  });
});

describe("built-in kinds listed but not emulated", () => {
  it("a Service create is refused with NotEmulated naming Service and pointing at ControlPlane", async () => {
    const client = new MemoryApiServer().client();
    const error = await client
      .create({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "s", namespace: "default" },
        spec: { ports: [{ port: 80 }] },
      } as KubeObject)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotEmulated);
    expect((error as Error).message).toMatch(/built-in kind Service \(v1, resource services\)/);
    expect((error as Error).message).toMatch(/new ControlPlane\(\)\.start\(\)/);
  });

  it("discovery resolves StatefulSet in apps/v1; a list of them is refused", async () => {
    const client = new MemoryApiServer().client();
    const StatefulSet = resourceType("apps/v1", "StatefulSet");
    expect(await client.resolve(StatefulSet)).toMatchObject({ resource: "statefulsets", namespaced: true });
    await expect(client.list(StatefulSet, { namespace: "default" })).rejects.toThrow(
      /built-in kind StatefulSet \(apps\/v1, resource statefulsets\)/,
    );
  });

  it("a watch and a seed of a listed kind are refused too", async () => {
    const server = new MemoryApiServer();
    await expect(
      server.stream({
        method: "GET",
        path: "/apis/batch/v1/namespaces/default/jobs",
        query: { watch: true },
        inactivityTimeoutMs: 60_000,
      }),
    ).rejects.toThrow(/built-in kind Job \(batch\/v1, resource jobs\)/);
    expect(() =>
      server.seed({
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: "p", namespace: "default" },
      } as KubeObject),
    ).toThrow(/built-in kind PodDisruptionBudget \(policy\/v1\)/);
  });

  it("a resource kube-apiserver does not serve is still a 404", async () => {
    const client = new MemoryApiServer().client();
    await expect(client.transport.request({ method: "GET", path: "/api/v1/nopes" })).rejects.toBeInstanceOf(
      NotFound,
    );
  });

  it("every emulated built-in kind is listed in the captured discovery with its resource and scope", () => {
    for (const kind of builtinKinds()) {
      expect(listedBuiltin(kind.group, kind.version, kind.resource), `${kind.kind} in ${kind.group}`).toBe(
        kind.kind,
      );
      const items = kind.group ? BUILTIN_DISCOVERY.groups.items : BUILTIN_DISCOVERY.core.items;
      const listed = items
        .filter((item) => (kind.group ? item.metadata.name === kind.group : true))
        .flatMap((item) => item.versions.filter((v) => v.version === kind.version))
        .flatMap((v) => v.resources)
        .find((r) => r.resource === kind.resource);
      expect(listed?.scope).toBe(kind.namespaced ? "Namespaced" : "Cluster");
      expect(listed?.shortNames).toEqual(kind.shortNames);
    }
  });
});
