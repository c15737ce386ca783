import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection, startPlane, stopPlane } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { type KubeObject, resourceType } from "../client/types.js";
import type { ControlPlane } from "../testing/control-plane.js";
import type { CrdObject } from "../testing/crds.js";
import { migrateStorageVersion, retireVersion, StorageMigrationError } from "./storage-migration.js";

// Against a real API server and its etcd: "stored as v1" is read from etcd itself, not inferred.

let plane: ControlPlane;
let client: Client;

const GROUP = "migrate.kubeloop.dev";
const schema = {
  openAPIV3Schema: {
    type: "object",
    properties: {
      spec: { type: "object", properties: { size: { type: "integer" }, note: { type: "string" } } },
    },
  },
};

/** A CRD `<plural>.migrate.kubeloop.dev` with v1alpha1 and v1 (identical schemas, no conversion needed). */
function crd(plural: string, storage: "v1alpha1" | "v1"): CrdObject {
  const kind = `${plural[0]?.toUpperCase()}${plural.slice(1, -1)}`;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: { plural, singular: plural.slice(0, -1), kind, listKind: `${kind}List` },
      versions: ["v1alpha1", "v1"].map((name) => ({ name, served: true, storage: name === storage, schema })),
    } as unknown as CrdObject["spec"],
  };
}

const CRDS = resourceType<CrdObject & KubeObject>("apiextensions.k8s.io/v1", "CustomResourceDefinition", {
  plural: "customresourcedefinitions",
  namespaced: false,
});

/** The apiVersion each object of `plural` is stored in, read from etcd: `{ "ns/name": "…/v1alpha1" }`. */
async function storedVersions(plural: string): Promise<Record<string, string>> {
  const prefix = `/registry/${GROUP}/${plural}/`;
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const response = await fetch(`${plane.etcdUrl}/v3/kv/range`, {
    method: "POST",
    body: JSON.stringify({ key: b64(prefix), range_end: b64(end) }),
  });
  const body = (await response.json()) as { kvs?: { key: string; value: string }[] };
  const result: Record<string, string> = {};
  for (const kv of body.kvs ?? []) {
    const key = Buffer.from(kv.key, "base64").toString().slice(prefix.length);
    result[key] = (
      JSON.parse(Buffer.from(kv.value, "base64").toString()) as { apiVersion: string }
    ).apiVersion;
  }
  return result;
}

/** Installs `plural` stored as v1alpha1 with `count` objects in two namespaces, then makes v1 the storage version. */
async function storedInV1alpha1(plural: string, count: number) {
  await plane.installCrdObjects([crd(plural, "v1alpha1")]);
  const kind = crd(plural, "v1alpha1").spec.names.kind;
  for (const ns of [`${plural}-a`, `${plural}-b`])
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  for (let i = 0; i < count; i++) {
    await client.create({
      apiVersion: `${GROUP}/v1alpha1`,
      kind,
      metadata: { name: `o${i}`, namespace: `${plural}-${i % 2 ? "b" : "a"}` },
      spec: { size: i, note: `object ${i}` },
    } as KubeObject);
  }
  await plane.installCrdObjects([crd(plural, "v1")]);
  return resourceType(`${GROUP}/v1`, kind, { plural, namespaced: true });
}

const getCrd = (plural: string) => client.get({ type: CRDS, name: `${plural}.${GROUP}` });

beforeAll(async () => ({ plane, client } = await startPlane()));
afterAll(() => stopPlane(plane, client));

