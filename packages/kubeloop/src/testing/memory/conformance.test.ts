import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "../../client/client.js";
import type { ApiError, StatusCause } from "../../client/errors.js";
import { type KubeObject, resourceType } from "../../client/types.js";
import { defineResource } from "../../resources/define-resource.js";
import { ControlPlane } from "../control-plane.js";
import { BUILTIN_DISCOVERY } from "./builtin-discovery.js";
import { readDiscovery } from "./capture-discovery.js";
import { NotEmulated } from "./errors.js";
import type { DiscoveryDocument } from "./kinds.js";
import { MemoryApiServer } from "./server.js";

// Differential conformance: every case runs the same requests against the real kube-apiserver
// (ControlPlane, apiserver profile: no kube-controller-manager) and the in-memory server (with its
// controllers off, to match), and compares the answers (objects, errors with their messages and
// causes, watch event sequences) after normalising uids, timestamps and resourceVersion values.
// A divergence fails. Cases for features the memory server refuses assert the refusal there.

const Widget = defineResource({
  group: "conformance.kubeloop.dev",
  version: "v1",
  kind: "Widget",
  spec: Type.Object({
    size: Type.Integer({ minimum: 0, maximum: 10, default: 1 }),
    color: Type.Optional(Type.Union([Type.Literal("red"), Type.Literal("blue")])),
    name: Type.Optional(Type.String({ minLength: 2, maxLength: 8, pattern: "^[a-z]+$" })),
    tags: Type.Optional(Type.Array(Type.String(), { maxItems: 3 })),
  }),
  status: Type.Object({ ready: Type.Optional(Type.Boolean()), count: Type.Optional(Type.Integer()) }),
});

/** A kind whose objects are free-form: the schema's root preserves unknown fields (a CrdLike without apiVersion and kind). */
const BAG_CRD = {
  metadata: { name: "bags.conformance.kubeloop.dev" },
  spec: {
    group: "conformance.kubeloop.dev",
    scope: "Namespaced" as const,
    names: { plural: "bags", kind: "Bag" },
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

let plane: ControlPlane;
let real: Client;
let memory: Client;
let memoryServer: MemoryApiServer;
let counter = 0;

beforeAll(async () => {
  plane = await new ControlPlane().start();
  real = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  const bag = { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", ...BAG_CRD };
  await plane.installCrdObjects([Widget.crd() as never, bag as never]);
  memoryServer = new MemoryApiServer({ controllers: false, resources: [Widget, BAG_CRD] });
  memory = memoryServer.client();
}, 120_000);
afterAll(async () => {
  for (const client of userClients) await client.close();
  await real?.close();
  await plane?.stop();
});

type Trace = unknown[];
/** `as(user, groups)`: a client of the same server acting as that user (impersonation, as `kubectl --as`). */
type As = (user: string, groups?: string[]) => Promise<Client>;
type Case = (client: Client, ns: string, trace: Trace, as: As) => Promise<void>;

const userClients: Client[] = [];
const asOn =
  (server: "real" | "memory"): As =>
  async (user, groups) => {
    const client =
      server === "real"
        ? await Client.connect({
            kubeconfig: plane.kubeconfigPath,
            impersonate: { user, ...(groups ? { groups } : {}) },
          })
        : memoryServer.client({ user, ...(groups ? { groups } : {}) });
    userClients.push(client);
    return client;
  };

/** Runs `body`, recording its answer or its error (code, reason, message, causes). */
async function step(trace: Trace, body: () => Promise<unknown>): Promise<unknown> {
  try {
    const result = await body();
    trace.push(result);
    return result;
  } catch (error) {
    if (error instanceof NotEmulated) throw error;
    const e = error as ApiError;
    trace.push({
      error: { code: e.code, reason: e.reason, ...unordered(e.message, e.status?.details?.causes) },
    });
    return undefined;
  }
}

/**
 * kube-apiserver lists several schema errors in no fixed order (Go map iteration): compare the
 * causes as a set, and the message as its prefix plus a check that it names every cause.
 */
function unordered(
  message: string,
  causes: StatusCause[] | undefined,
): { message: string; causes?: StatusCause[] } {
  if (!causes || causes.length < 2) return { message, ...(causes ? { causes } : {}) };
  const sorted = [...causes].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  const list = message.indexOf(": [");
  if (list < 0) return { message, causes: sorted };
  const named = causes.every((c) => message.includes(`${c.field}: ${c.message}`));
  return {
    message: `${message.slice(0, list)}: [${named ? "every cause" : "NOT every cause"}]`,
    causes: sorted,
  };
}

/** uids, timestamps, resourceVersions and continue tokens → stable placeholders (same value, same placeholder). */
function normalise(value: unknown): unknown {
  const uids = new Map<string, string>();
  const rvs = new Map<string, string>();
  const rv = (v: string) => {
    if (!rvs.has(v)) rvs.set(v, `rv-${rvs.size + 1}`);
    return rvs.get(v);
  };
  const walk = (node: unknown, key = ""): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n));
    if (node && typeof node === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(node)) {
        if (k === "managedFields") continue;
        out[k] = walk(v, k);
      }
      return out;
    }
    if (typeof node !== "string") return node;
    if (key === "uid") {
      if (!uids.has(node)) uids.set(node, `uid-${uids.size + 1}`);
      return uids.get(node);
    }
    if (key === "resourceVersion") return rv(node);
    if (key === "continue") return node ? "<continue>" : node;
    if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(node)) return "<time>";
    return node
      .replace(/too old resource version: \d+ \(\d+\)/, "too old resource version: <rv>")
      .replace(/in record \(\d+\)/, "in record (<rv>)");
  };
  return walk(value);
}

