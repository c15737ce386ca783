import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, rejection, stopPlane } from "../../test/helpers.js";
import { Client, type Written } from "../client/client.js";
import { Conflict, Invalid } from "../client/errors.js";
import { type KubeObject, resourceType } from "../client/types.js";
import { ControlPlane } from "../testing/control-plane.js";
import type { CrdObject } from "../testing/crds.js";
import { type Condition, findCondition, MAX_CONDITION_MESSAGE_LENGTH, setCondition } from "./conditions.js";
import { InvalidCondition } from "./errors.js";
import { applyStatus, patchStatus } from "./status.js";

interface Gizmo extends KubeObject {
  spec?: { size?: number };
  status?: { phase?: string; replicas?: number; conditions?: Condition[] };
}
const Gizmo = resourceType<Gizmo>("resources.kubeloop.dev/v1", "Gizmo");

/** `metav1.Condition` as controller-gen writes it into every CRD that embeds it. */
const conditionSchema = {
  type: "object",
  required: ["lastTransitionTime", "message", "reason", "status", "type"],
  properties: {
    lastTransitionTime: { type: "string", format: "date-time" },
    message: { type: "string", maxLength: 32768 },
    observedGeneration: { type: "integer", format: "int64", minimum: 0 },
    reason: {
      type: "string",
      maxLength: 1024,
      minLength: 1,
      pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
    },
    status: { type: "string", enum: ["True", "False", "Unknown"] },
    type: {
      type: "string",
      maxLength: 316,
      pattern:
        "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    },
  },
};

const gizmos = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "gizmos.resources.kubeloop.dev" },
  spec: {
    group: "resources.kubeloop.dev",
    scope: "Namespaced",
    names: { plural: "gizmos", singular: "gizmo", kind: "Gizmo", listKind: "GizmoList" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
              status: {
                type: "object",
                properties: {
                  phase: { type: "string" },
                  replicas: { type: "integer" },
                  conditions: {
                    type: "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    items: conditionSchema,
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

let plane: ControlPlane;
let client: Client;

const namespace = namespaces(() => client, "status");

async function gizmo(ns: string, name = "g"): Promise<Written<Gizmo>> {
  return client.create<Gizmo>({
    apiVersion: Gizmo.apiVersion,
    kind: Gizmo.kind,
    metadata: { name, namespace: ns },
    spec: { size: 1 },
  });
}

beforeAll(async () => {
  plane = await new ControlPlane().start();
  await plane.installCrdObjects([gizmos as CrdObject]);
  client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
});
afterAll(() => stopPlane(plane, client));

describe("patchStatus", () => {
  it("merge-patches the status subresource only, and returns the object as written", async () => {
    const ns = await namespace();
    const created = await gizmo(ns);
    const stale = { ...created, spec: { size: 99 } }; // a spec change in the object is not written
    const patched = await patchStatus(client, stale, { phase: "Running", replicas: 2 });
    expect(patched.status).toEqual({ phase: "Running", replicas: 2 });
    expect(patched.spec).toEqual({ size: 1 });
    expect(patched.metadata.generation).toBe(created.metadata.generation);
    const second = await patchStatus(client, patched, { replicas: 3 });
    expect(second.status).toEqual({ phase: "Running", replicas: 3 });
    const removed = await patchStatus(client, second, { phase: null });
    expect(removed.status).toEqual({ replicas: 3 });
  });

  it("with optimisticLock, fails with Conflict when the object changed since it was read", async () => {
    const ns = await namespace();
    const read = await gizmo(ns);
    await patchStatus(client, read, { phase: "Changed" });
    const error = await rejection(patchStatus(client, read, { phase: "Stale" }, { optimisticLock: true }));
    expect(error).toBeInstanceOf(Conflict);
    const fresh = await client.get({ type: Gizmo, namespace: ns, name: "g" });
    expect(fresh.status?.phase).toBe("Changed");
    expect(
      (await patchStatus(client, fresh, { phase: "Current" }, { optimisticLock: true })).status?.phase,
    ).toBe("Current");
  });

  it("persists conditions, and a reason change keeps lastTransitionTime through the round trip", async () => {
    const ns = await namespace();
    const object = await gizmo(ns);
    const generation = object.metadata.generation;
    const start = new Date("2026-11-21T23:00:00Z");
    const first = await patchStatus(client, object, {
      conditions: setCondition(
        object.status?.conditions,
        { type: "Ready", status: false, reason: "Pending", message: "0/1", observedGeneration: generation },
        start,
      ),
    });
    const refined = await patchStatus(client, first, {
      conditions: setCondition(
        first.status?.conditions,
        { type: "Ready", status: false, reason: "Scaling", message: "waiting for a node" },
        new Date("2026-11-21T23:01:00Z"),
      ),
    });
    const ready = findCondition(refined.status?.conditions, "Ready");
    expect(ready).toMatchObject({ reason: "Scaling", message: "waiting for a node" });
    expect(ready?.lastTransitionTime).toBe("2026-11-21T23:00:00Z");
    const flipped = await patchStatus(client, refined, {
      conditions: setCondition(
        refined.status?.conditions,
        { type: "Ready", status: true, reason: "Available" },
        new Date("2026-11-21T23:02:00Z"),
      ),
    });
    expect(findCondition(flipped.status?.conditions, "Ready")?.lastTransitionTime).toBe(
      "2026-11-21T23:02:00Z",
    );
  });

  it("a reason the server rejects with 422 is rejected by setCondition first", async () => {
    const ns = await namespace();
    const object = await gizmo(ns);
    const bad = {
      type: "Ready",
      status: "False",
      reason: "not camel case",
      message: "",
      lastTransitionTime: "2026-11-21T23:00:00Z",
    } as const;
    const error = await rejection(patchStatus(client, object, { conditions: [bad] }));
    expect(error).toBeInstanceOf(Invalid);
    expect(error.message).toContain("reason");
    expect(() => setCondition([], { type: "Ready", status: false, reason: bad.reason })).toThrow(
      InvalidCondition,
    );
  });

  it("a message over the API's limit is truncated by setCondition and accepted", async () => {
    const ns = await namespace();
    const object = await gizmo(ns);
    const message = "stack frame\n".repeat(5_000); // 60,000 characters
    const written = await patchStatus(client, object, {
      conditions: setCondition([], { type: "Ready", status: false, reason: "Crashed", message }),
    });
    expect(findCondition(written.status?.conditions, "Ready")?.message).toHaveLength(
      MAX_CONDITION_MESSAGE_LENGTH,
    );
  });
});

describe("applyStatus", () => {
  it("applies only the status, as the field manager, and re-applying the same status is a no-op", async () => {
    const ns = await namespace();
    const object = await gizmo(ns);
    const applied = await applyStatus(
      client,
      object,
      { phase: "Running", replicas: 1 },
      { fieldManager: "gizmo-ctl" },
    );
    expect(applied.status).toEqual({ phase: "Running", replicas: 1 });
    expect(applied.spec).toEqual({ size: 1 });
    const entry = applied.metadata.managedFields?.find((f) => f.manager === "gizmo-ctl");
    expect(entry).toMatchObject({ operation: "Apply", subresource: "status" });
    expect(Object.keys(entry?.fieldsV1 ?? {})).toEqual(["f:status"]);
    const again = await applyStatus(
      client,
      applied,
      { phase: "Running", replicas: 1 },
      { fieldManager: "gizmo-ctl" },
    );
    expect(again.metadata.resourceVersion).toBe(applied.metadata.resourceVersion);
  });

  it("removes status fields the manager applied before and leaves out now, but not other managers' fields", async () => {
    const ns = await namespace();
    const object = await gizmo(ns);
    await patchStatus(client, object, { replicas: 5 }); // another writer's field
    await applyStatus(client, object, { phase: "Running" }, { fieldManager: "gizmo-ctl" });
    const applied = await applyStatus(
      client,
      object,
      { conditions: setCondition([], { type: "Ready", status: true, reason: "Up" }) },
      { fieldManager: "gizmo-ctl" },
    );
    expect(applied.status?.phase).toBeUndefined();
    expect(applied.status?.replicas).toBe(5);
    expect(applied.status?.conditions?.map((c) => c.type)).toEqual(["Ready"]);
  });

  it("takes over a status field another manager set (force by default)", async () => {
    const ns = await namespace();
    const object = await gizmo(ns);
    await applyStatus(client, object, { phase: "Edited" }, { fieldManager: "someone-else" });
    const conflict = await rejection(
      applyStatus(client, object, { phase: "Running" }, { fieldManager: "gizmo-ctl", force: false }),
    );
    expect(conflict).toBeInstanceOf(Conflict);
    const applied = await applyStatus(client, object, { phase: "Running" }, { fieldManager: "gizmo-ctl" });
    expect(applied.status?.phase).toBe("Running");
  });
});
