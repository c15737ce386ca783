import { spawn } from "node:child_process";
import { join } from "node:path";
import {
  ControlPlane,
  type CrdObject,
  killOperators,
  kubectl,
  type LocalWebhookServing,
  localWebhookServing,
  readManifests,
} from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MyAppV1alpha1 } from "../src/release-1/resources.ts";
import { type Operator, root, startOperator, until } from "./operator.ts";

// The operator upgrading itself, end to end: release 1 (MyApp v1alpha1 only) runs with objects
// stored as v1alpha1; release 2 (v1 stored, v1alpha1 converted by its webhook) starts beside it as
// a standby; `kubeloop migrate` rewrites every object as v1; release 1 stops and release 2 takes the
// Lease over; `kubeloop migrate --retire v1alpha1` stops serving v1alpha1. Checked through kubectl,
// the operators' logs, and etcd itself.

let plane: ControlPlane;
let serving: LocalWebhookServing;
const NS = "upgrade";
const CRD = "myapps.apps.example.com";
const APPS = ["a", "b", "c", "d"];
const cli = join(root, "../../packages/kubeloop/dist/cli/main.js");

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
const json = async <T>(args: string[]): Promise<T> => {
  const result = await k([...args, "-o", "json"]);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
};

function migrate(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, "migrate", CRD, ...args], {
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
}

/** The apiVersion each MyApp is stored in, read from etcd. */
async function storedAs(): Promise<string[]> {
  const prefix = "/registry/apps.example.com/myapps/";
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const response = await fetch(`${plane.etcdUrl}/v3/kv/range`, {
    method: "POST",
    body: JSON.stringify({ key: b64(prefix), range_end: b64(`${prefix.slice(0, -1)}0`) }),
  });
  const body = (await response.json()) as { kvs?: { value: string }[] };
  return (body.kvs ?? []).map(
    (kv) => (JSON.parse(Buffer.from(kv.value, "base64").toString()) as { apiVersion: string }).apiVersion,
  );
}

type Spec = { size?: number; replicas?: number; version: string; image: string };
type Item = {
  metadata: { name: string };
  spec: Spec;
  status?: { conditions?: { type: string; status: string }[] };
};
const isReady = (o: Item) =>
  o.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

/** `time` of the log lines of one operator matching `msg` (pino's epoch milliseconds). */
const times = (operator: Operator, msg: string) =>
  operator
    .logs()
    .filter((l) => l.msg === msg)
    .map((l) => Number(l.time));

beforeAll(async () => {
  serving = await localWebhookServing();
  plane = await new ControlPlane({ profile: "cluster" }).start();
  await plane.installCrdObjects([MyAppV1alpha1.crd() as unknown as CrdObject]);
  expect((await k(["create", "namespace", NS])).code).toBe(0);
});
afterAll(async () => {
  killOperators();
  await plane?.stop();
  serving?.dispose();
});