async function runOn(client: Client, body: Case): Promise<Trace> {
  const ns = `conf-${counter}`;
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  const trace: Trace = [];
  await body(client, ns, trace, asOn(client === real ? "real" : "memory"));
  return normalise(trace) as Trace;
}

/** One differential case: the same trace from both servers. */
function conformance(name: string, body: Case): void {
  it(name, async () => {
    counter++;
    const expected = await runOn(real, body);
    const actual = await runOn(memory, body);
    expect(actual).toEqual(expected);
  });
}

/** A case the memory server refuses: the real server answers, the memory server throws NotEmulated naming the feature. */
function refused(name: string, feature: RegExp, body: Case): void {
  it(`${name} (refused in memory)`, async () => {
    counter++;
    await runOn(real, body);
    await expect(runOn(memory, body)).rejects.toThrow(feature);
  });
}

// ---------------------------------------------------------------- kinds under test

interface KindCase {
  label: string;
  type: { apiVersion: string; kind: string };
  make(ns: string, name: string, variant?: number): KubeObject;
  /** A spec change (bumps generation where tracked). */
  change(object: KubeObject): KubeObject;
  mergePatch: object;
  strategic: boolean;
  status: boolean;
}

const labels = (variant: number) => ({
  app: "demo",
  tier: variant % 2 ? "web" : "db",
  index: String(variant),
});

/** The Widget `w` in `ns`, with `fields` (spec, status, anything) after its metadata. */
const widget = (ns: string, fields: object = {}) =>
  ({
    apiVersion: Widget.apiVersion,
    kind: "Widget",
    metadata: { name: "w", namespace: ns },
    ...fields,
  }) as KubeObject;

/** A kind under test: its objects are `type` with the test's metadata and `fields` (a fresh copy each time). */
function kindCase(
  label: string,
  type: { apiVersion: string; kind: string },
  fields: object,
  rest: Omit<KindCase, "label" | "type" | "make">,
): KindCase {
  return {
    label,
    type,
    make: (ns, name, v = 0) =>
      ({
        ...type,
        metadata: { name, namespace: ns, labels: labels(v) },
        ...structuredClone(fields),
      }) as KubeObject,
    ...rest,
  };
}

const KINDS: KindCase[] = [
  kindCase(
    "ConfigMap",
    { apiVersion: "v1", kind: "ConfigMap" },
    { data: { a: "1" } },
    {
      change: (o) => ({ ...o, data: { a: "2", b: "3" } }) as KubeObject,
      mergePatch: { data: { b: "x", a: null } },
      strategic: true,
      status: false,
    },
  ),
  kindCase(
    "Secret",
    { apiVersion: "v1", kind: "Secret" },
    { stringData: { password: "p" } },
    {
      change: (o) => ({ ...o, data: { password: Buffer.from("q").toString("base64") } }) as KubeObject,
      mergePatch: { metadata: { annotations: { note: "n" } } },
      strategic: true,
      status: false,
    },
  ),
  kindCase(
    "Deployment",
    { apiVersion: "apps/v1", kind: "Deployment" },
    {
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: {
            containers: [
              {
                name: "web",
                image: "nginx:1.27",
                ports: [{ containerPort: 8080, name: "http" }],
                readinessProbe: { httpGet: { path: "/", port: "http" } },
              },
            ],
          },
        },
      },
    },
    {
      change: (o) => ({ ...o, spec: { ...(o as { spec: object }).spec, replicas: 3 } }) as KubeObject,
      mergePatch: { spec: { replicas: 5 } },
      strategic: true,
      status: true,
    },
  ),
  kindCase(
    "Lease",
    { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
    { spec: { holderIdentity: "one", leaseDurationSeconds: 15 } },
    {
      change: (o) => ({ ...o, spec: { holderIdentity: "two", leaseDurationSeconds: 15 } }) as KubeObject,
      mergePatch: { spec: { holderIdentity: "three" } },
      strategic: true,
      status: false,
    },
  ),
  kindCase(
    "ServiceAccount",
    { apiVersion: "v1", kind: "ServiceAccount" },
    {},
    {
      change: (o) => ({ ...o, automountServiceAccountToken: false }) as KubeObject,
      mergePatch: { automountServiceAccountToken: true },
      strategic: true,
      status: false,
    },
  ),
  kindCase(
    "Widget (custom resource)",
    { apiVersion: Widget.apiVersion, kind: "Widget" },
    { spec: { color: "red" } },
    {
      change: (o) => ({ ...o, spec: { size: 4, color: "blue" } }) as KubeObject,
      mergePatch: { spec: { size: 7 } },
      strategic: false,
      status: true,
    },
  ),
];

