// A SampleDB scaled down, envtest-style: a real kube-apiserver with no controller-manager (no
// StatefulSet controller, no pods: the test makes the data volumes the StatefulSet would, when the
// operator has not) and the operator in a Manager in this process. What it no longer needs goes as
// its deletionPolicy says: the read-only Service, and the data volumes of the removed instances
// (deleted under Delete, kept under Retain); what it needs again comes back on a scale-up. And a
// StatefulSet made before `Parallel` keeps its podManagementPolicy (the field is immutable).
import { type Client, ignoreNotFound, NotFound, type ResourceType } from "kubeloop";
import { PersistentVolumeClaim, Service, StatefulSet } from "kubeloop/k8s";
import { pollUntil, startTestEnvironment, type TestEnvironment } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sampleDBController } from "../src/controller.ts";
import { SampleDB } from "../src/resources.ts";

const NS = "default";
let env: TestEnvironment;
let client: Client;

beforeAll(async () => {
  env = await startTestEnvironment({ crds: [SampleDB], controllers: [sampleDBController] });
  client = env.client;
});
afterAll(async () => {
  await env?.stop();
});

const exists = (type: ResourceType, name: string) =>
  client.get({ type: type, namespace: NS, name }).then(
    (object) => !object.metadata?.deletionTimestamp,
    (error) => {
      if (error instanceof NotFound) return false;
      throw error;
    },
  );
const scale = (name: string, instances: number) =>
  client.patch(SampleDB, name, { spec: { instances } }, { namespace: NS, type: "merge" });

/** The StatefulSet's part: a claim per ordinal from its template, named as it names them, if none exists. */
async function claimsAsTheStatefulSetWould(name: string, replicas: number): Promise<void> {
  const set = await client.get({ type: StatefulSet, namespace: NS, name });
  const template = set.spec?.volumeClaimTemplates?.[0];
  for (let ordinal = 0; ordinal < replicas; ordinal++) {
    const claim = `${template?.metadata?.name ?? "data"}-${name}-${ordinal}`;
    if (await exists(PersistentVolumeClaim, claim)) continue;
    await client
      .create({
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: {
          name: claim,
          namespace: NS,
          labels: { ...template?.metadata?.labels, ...set.spec?.selector.matchLabels },
        },
        spec: template?.spec ?? {},
      } as never)
      .catch(() => {}); // the operator made it meanwhile
  }
}

async function createAtThree(name: string, deletionPolicy: string): Promise<void> {
  await client.create({
    apiVersion: SampleDB.apiVersion,
    kind: "SampleDB",
    metadata: { name, namespace: NS },
    spec: { instances: 3, storage: "64Mi", deletionPolicy },
  } as never);
  await pollUntil(() => exists(Service, `${name}-ro`), {
    timeoutMs: 30_000,
    message: "the read-only Service",
  });
  await pollUntil(
    async () =>
      (await client.get({ type: StatefulSet, namespace: NS, name }).catch(ignoreNotFound))?.spec?.replicas ===
      3,
    { timeoutMs: 30_000, message: "the StatefulSet at 3 replicas" },
  );
  await claimsAsTheStatefulSetWould(name, 3);
}

const replicas = async (name: string) =>
  (await client.get({ type: StatefulSet, namespace: NS, name })).spec?.replicas;

