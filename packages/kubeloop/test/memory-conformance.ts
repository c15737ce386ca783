import Type from "typebox";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Client } from "../src/client/client.js";
import type { ApiError, StatusCause } from "../src/client/errors.js";
import type { KubeObject } from "../src/client/types.js";
import { defineResource } from "../src/resources/define-resource.js";
import { ControlPlane } from "../src/testing/control-plane.js";
import { NotEmulated } from "../src/testing/memory/errors.js";
import { MemoryApiServer } from "../src/testing/memory/server.js";

// The harness of the memory API server's differential conformance tests
// (src/testing/memory/conformance*.test.ts): every case runs the same requests against the real
// kube-apiserver (ControlPlane, apiserver profile: no kube-controller-manager) and the in-memory
// server (with its controllers off, to match), and compares the answers (objects, errors with their
// messages and causes, watch event sequences) after normalising uids, timestamps and resourceVersion
// values. A divergence fails. Cases for features the memory server refuses assert the refusal there.

export const Widget = defineResource({
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
export const BAG_CRD = {
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

/**
 * Starts both servers for the test file that calls it (one real API server per file): the real one
 * with Widget's and Bag's CRDs installed, the memory one with the same kinds and its controllers off.
 */
export function useServers(): void {
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
}

/** The clients of the two servers, for the tests that read them directly. */
export function servers(): { real: Client; memory: Client } {
  return { real, memory };
}

export type Trace = unknown[];
/** `as(user, groups)`: a client of the same server acting as that user (impersonation, as `kubectl --as`). */
export type As = (user: string, groups?: string[]) => Promise<Client>;
export type Case = (client: Client, ns: string, trace: Trace, as: As) => Promise<void>;

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
export async function step(trace: Trace, body: () => Promise<unknown>): Promise<unknown> {
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
export function normalise(value: unknown): unknown {
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
export function conformance(name: string, body: Case): void {
  it(name, async () => {
    counter++;
    const expected = await runOn(real, body);
    const actual = await runOn(memory, body);
    expect(actual).toEqual(expected);
  });
}

/** A case the memory server refuses: the real server answers, the memory server throws NotEmulated naming the feature. */
export function refused(name: string, feature: RegExp, body: Case): void {
  it(`${name} (refused in memory)`, async () => {
    counter++;
    await runOn(real, body);
    await expect(runOn(memory, body)).rejects.toThrow(feature);
  });
}

// ---------------------------------------------------------------- kinds under test

export interface KindCase {
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
export const widget = (ns: string, fields: object = {}) =>
  ({
    apiVersion: Widget.apiVersion,
    kind: "Widget",
    metadata: { name: "w", namespace: ns },
    ...fields,
  }) as KubeObject;

/** A kind under test: its objects are `type` with the test's metadata and `fields` (a fresh copy each time). */
export function kindCase(
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

export const KINDS: KindCase[] = [
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