for (const k of KINDS) {
  describe(`${k.label}`, () => {
    conformance("create then get", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () => c.get(k.type, "a", { namespace: ns }));
    });
    conformance("create twice: 409 AlreadyExists", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () => c.create(k.make(ns, "a")));
    });
    conformance("get a missing object: 404", async (c, ns, t) => {
      await step(t, () => c.get(k.type, "missing", { namespace: ns }));
    });
    conformance("create in a missing namespace: 404", async (c, _ns, t) => {
      await step(t, () => c.create(k.make("no-such-namespace", "a")));
    });
    for (const name of ["UPPER", "a_b", "-a", "a.", "x".repeat(254)])
      conformance(`create with invalid name ${name.slice(0, 10)}: 422`, async (c, ns, t) => {
        await step(t, () => c.create(k.make(ns, name)));
      });
    conformance("create with generateName", async (c, ns, t) => {
      const object = k.make(ns, "") as KubeObject & { metadata: Record<string, unknown> };
      object.metadata = { ...object.metadata, generateName: "gen-" };
      delete object.metadata.name;
      const created = (await c.create(object)) as KubeObject;
      t.push((created.metadata?.name ?? "").replace(/^gen-[a-z0-9]{5}$/, "gen-<suffix>"));
    });
    conformance("create without a name: 422", async (c, ns, t) => {
      const object = k.make(ns, "") as KubeObject & { metadata: Record<string, unknown> };
      delete object.metadata.name;
      await step(t, () => c.create(object));
    });
    conformance("create with an invalid label value: 422", async (c, ns, t) => {
      const object = k.make(ns, "a") as KubeObject & { metadata: Record<string, unknown> };
      object.metadata.labels = { bad: "-nope-" };
      await step(t, () => c.create(object));
    });
    conformance("update with the current resourceVersion", async (c, ns, t) => {
      const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
      await step(t, () => c.update(k.change(created)));
    });
    conformance("update with a stale resourceVersion: 409 Conflict", async (c, ns, t) => {
      const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
      await step(t, () => c.update(k.change(created)));
      await step(t, () => c.update(k.change(created)));
    });
    conformance("update without a resourceVersion", async (c, ns, t) => {
      const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
      const changed = k.change(created);
      const { resourceVersion: _dropped, ...metadata } = changed.metadata ?? {};
      await step(t, () => c.update({ ...changed, metadata }));
    });
    conformance("update of a missing object: 404", async (c, ns, t) => {
      await step(t, () =>
        c.update({ ...k.make(ns, "a"), metadata: { name: "a", namespace: ns, resourceVersion: "1" } }),
      );
    });
    conformance("update that changes nothing keeps the resourceVersion", async (c, ns, t) => {
      const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
      await step(t, () => c.update(created));
    });
    conformance("labels-only update leaves generation alone", async (c, ns, t) => {
      const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
      await step(t, () =>
        c.update({ ...created, metadata: { ...created.metadata, labels: { only: "labels" } } }),
      );
    });
    conformance("merge patch", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () => c.patch(k.type, "a", k.mergePatch, { namespace: ns }));
    });
    conformance("merge patch of a missing object: 404", async (c, ns, t) => {
      await step(t, () => c.patch(k.type, "a", k.mergePatch, { namespace: ns }));
    });
    conformance("merge patch with a stale resourceVersion: 409", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () =>
        c.patch(k.type, "a", { metadata: { resourceVersion: "1" }, ...k.mergePatch }, { namespace: ns }),
      );
    });
    conformance("JSON patch add and replace", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () =>
        c.patch(
          k.type,
          "a",
          [
            { op: "add", path: "/metadata/annotations", value: { x: "y" } },
            { op: "replace", path: "/metadata/labels/app", value: "other" },
          ],
          { namespace: ns, type: "json" },
        ),
      );
    });
    conformance("JSON patch remove", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () =>
        c.patch(k.type, "a", [{ op: "remove", path: "/metadata/labels/tier" }], {
          namespace: ns,
          type: "json",
        }),
      );
    });
    conformance("JSON patch whose test fails: 422", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () =>
        c.patch(k.type, "a", [{ op: "test", path: "/metadata/labels/app", value: "nope" }], {
          namespace: ns,
          type: "json",
        }),
      );
    });
    conformance("strategic merge patch (415 on custom resources)", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () =>
        c.patch(k.type, "a", { metadata: { labels: { s: "m" } } }, { namespace: ns, type: "strategic" }),
      );
    });
    conformance("delete, then get: 404", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () => c.delete(k.type, "a", { namespace: ns }));
      await step(t, () => c.get(k.type, "a", { namespace: ns }));
    });
    conformance("delete a missing object: 404", async (c, ns, t) => {
      await step(t, () => c.delete(k.type, "a", { namespace: ns }));
    });
    conformance("delete with a stale resourceVersion precondition: 409", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      await step(t, () => c.delete(k.type, "a", { namespace: ns, preconditions: { resourceVersion: "1" } }));
    });
    conformance(
      "delete with a finalizer: deletionTimestamp, then gone when it is removed",
      async (c, ns, t) => {
        const object = k.make(ns, "a");
        object.metadata = { ...object.metadata, finalizers: ["example.com/hold"] };
        await step(t, () => c.create(object));
        await step(t, () => c.delete(k.type, "a", { namespace: ns }));
        await step(t, () => c.get(k.type, "a", { namespace: ns }));
        await step(t, () => c.delete(k.type, "a", { namespace: ns }));
        await step(t, () =>
          c.patch(
            k.type,
            "a",
            { metadata: { finalizers: ["example.com/new", "example.com/hold"] } },
            { namespace: ns },
          ),
        );
        await step(t, () => c.patch(k.type, "a", { metadata: { finalizers: null } }, { namespace: ns }));
        await step(t, () => c.get(k.type, "a", { namespace: ns }));
      },
    );
    for (const policy of ["Foreground", "Orphan", "Background"] as const)
      conformance(
        `delete with propagationPolicy ${policy} (no garbage collector running)`,
        async (c, ns, t) => {
          await step(t, () => c.create(k.make(ns, "a")));
          await step(t, () => c.delete(k.type, "a", { namespace: ns, propagationPolicy: policy }));
          await step(t, () => c.get(k.type, "a", { namespace: ns }));
        },
      );
    for (const selector of [
      "app=demo",
      "tier=web",
      "tier!=web",
      "tier in (web,db)",
      "tier notin (web)",
      "index",
      "!index",
      "app=demo,tier=db",
      "missing=x",
      "index in (1,3)",
    ])
      conformance(`list with label selector ${selector}`, async (c, ns, t) => {
        for (let i = 0; i < 4; i++) await c.create(k.make(ns, `o${i}`, i));
        const list = await c.list(k.type, { namespace: ns, labelSelector: selector });
        t.push(
          list.items.map((i) => i.metadata?.name),
          list.kind,
          list.apiVersion,
        );
      });
    for (const selector of [
      "metadata.name=o1",
      "metadata.name!=o1",
      "metadata.namespace=default",
      "spec.nope=1",
    ])
      conformance(`list with field selector ${selector}`, async (c, ns, t) => {
        for (let i = 0; i < 3; i++) await c.create(k.make(ns, `o${i}`, i));
        await step(t, async () =>
          (await c.list(k.type, { namespace: ns, fieldSelector: selector })).items.map(
            (i) => i.metadata?.name,
          ),
        );
      });
    conformance("list pages: limit and continue", async (c, ns, t) => {
      for (let i = 0; i < 5; i++) await c.create(k.make(ns, `o${i}`, i));
      const first = await c.list(k.type, { namespace: ns, limit: 2 });
      t.push(
        first.items.map((i) => i.metadata?.name),
        first.metadata.remainingItemCount,
        Boolean(first.metadata.continue),
      );
      const second = await c.list(k.type, { namespace: ns, limit: 2, continue: first.metadata.continue });
      t.push(
        second.items.map((i) => i.metadata?.name),
        second.metadata.remainingItemCount,
      );
      const third = await c.list(k.type, { namespace: ns, limit: 2, continue: second.metadata.continue });
      t.push(
        third.items.map((i) => i.metadata?.name),
        third.metadata.continue ?? "",
        third.metadata.remainingItemCount,
      );
    });
    conformance("list items in full", async (c, ns, t) => {
      await c.create(k.make(ns, "a"));
      await step(t, () => c.list(k.type, { namespace: ns }));
    });
    conformance("list pages see the first page's snapshot", async (c, ns, t) => {
      for (let i = 0; i < 4; i++) await c.create(k.make(ns, `o${i}`, i));
      const first = await c.list(k.type, { namespace: ns, limit: 2 });
      await c.delete(k.type, "o3", { namespace: ns });
      await c.create(k.make(ns, "o4", 4));
      const second = await c.list(k.type, { namespace: ns, limit: 5, continue: first.metadata.continue });
      t.push(second.items.map((i) => i.metadata?.name));
    });
    conformance("watch from a resourceVersion: ADDED, MODIFIED, DELETED", async (c, ns, t) => {
      const start = await c.list(k.type, { namespace: ns });
      const created = await c.create(k.make(ns, "a"));
      await c.update(k.change(created));
      await c.delete(k.type, "a", { namespace: ns });
      const events: unknown[] = [];
      for await (const event of c.watch(k.type, {
        namespace: ns,
        resourceVersion: start.metadata.resourceVersion,
        allowBookmarks: false,
      })) {
        events.push(event);
        if (events.length === 3) break;
      }
      t.push(events);
    });
    conformance(
      "watch with a label selector: objects leaving it are DELETED, joining it ADDED",
      async (c, ns, t) => {
        const start = await c.list(k.type, { namespace: ns });
        const created = await c.create(k.make(ns, "a", 1));
        const moved = await c.patch(k.type, "a", { metadata: { labels: { tier: "db" } } }, { namespace: ns });
        await c.patch(k.type, "a", { metadata: { labels: { tier: "web" } } }, { namespace: ns });
        void created;
        void moved;
        const events: unknown[] = [];
        for await (const event of c.watch(k.type, {
          namespace: ns,
          resourceVersion: start.metadata.resourceVersion,
          labelSelector: "tier=web",
          allowBookmarks: false,
        })) {
          events.push({
            type: event.type,
            name: event.object.metadata?.name,
            tier: event.object.metadata?.labels?.tier,
          });
          if (events.length === 3) break;
        }
        t.push(events);
      },
    );
    conformance("watch without a resourceVersion starts with the current objects", async (c, ns, t) => {
      await c.create(k.make(ns, "a"));
      await c.create(k.make(ns, "b"));
      const events: unknown[] = [];
      for await (const event of c.watch(k.type, { namespace: ns, allowBookmarks: false })) {
        events.push({ type: event.type, name: event.object.metadata?.name });
        if (events.length === 2) break;
      }
      t.push(events.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))));
    });
    conformance("server-side apply creates, then updates, its fields", async (c, ns, t) => {
      const object = k.make(ns, "a");
      delete (object as { stringData?: unknown }).stringData;
      const applied = (await step(t, () => c.apply(object, { fieldManager: "one" }))) as KubeObject;
      t.push(applied?.metadata?.managedFields?.map((m) => [m.manager, m.operation]));
      const again = (await step(t, () =>
        c.apply(
          { ...object, metadata: { ...object.metadata, labels: { app: "demo" } } },
          { fieldManager: "one" },
        ),
      )) as KubeObject;
      t.push(
        again?.metadata?.managedFields?.map((m) => [m.manager, m.operation, JSON.stringify(m.fieldsV1)]),
      );
    });
    conformance("server-side apply by a second manager: 409 conflict, then force", async (c, ns, t) => {
      const object = k.make(ns, "a");
      delete (object as { stringData?: unknown }).stringData;
      await step(t, () => c.apply(object, { fieldManager: "one" }));
      const other = {
        ...object,
        metadata: { ...object.metadata, labels: { ...object.metadata?.labels, app: "mine" } },
      };
      await step(t, () => c.apply(other, { fieldManager: "two" }));
      const forced = (await step(t, () =>
        c.apply(other, { fieldManager: "two", force: true }),
      )) as KubeObject;
      t.push(forced?.metadata?.managedFields?.map((m) => [m.manager, m.operation]).sort());
    });
    conformance(
      "server-side apply after an update by another manager: conflict names it",
      async (c, ns, t) => {
        const object = k.make(ns, "a");
        delete (object as { stringData?: unknown }).stringData;
        await step(t, () => c.create(object, { fieldManager: "editor" }));
        await step(t, () =>
          c.apply(
            { ...object, metadata: { ...object.metadata, labels: { app: "applied" } } },
            { fieldManager: "applier" },
          ),
        );
      },
    );
    if (k.status) {
      conformance("status written through the main resource is ignored", async (c, ns, t) => {
        const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
        await step(t, () =>
          c.update({ ...created, status: { observedGeneration: 9, ready: true } } as KubeObject),
        );
      });
      conformance("status subresource: update changes status only", async (c, ns, t) => {
        const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
        const status =
          k.label === "Deployment" ? { replicas: 1, observedGeneration: 1 } : { ready: true, count: 2 };
        await step(t, () =>
          c.updateStatus({
            ...created,
            metadata: { ...created.metadata, labels: { changed: "yes" } },
            status,
          } as KubeObject),
        );
        await step(t, () => c.getStatus(k.type, "a", { namespace: ns }));
      });
      conformance("status subresource: merge patch", async (c, ns, t) => {
        await step(t, () => c.create(k.make(ns, "a")));
        const status = k.label === "Deployment" ? { replicas: 2 } : { count: 3 };
        await step(t, () => c.patch(k.type, "a", { status }, { namespace: ns, subresource: "status" }));
      });
    }
  });
}