describe("SampleDB scaled down", () => {
  it("3 → 1 under Delete: the read-only Service and the removed instances' volumes go; 1 → 3 brings the Service back", async () => {
    await createAtThree("shrink", "Delete");
    await scale("shrink", 1);
    await pollUntil(async () => (await replicas("shrink")) === 1, {
      timeoutMs: 30_000,
      message: "1 replica",
    });
    // Deleted: gone, or held by kubernetes.io/pvc-protection, which no controller-manager lifts here.
    await pollUntil(
      async () =>
        !(await exists(PersistentVolumeClaim, "data-shrink-1")) &&
        !(await exists(PersistentVolumeClaim, "data-shrink-2")),
      { timeoutMs: 30_000, message: "the volumes of instances 1 and 2 deleted" },
    );
    expect(await exists(PersistentVolumeClaim, "data-shrink-0")).toBe(true);
    await pollUntil(async () => !(await exists(Service, "shrink-ro")), {
      timeoutMs: 30_000,
      message: "the read-only Service deleted",
    });
    expect(await exists(Service, "shrink-rw")).toBe(true);
    expect(await exists(Service, "shrink-pods")).toBe(true);

    await scale("shrink", 3);
    await pollUntil(() => exists(Service, "shrink-ro"), {
      timeoutMs: 30_000,
      message: "the read-only Service back",
    });
    await pollUntil(async () => (await replicas("shrink")) === 3, {
      timeoutMs: 30_000,
      message: "3 replicas",
    });
  });

  it("3 → 1 under Retain: the read-only Service goes, every volume stays, no longer the SampleDB's", async () => {
    await createAtThree("keep", "Retain");
    await scale("keep", 1);
    await pollUntil(async () => !(await exists(Service, "keep-ro")), {
      timeoutMs: 30_000,
      message: "the read-only Service deleted",
    });
    expect(await replicas("keep")).toBe(1);
    for (const claim of ["data-keep-0", "data-keep-1", "data-keep-2"])
      expect(await exists(PersistentVolumeClaim, claim), claim).toBe(true);
    // Kept volumes carry no owner reference to the SampleDB: deleting it cannot take them.
    const kept = await client.get({ type: PersistentVolumeClaim, namespace: NS, name: "data-keep-2" });
    expect(kept.metadata?.ownerReferences ?? []).toEqual([]);
  });

  it("keeps the podManagementPolicy an existing StatefulSet was made with (immutable); a new one is Parallel", async () => {
    // As an operator before Parallel made it: OrderedReady, its own labels.
    const labels = { "app.kubernetes.io/instance": "legacy", "seed.example.com/component": "instance" };
    await client.create({
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name: "legacy", namespace: NS },
      spec: {
        serviceName: "legacy-pods",
        podManagementPolicy: "OrderedReady",
        selector: {
          matchLabels: {
            ...labels,
            "app.kubernetes.io/name": "sampledb",
            "app.kubernetes.io/managed-by": "sampledb-operator",
          },
        },
        template: {
          metadata: {
            labels: {
              ...labels,
              "app.kubernetes.io/name": "sampledb",
              "app.kubernetes.io/managed-by": "sampledb-operator",
            },
          },
          spec: { containers: [{ name: "postgres", image: "postgres" }] },
        },
        volumeClaimTemplates: [
          {
            metadata: {
              name: "data",
              labels: {
                "app.kubernetes.io/name": "sampledb",
                "app.kubernetes.io/instance": "legacy",
                "app.kubernetes.io/managed-by": "sampledb-operator",
              },
            },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } },
          },
        ],
      },
    } as never);
    await client.create({
      apiVersion: SampleDB.apiVersion,
      kind: "SampleDB",
      metadata: { name: "legacy", namespace: NS },
      spec: { instances: 2, storage: "64Mi" },
    } as never);
    // Applied (the set's label on it), not refused for changing the immutable field.
    await pollUntil(
      async () =>
        (await client.get({ type: StatefulSet, namespace: NS, name: "legacy" })).metadata?.labels?.[
          "kubeloop.dev/dependent"
        ] === "statefulset",
      { timeoutMs: 30_000, message: "the existing StatefulSet applied" },
    );
    const legacy = await client.get({ type: StatefulSet, namespace: NS, name: "legacy" });
    expect(legacy.spec?.podManagementPolicy).toBe("OrderedReady");
    expect(legacy.spec?.replicas).toBe(2);
    await client.create({
      apiVersion: SampleDB.apiVersion,
      kind: "SampleDB",
      metadata: { name: "fresh", namespace: NS },
      spec: { instances: 1, storage: "64Mi" },
    } as never);
    await pollUntil(async () => (await replicas("fresh").catch(() => undefined)) === 1, {
      timeoutMs: 30_000,
      message: "a new StatefulSet",
    });
    expect(
      (await client.get({ type: StatefulSet, namespace: NS, name: "fresh" })).spec?.podManagementPolicy,
    ).toBe("Parallel");
  });
});