describe("migrateStorageVersion", () => {
  it("rewrites every object in the storage version under concurrent writes, trims storedVersions, then stops serving the old version", async () => {
    const type = await storedInV1alpha1("widgets", 11);
    expect(new Set(Object.values(await storedVersions("widgets")))).toEqual(new Set([`${GROUP}/v1alpha1`]));
    expect((await getCrd("widgets")).status).toMatchObject({ storedVersions: ["v1alpha1", "v1"] });

    // A writer that keeps changing objects (and deletes one) while the migration runs.
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      await client.delete(type, "o10", { namespace: "widgets-a" });
      while (writing) {
        const i = writes++ % 10;
        await client.patch(
          type,
          `o${i}`,
          { metadata: { labels: { touched: String(writes) } } },
          {
            namespace: `widgets-${i % 2 ? "b" : "a"}`,
          },
        );
      }
    })();
    const pages: (string | undefined)[] = [];
    const result = await migrateStorageVersion(client, `widgets.${GROUP}`, {
      retire: ["v1alpha1"],
      pageSize: 3,
      onProgress: (p) => {
        pages.push(p.continue);
      },
    });
    writing = false;
    await writer;

    expect(pages.length).toBeGreaterThanOrEqual(4); // 10–11 objects, 3 a page
    expect(pages.at(-1)).toBeUndefined();
    expect(result.rewritten + result.skipped).toBeGreaterThanOrEqual(10);
    expect(result).toMatchObject({
      storageVersion: "v1",
      storedVersionsBefore: ["v1alpha1", "v1"],
      storedVersions: ["v1"],
      unserved: ["v1alpha1"],
    });
    const stored = await storedVersions("widgets");
    expect(Object.keys(stored)).toHaveLength(10);
    expect(new Set(Object.values(stored))).toEqual(new Set([`${GROUP}/v1`]));
    const after = await getCrd("widgets");
    expect(after.status).toMatchObject({ storedVersions: ["v1"] });
    expect(after.spec.versions.map((v) => `${v.name}:${v.served}`)).toEqual(["v1alpha1:false", "v1:true"]);
    // No field changed: each object still has its data.
    const objects = (await client.list(type)).items as (KubeObject & {
      spec: { size: number; note: string };
    })[];
    for (const o of objects) expect(o.spec.note).toBe(`object ${o.spec.size}`);
    expect(objects).toHaveLength(10);
  });

  it("refuses a version that does not exist, or the storage version, and changes nothing", async () => {
    await storedInV1alpha1("gadgets", 2);
    const before = await getCrd("gadgets");
    const missing = await rejection(migrateStorageVersion(client, `gadgets.${GROUP}`, { retire: ["v2"] }));
    expect(missing).toBeInstanceOf(StorageMigrationError);
    expect(missing.message).toBe(
      `gadgets.${GROUP} has no version "v2"; its versions are v1alpha1, v1. Nothing was changed.`,
    );
    const storage = await rejection(migrateStorageVersion(client, `gadgets.${GROUP}`, { retire: ["v1"] }));
    expect(storage.message).toMatch(/v1 is the storage version; make another version the storage version/);
    const unknown = await rejection(migrateStorageVersion(client, `nothing.${GROUP}`));
    expect(unknown.message).toMatch(/CustomResourceDefinition nothing\.migrate\.kubeloop\.dev not found/);
    expect((await getCrd("gadgets")).metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(new Set(Object.values(await storedVersions("gadgets")))).toEqual(new Set([`${GROUP}/v1alpha1`]));
  });

  it("refuses to retire a version that still has stored objects", async () => {
    await storedInV1alpha1("gizmos", 1);
    const refused = await rejection(retireVersion(client, `gizmos.${GROUP}`, "v1alpha1"));
    expect(refused.message).toMatch(/v1alpha1 is still in status\.storedVersions \(v1alpha1, v1\)/);
    expect(refused.message).toContain("kubeloop migrate gizmos.migrate.kubeloop.dev");
    expect((await getCrd("gizmos")).spec.versions.every((v) => v.served)).toBe(true);
  });

  it("resumes a stopped run from its continue token, rewriting only the objects not done yet", async () => {
    await storedInV1alpha1("sprockets", 6);
    const stop = new AbortController();
    let token: string | undefined;
    const stopped = await rejection(
      migrateStorageVersion(client, `sprockets.${GROUP}`, {
        pageSize: 2,
        signal: stop.signal,
        onProgress: (p) => {
          token = p.continue;
          stop.abort(new Error("stopped after the first page"));
        },
      }),
    );
    expect(stopped.message).toBe("stopped after the first page");
    expect(token).toBeTruthy();
    expect(Object.values(await storedVersions("sprockets")).filter((v) => v.endsWith("/v1"))).toHaveLength(2);
    expect((await getCrd("sprockets")).status).toMatchObject({ storedVersions: ["v1alpha1", "v1"] });
    const resumed = await migrateStorageVersion(client, `sprockets.${GROUP}`, {
      pageSize: 2,
      continue: token ?? "",
    });
    expect(resumed).toMatchObject({ rewritten: 4, storedVersions: ["v1"] });
    expect(new Set(Object.values(await storedVersions("sprockets")))).toEqual(new Set([`${GROUP}/v1`]));
  });

  it("leaves storedVersions alone when the CRD changed during the run, and a second run finishes", async () => {
    await storedInV1alpha1("doodads", 4);
    const failed = await rejection(
      migrateStorageVersion(client, `doodads.${GROUP}`, {
        pageSize: 2,
        onProgress: async () => {
          // e.g. another release installing its CRD mid-run
          const current = await getCrd("doodads");
          const versions = (current.spec as unknown as { versions: { deprecated?: boolean }[] }).versions;
          versions[0] = { ...versions[0], deprecated: true };
          await client.update(current);
        },
      }),
    );
    expect(failed.message).toMatch(/changed during the migration \(generation \d+ → \d+\)/);
    expect((await getCrd("doodads")).status).toMatchObject({ storedVersions: ["v1alpha1", "v1"] });
    const again = await migrateStorageVersion(client, `doodads.${GROUP}`);
    expect(again).toMatchObject({ rewritten: 4, storedVersions: ["v1"], unserved: [] });
  });
});

describe("kubeloop migrate", () => {
  const cli = join(import.meta.dirname, "../../dist/cli/main.js");
  const run = (args: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [cli, "migrate", ...args], {
        env: { ...process.env, KUBECONFIG: plane.kubeconfigPath },
      });
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d;
      });
      child.stderr.on("data", (d: Buffer) => {
        out += d;
      });
      child.on("close", (code) => resolve({ code, out }));
    });

  it("migrates and retires from the command line, and names a version that does not exist", async () => {
    await storedInV1alpha1("things", 3);
    const missing = await run([`things.${GROUP}`, "--retire", "v0"]);
    expect(missing.code).toBe(1);
    expect(missing.out).toContain(
      `kubeloop: things.${GROUP} has no version "v0"; its versions are v1alpha1, v1.`,
    );
    const done = await run([`things.${GROUP}`, "--retire", "v1alpha1", "--page-size", "2"]);
    expect(done.code, done.out).toBe(0);
    expect(done.out).toContain("(resume with --continue ");
    expect(done.out).toContain(
      "3 objects stored as v1; status.storedVersions [v1alpha1, v1] → [v1]; no longer served: v1alpha1",
    );
  });
});