describe("Widget schema: defaulting, pruning, validation", () => {
  const cases: [string, unknown][] = [
    ["size too large", { size: 11 }],
    ["size negative", { size: -1 }],
    ["size a string", { size: "three" }],
    ["size a float", { size: 1.5 }],
    ["color not in the enum", { color: "green" }],
    ["name too short", { name: "a" }],
    ["name too long", { name: "abcdefghij" }],
    ["name not matching the pattern", { name: "ABC" }],
    ["too many tags", { tags: ["a", "b", "c", "d"] }],
    ["a tag of the wrong type", { tags: [1] }],
    ["several errors at once", { size: 99, color: "green" }],
    ["unknown fields are pruned", { size: 2, unknown: "dropped", nested: { x: 1 } }],
    ["defaults fill in size", { color: "blue" }],
    ["an empty spec gets its defaults", {}],
    ["valid values", { size: 10, color: "red", name: "abc", tags: ["x"] }],
    ["spec null", null],
  ];
  for (const [label, spec] of cases)
    conformance(label, async (c, ns, t) => {
      await step(t, () => c.create(widget(ns, { spec })));
    });
  conformance("no spec at all gets the default spec", async (c, ns, t) => {
    await step(t, () => c.create(widget(ns)));
  });
  conformance("unknown top-level fields are pruned", async (c, ns, t) => {
    await step(t, () => c.create(widget(ns, { extra: 1, spec: {} })));
  });
  conformance("a schema whose root preserves unknown fields keeps every field", async (c, ns, t) => {
    const bag = {
      apiVersion: "conformance.kubeloop.dev/v1",
      kind: "Bag",
      metadata: { name: "b", namespace: ns },
    };
    await step(t, () =>
      c.create({ ...bag, spec: { a: 1, nested: { b: [1, 2] } }, extra: "kept" } as KubeObject),
    );
  });
  conformance("invalid update: 422", async (c, ns, t) => {
    const created = (await step(t, () => c.create(widget(ns, { spec: {} })))) as KubeObject;
    await step(t, () => c.update({ ...created, spec: { size: 50 } } as KubeObject));
  });
});