describe("upgrading the operator from release 1 (v1alpha1) to release 2 (v1)", () => {
  // Steps of one upgrade, in order; each needs the ones before.
  let release1: Operator;
  let release2: Operator;
  let before: Item[];
  let stoppedAt: number;
  const env = () => ({
    KUBECONFIG: plane.kubeconfigPath,
    LEADER_ELECT: "true",
    LEADER_ELECTION_NAMESPACE: "default",
    LOG_LEVEL: "debug",
  });
  const v1alpha1 = () => json<{ items: Item[] }>(["-n", NS, "get", "myapps.v1alpha1.apps.example.com"]);

  it("release 1 runs its objects, stored as v1alpha1", async () => {
    release1 = await startOperator("src/release-1/main.ts", env());
    const objects = APPS.map((name, i) => ({
      apiVersion: "apps.example.com/v1alpha1",
      kind: "MyApp",
      metadata: { name, namespace: NS },
      spec: { size: i + 1, version: `1.${i}`, rollout: { progressDeadlineSeconds: 30 } },
    }));
    const created = await k(["apply", "-f", "-"], objects.map((o) => JSON.stringify(o)).join("\n"));
    expect(created.code, created.stderr).toBe(0);
    await until(
      async () => (await v1alpha1()).items.filter(isReady).length === APPS.length,
      90_000,
      "release 1 to run every MyApp",
    );
    before = (await v1alpha1()).items;
    expect(new Set(await storedAs())).toEqual(new Set(["apps.example.com/v1alpha1"]));
  });

  it("release 2 starts beside it as a standby serving the conversion webhook; release 1 keeps working through it", async () => {
    release2 = await startOperator("src/main.ts", {
      ...env(),
      WEBHOOK_CERT_DIR: serving.certDir,
      WEBHOOK_PORT: String(serving.port),
    });
    await release2.waitUntil(() => /"webhooks serving"/.test(release2.output()), {
      timeoutMs: 30_000,
      intervalMs: 200,
      message: "release 2's webhook server",
    });
    await plane.installCrdObjects(
      serving.rewrite(
        readManifests([join(root, "config/crd/myapps.apps.example.com.yaml")]),
      ) as unknown as CrdObject[],
    );
    await release2.waitUntil(() => /"waiting for leadership"/.test(release2.output()), {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: "release 2 to stand by",
    });
    // Release 1 keeps working meanwhile, its v1alpha1 writes converted by release 2's webhook.
    expect(
      (
        await k([
          "-n",
          NS,
          "patch",
          "myapps.v1alpha1.apps.example.com",
          "a",
          "--type=merge",
          "-p",
          '{"spec":{"size":3}}',
        ])
      ).code,
    ).toBe(0);
    await until(
      async () =>
        (await k(["-n", NS, "get", "deployment", "a", "-o", "jsonpath={.spec.replicas}"])).stdout === "3",
      30_000,
      "release 1 to scale a",
    );
  });

  it("kubeloop migrate rewrites every object as v1 while release 1 runs, and refuses a version that does not exist", async () => {
    const migrated = await migrate([]);
    expect(migrated.code, migrated.out).toBe(0);
    expect(migrated.out).toContain(
      `${APPS.length} objects stored as v1; status.storedVersions [v1alpha1, v1] → [v1]`,
    );
    expect(new Set(await storedAs())).toEqual(new Set(["apps.example.com/v1"]));
    // Retiring v1alpha1 while release 1 may still read it would break it: the order is stop, then retire.
    // A version that does not exist is refused, and nothing changes.
    const crdBefore = await json<{ metadata: { resourceVersion: string } }>(["get", "crd", CRD]);
    const typo = await migrate(["--retire", "v1alpha2"]);
    expect(typo.code).toBe(1);
    expect(typo.out).toContain(
      `kubeloop: ${CRD} has no version "v1alpha2"; its versions are v1, v1alpha1. Nothing was changed.`,
    );
    expect(
      (await json<{ metadata: { resourceVersion: string } }>(["get", "crd", CRD])).metadata.resourceVersion,
    ).toBe(crdBefore.metadata.resourceVersion);
  });

  it("release 1 stops, release 2 takes the Lease over, and v1alpha1 is no longer served", async () => {
    stoppedAt = Date.now();
    expect(await release1.stop(), release1.output().slice(-3000)).toBe(0);
    await release2.waitUntil(() => /"became leader"/.test(release2.output()), {
      timeoutMs: 30_000,
      intervalMs: 200,
      message: "release 2 to lead",
    });
    const retired = await migrate(["--retire", "v1alpha1"]);
    expect(retired.code, retired.out).toBe(0);
    expect(retired.out).toContain("no longer served: v1alpha1");
    const served = await k(["get", "--raw", "/apis/apps.example.com/v1alpha1"]);
    expect(served.code).not.toBe(0);
    expect(
      (await json<{ spec: { versions: { name: string; served: boolean }[] } }>(["get", "crd", CRD])).spec
        .versions,
    ).toMatchObject([
      { name: "v1", served: true },
      { name: "v1alpha1", served: false },
    ]);
  });

  it("release 2 reconciles, and every object kept its data", async () => {
    const scaled = await k([
      "-n",
      NS,
      "patch",
      "myapps.v1.apps.example.com",
      "b",
      "--type=merge",
      "-p",
      '{"spec":{"replicas":4}}',
    ]);
    expect(scaled.code, scaled.stderr).toBe(0);
    await until(
      async () =>
        (await k(["-n", NS, "get", "deployment", "b", "-o", "jsonpath={.spec.replicas}"])).stdout === "4",
      30_000,
      "release 2 to scale b",
    );

    // Every object kept its data (v1alpha1's size is v1's replicas; a and b changed on purpose).
    const after = (await json<{ items: Item[] }>(["-n", NS, "get", "myapps.v1.apps.example.com"])).items;
    const expected = before.map((o) => ({
      name: o.metadata.name,
      replicas: o.metadata.name === "a" ? 3 : o.metadata.name === "b" ? 4 : o.spec.size,
      version: o.spec.version,
      image: o.spec.image,
    }));
    expect(
      after.map((o) => ({
        name: o.metadata.name,
        replicas: o.spec.replicas,
        version: o.spec.version,
        image: o.spec.image,
      })),
    ).toEqual(expected);
    await until(
      async () =>
        (await json<{ items: Item[] }>(["-n", NS, "get", "myapps.v1.apps.example.com"])).items.every(isReady),
      60_000,
      "every MyApp Ready under release 2",
    );
  });

  it("no object was reconciled by both releases, and no reconcile failed", () => {
    // Release 1's last reconcile came before release 2 led; release 2 reconciled nothing before.
    const led = times(release2, "became leader")[0] ?? Number.NaN;
    const release1Reconciles = times(release1, "reconciled");
    const release2Reconciles = times(release2, "reconciled");
    expect(release1Reconciles.length).toBeGreaterThan(0);
    expect(release2Reconciles.length).toBeGreaterThan(0);
    expect(Math.max(...release1Reconciles)).toBeLessThan(led);
    expect(Math.min(...release2Reconciles)).toBeGreaterThanOrEqual(led);
    expect(led).toBeGreaterThanOrEqual(stoppedAt);
    for (const operator of [release1, release2]) {
      const failures = operator
        .logs()
        .filter((l) => /reconcile failed/.test(String(l.msg)) || Number(l.level) >= 50);
      expect(failures, JSON.stringify(failures[0])).toEqual([]);
    }
  });
});