describe("Deployment validation", () => {
  conformance("selector not matching the template labels: 422", async (c, ns, t) => {
    const d = KINDS[2]?.make(ns, "d") as KubeObject & { spec: { selector: unknown } };
    d.spec.selector = { matchLabels: { app: "other" } };
    await step(t, () => c.create(d));
  });
  conformance("negative replicas: 422", async (c, ns, t) => {
    const d = KINDS[2]?.make(ns, "d") as KubeObject & { spec: { replicas: number } };
    d.spec.replicas = -1;
    await step(t, () => c.create(d));
  });
  conformance("image pull policy defaults by tag", async (c, ns, t) => {
    for (const [name, image] of [
      ["latest", "nginx:latest"],
      ["none", "nginx"],
      ["tagged", "nginx:1.27"],
    ] as const) {
      const d = KINDS[2]?.make(ns, name) as KubeObject & {
        spec: { template: { spec: { containers: { image: string }[] } } };
      };
      (d.spec.template.spec.containers[0] as { image: string }).image = image;
      await step(t, () => c.create(d));
    }
  });
  conformance("strategic merge patch merges containers by name", async (c, ns, t) => {
    await step(t, () => c.create(KINDS[2]?.make(ns, "d") as KubeObject));
    await step(t, () =>
      c.patch(
        resourceType("apps/v1", "Deployment"),
        "d",
        {
          spec: {
            template: {
              spec: {
                containers: [
                  { name: "web", image: "nginx:1.28" },
                  { name: "side", image: "busybox:1" },
                ],
              },
            },
          },
        },
        { namespace: ns, type: "strategic" },
      ),
    );
  });
  conformance(
    "apply merges as the kind's schema says: spread constraints by topologyKey and whenUnsatisfiable, nodeSelector whole",
    async (c, ns, t) => {
      type PodTemplated = KubeObject & { spec: { template: { spec: Record<string, unknown> } } };
      const spread = (whenUnsatisfiable: string) => ({
        maxSkew: 1,
        topologyKey: "zone",
        whenUnsatisfiable,
        labelSelector: { matchLabels: { app: "web" } },
      });
      const d = KINDS[2]?.make(ns, "d") as PodTemplated;
      d.spec.template.spec.topologySpreadConstraints = [spread("DoNotSchedule")];
      d.spec.template.spec.nodeSelector = { disk: "ssd" };
      await step(t, () => c.apply(d, { fieldManager: "one" }));
      const second = {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "d", namespace: ns },
        spec: {
          template: {
            spec: { topologySpreadConstraints: [spread("ScheduleAnyway")], nodeSelector: { gpu: "yes" } },
          },
        },
      };
      await step(t, () => c.apply(second, { fieldManager: "two" })); // nodeSelector is one's, whole: 409
      const forced = (await step(t, () =>
        c.apply(second, { fieldManager: "two", force: true }),
      )) as PodTemplated;
      t.push(forced?.spec.template.spec.topologySpreadConstraints, forced?.spec.template.spec.nodeSelector);
    },
  );
});

describe("Namespaces", () => {
  conformance("a namespace gets its name label, finalizer and phase", async (c, ns, t) => {
    await step(t, () => c.get(resourceType("v1", "Namespace"), ns));
  });
  conformance("deleting a namespace leaves it Terminating; creating in it is forbidden", async (c, ns, t) => {
    await step(t, () => c.delete(resourceType("v1", "Namespace"), ns));
    await step(t, () =>
      c.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "late", namespace: ns } }),
    );
  });
});

describe("Refused features", () => {
  refused("dry-run", /dry-run/, async (c, ns) => {
    await c.create(
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: ns } },
      { dryRun: true },
    );
  });
  refused("scale subresource", /scale subresource/, async (c, ns) => {
    await c.create(KINDS[2]?.make(ns, "d") as KubeObject);
    await c.getScale(resourceType("apps/v1", "Deployment"), "d", { namespace: ns });
  });
  refused("writes of pods", /writes of pods/, async (c, ns) => {
    await c.create({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: ns },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
  });
  conformance("pods can be read (an empty list)", async (c, ns, t) => {
    await step(t, async () => (await c.list(resourceType("v1", "Pod"), { namespace: ns })).items);
  });
  // Built-in kinds that are listed in discovery (as the real server lists them) but not emulated.
  refused("a Service create", /built-in kind Service \(v1, resource services\)/, async (c, ns) => {
    await c.create({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s", namespace: ns },
      spec: { ports: [{ port: 80 }], selector: { app: "web" } },
    } as KubeObject);
  });
  refused(
    "a StatefulSet list",
    /built-in kind StatefulSet \(apps\/v1, resource statefulsets\)/,
    async (c, ns) => {
      await c.list(resourceType("apps/v1", "StatefulSet"), { namespace: ns });
    },
  );
  refused("a Job get", /built-in kind Job \(batch\/v1, resource jobs\)/, async (c, ns) => {
    await c.get(resourceType("batch/v1", "Job"), "missing", { namespace: ns }).catch((error) => {
      if ((error as ApiError).code !== 404) throw error;
    });
  });
});

describe("Discovery of built-in kinds", () => {
  const builtinOnly = (document: DiscoveryDocument): DiscoveryDocument => ({
    ...document,
    items: document.items.filter((item) => item.metadata.name !== Widget.group),
  });

  it("the captured discovery (builtin-discovery.json) is what the live kube-apiserver serves", async () => {
    const live = (await readDiscovery(real)) as { core: DiscoveryDocument; groups: DiscoveryDocument };
    // On a mismatch, regenerate it: see capture-discovery.ts.
    expect({ core: live.core, groups: builtinOnly(live.groups) }).toEqual(BUILTIN_DISCOVERY);
  });

  it("the memory server serves the same discovery for every built-in group", async () => {
    const live = (await readDiscovery(real)) as { core: DiscoveryDocument; groups: DiscoveryDocument };
    const served = (await readDiscovery(memory)) as { core: DiscoveryDocument; groups: DiscoveryDocument };
    expect(served.core).toEqual(live.core);
    expect(builtinOnly(served.groups)).toEqual(builtinOnly(live.groups));
  });

  for (const [apiVersion, kind] of [
    ["apps/v1", "StatefulSet"],
    ["apps/v1", "Deployment"],
    ["v1", "Service"],
    ["batch/v1", "CronJob"],
    ["policy/v1", "PodDisruptionBudget"],
    ["autoscaling/v2", "HorizontalPodAutoscaler"],
  ] as const)
    conformance(`${kind} in ${apiVersion} resolves as on the real server`, async (c, _ns, t) => {
      await step(t, () => c.resolve(resourceType(apiVersion, kind)));
    });
});

describe("RBAC: requests as a user", () => {
  const Role = resourceType("rbac.authorization.k8s.io/v1", "Role");
  const ConfigMapType = resourceType("v1", "ConfigMap");
  const SecretType = resourceType("v1", "Secret");
  const NamespaceType = resourceType("v1", "Namespace");
  const DeploymentType = resourceType("apps/v1", "Deployment");
  const rbac = "rbac.authorization.k8s.io/v1";
  const role = (ns: string, name: string, rules: object[]) => ({
    apiVersion: rbac,
    kind: "Role",
    metadata: { name, namespace: ns },
    rules,
  });
  const binding = (
    ns: string,
    name: string,
    roleRef: { kind: string; name: string },
    subjects: object[],
  ) => ({
    apiVersion: rbac,
    kind: "RoleBinding",
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", ...roleRef },
    subjects,
  });
  const alice = [{ kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" }];
  void Role;

  conformance(
    "a user without a role: 403 on every verb, namespaced and cluster-wide",
    async (c, ns, t, as) => {
      await c.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: ns } });
      const u = await as("nobody");
      await step(t, () => u.list(ConfigMapType, { namespace: ns }));
      await step(t, () => u.get(ConfigMapType, "a", { namespace: ns }));
      await step(t, () =>
        u.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "b", namespace: ns } }),
      );
      await step(t, () => u.delete(ConfigMapType, "a", { namespace: ns }));
      await step(t, () => u.patch(ConfigMapType, "a", { data: { x: "y" } }, { namespace: ns }));
      await step(t, () => u.list(NamespaceType));
      await step(t, () => u.get(NamespaceType, ns));
    },
  );

  conformance(
    "a Role that allows get and list of configmaps: those pass, the rest is 403",
    async (c, ns, t, as) => {
      await c.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: ns } });
      await c.create(
        role(ns, "reader", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }]),
      );
      await c.create(binding(ns, "alice-reads", { kind: "Role", name: "reader" }, alice));
      const u = await as("alice");
      await step(t, async () =>
        (await u.list(ConfigMapType, { namespace: ns })).items.map((i) => i.metadata?.name),
      );
      await step(t, async () => (await u.get(ConfigMapType, "a", { namespace: ns })).metadata?.name);
      await step(t, () =>
        u.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "b", namespace: ns } }),
      );
      await step(t, () => u.list(SecretType, { namespace: ns }));
      await step(t, () => u.list(ConfigMapType, { namespace: "default" }));
    },
  );

  conformance("resourceNames restrict a rule to named objects", async (c, ns, t, as) => {
    for (const name of ["a", "b"])
      await c.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns } });
    await c.create(
      role(ns, "only-a", [
        { apiGroups: [""], resources: ["configmaps"], resourceNames: ["a"], verbs: ["get"] },
      ]),
    );
    await c.create(binding(ns, "alice-a", { kind: "Role", name: "only-a" }, alice));
    const u = await as("alice");
    await step(t, async () => (await u.get(ConfigMapType, "a", { namespace: ns })).metadata?.name);
    await step(t, () => u.get(ConfigMapType, "b", { namespace: ns }));
    await step(t, () => u.list(ConfigMapType, { namespace: ns }));
  });

  conformance("a ClusterRole bound in one namespace, through a Group", async (c, ns, t, as) => {
    await c.create({
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name: `${ns}-deployments` },
      rules: [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["list", "get"] }],
    });
    await c.create(
      binding(ns, "team", { kind: "ClusterRole", name: `${ns}-deployments` }, [
        { kind: "Group", name: "team", apiGroup: "rbac.authorization.k8s.io" },
      ]),
    );
    const u = await as("bob", ["team"]);
    await step(t, async () => (await u.list(DeploymentType, { namespace: ns })).items);
    await step(t, () => u.list(DeploymentType, { namespace: "default" }));
    await step(t, () => u.list(DeploymentType));
    const stranger = await as("carol", ["other"]);
    await step(t, () => stranger.list(DeploymentType, { namespace: ns }));
  });

  conformance("the status subresource is a resource of its own", async (c, ns, t, as) => {
    await c.create(KINDS[2]?.make(ns, "d") as KubeObject);
    await c.create(
      role(ns, "deployer", [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "patch"] }]),
    );
    await c.create(binding(ns, "alice-deploys", { kind: "Role", name: "deployer" }, alice));
    const u = await as("alice");
    await step(
      t,
      async () =>
        (await u.patch(DeploymentType, "d", { metadata: { labels: { x: "y" } } }, { namespace: ns })).metadata
          ?.labels,
    );
    await step(t, () =>
      u.patch(DeploymentType, "d", { status: { replicas: 1 } }, { namespace: ns, subresource: "status" }),
    );
  });

  conformance("a ClusterRoleBinding for a service account, cluster-wide", async (c, ns, t, as) => {
    await c.create({
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name: `${ns}-ns-reader` },
      rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get"] }],
    });
    await c.create({
      apiVersion: rbac,
      kind: "ClusterRoleBinding",
      metadata: { name: `${ns}-bot` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${ns}-ns-reader` },
      subjects: [{ kind: "ServiceAccount", name: "bot", namespace: ns }],
    });
    const u = await as(`system:serviceaccount:${ns}:bot`);
    await step(t, async () => (await u.get(NamespaceType, ns)).metadata?.name);
    await step(t, () => u.list(NamespaceType));
  });
});
