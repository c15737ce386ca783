import type { ConfigMap as ConfigMapObject } from "kubernetes-types/core/v1.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { configMap, namespaces, rejection, startPlane, stopPlane } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { Conflict, Invalid } from "../client/errors.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { applyOwned, createOrUpdate } from "./apply.js";
import { AlreadyOwned } from "./errors.js";
import { controllerOf, isControlledBy } from "./owner-references.js";

let plane: ControlPlane;
let client: Client;
const manager = { fieldManager: "example.com/owner-controller" };

const namespace = namespaces(() => client, "apply");

beforeAll(async () => ({ plane, client } = await startPlane()));
afterAll(() => stopPlane(plane, client));

describe("applyOwned", () => {
  it("stores the controller reference with everything the garbage collector needs", async () => {
    const ns = await namespace();
    const owner = await client.create(configMap(ns, "owner"));
    const child = await applyOwned(client, configMap(ns, "child", { a: "1" }), owner, manager);
    expect(child.metadata.ownerReferences).toEqual([
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        name: "owner",
        uid: owner.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    const stored = await client.get({ type: ConfigMap, namespace: ns, name: "child" });
    expect(isControlledBy(stored, owner)).toBe(true);
    expect(stored.metadata?.managedFields?.find((f) => f.manager === manager.fieldManager)?.operation).toBe(
      "Apply",
    );
  });

  it("re-applying the same object is a no-op: the resourceVersion does not move", async () => {
    const ns = await namespace();
    const owner = await client.create(configMap(ns, "owner"));
    const first = await applyOwned(client, configMap(ns, "child", { a: "1" }), owner, manager);
    const second = await applyOwned(client, configMap(ns, "child", { a: "1" }), owner, manager);
    expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    const changed = await applyOwned(client, configMap(ns, "child", { a: "2" }), owner, manager);
    expect(changed.metadata.resourceVersion).not.toBe(first.metadata.resourceVersion);
    expect(changed.data).toEqual({ a: "2" });
  });

  it("takes back a field someone else changed (force by default), where force: false would conflict", async () => {
    const ns = await namespace();
    const owner = await client.create(configMap(ns, "owner"));
    await applyOwned(client, configMap(ns, "child", { a: "1" }), owner, manager);
    await client.patch(
      ConfigMap,
      "child",
      { data: { a: "edited" } },
      { namespace: ns, fieldManager: "kubectl-edit" },
    );
    const refused = await rejection(
      applyOwned(client, configMap(ns, "child", { a: "1" }), owner, { ...manager, force: false }),
    );
    expect(refused).toBeInstanceOf(Conflict);
    const restored = await applyOwned(client, configMap(ns, "child", { a: "1" }), owner, manager);
    expect(restored.data).toEqual({ a: "1" });
  });

  it("the API refuses a second controller when another field manager set the first", async () => {
    const ns = await namespace();
    const first = await client.create(configMap(ns, "first"));
    const second = await client.create(configMap(ns, "second"));
    await applyOwned(client, configMap(ns, "child"), first, { fieldManager: "example.com/first-controller" });
    const error = await rejection(applyOwned(client, configMap(ns, "child"), second, manager));
    expect(error).toBeInstanceOf(Invalid);
    expect(error.message).toMatch(/Only one reference can have Controller set to true/);
    expect(controllerOf(await client.get({ type: ConfigMap, namespace: ns, name: "child" }))?.name).toBe(
      "first",
    );
  });

  it("given the current object, refuses to take a child another owner controls, before any request", async () => {
    const ns = await namespace();
    const first = await client.create(configMap(ns, "first"));
    const second = await client.create(configMap(ns, "second"));
    await applyOwned(client, configMap(ns, "child"), first, manager);
    const current = await client.get({ type: ConfigMap, namespace: ns, name: "child" });
    const apply = vi.spyOn(client, "apply");
    try {
      const error = await rejection(
        applyOwned(client, configMap(ns, "child"), second, { ...manager, current }),
      );
      expect(error).toBeInstanceOf(AlreadyOwned);
      expect(error.message).toMatch(/already controlled by ConfigMap first/);
      expect(apply).not.toHaveBeenCalled();
    } finally {
      apply.mockRestore();
    }
    // Without `current`, the same field manager's apply replaces its own earlier reference.
    const moved = await applyOwned(client, configMap(ns, "child"), second, manager);
    expect(moved.metadata.ownerReferences?.map((r) => r.name)).toEqual(["second"]);
  });

  it("given the current object it controls, applies as usual", async () => {
    const ns = await namespace();
    const owner = await client.create(configMap(ns, "owner"));
    const current = await applyOwned(client, configMap(ns, "child", { a: "1" }), owner, manager);
    const next = await applyOwned(client, configMap(ns, "child", { a: "2" }), owner, { ...manager, current });
    expect(next.data).toEqual({ a: "2" });
  });
});

describe("createOrUpdate", () => {
  it("creates from an empty object, then updates on a change, and writes nothing when nothing changed", async () => {
    const ns = await namespace();
    const key = { name: "settings", namespace: ns };
    const created = await createOrUpdate(client, ConfigMap, key, (cm) => {
      cm.data = { color: "blue" };
    });
    expect(created.operation).toBe("created");
    expect(created.object.data).toEqual({ color: "blue" });

    const updated = await createOrUpdate(client, ConfigMap, key, (cm) => {
      cm.data = { ...cm.data, size: "L" };
    });
    expect(updated.operation).toBe("updated");
    expect(updated.object.data).toEqual({ color: "blue", size: "L" });

    const update = vi.spyOn(client, "update");
    try {
      const unchanged = await createOrUpdate(client, ConfigMap, `${ns}/settings`, (cm) => {
        cm.data = { color: "blue", size: "L" };
        cm.binaryData = undefined; // undefined is "not set", as the server sees it
      });
      expect(unchanged.operation).toBe("unchanged");
      expect(unchanged.object.metadata?.resourceVersion).toBe(updated.object.metadata?.resourceVersion);
      expect(update).not.toHaveBeenCalled();
    } finally {
      update.mockRestore();
    }
  });

  it("accepts a mutate function that returns a new object", async () => {
    const ns = await namespace();
    const result = await createOrUpdate(client, ConfigMap, { name: "n", namespace: ns }, async (cm) => ({
      ...cm,
      data: { made: "by return" },
    }));
    expect(result.operation).toBe("created");
    expect(result.object.data).toEqual({ made: "by return" });
  });

  it("concurrent read-modify-writes lose no update: conflicts are retried", async () => {
    const ns = await namespace();
    await client.create({ ...configMap(ns, "counter"), data: { n: "0" } });
    const increment = (cm: ConfigMapObject) => {
      cm.data = { n: String(Number(cm.data?.n) + 1) };
    };
    const results = await Promise.all(
      [1, 2, 3].map(() => createOrUpdate(client, ConfigMap, { name: "counter", namespace: ns }, increment)),
    );
    expect(results.map((r) => r.operation)).toEqual(["updated", "updated", "updated"]);
    expect((await client.get({ type: ConfigMap, namespace: ns, name: "counter" })).data).toEqual({ n: "3" });
  });

  it("two writers creating the same object: one creates, the other retries and updates", async () => {
    const ns = await namespace();
    const results = await Promise.all(
      ["a", "b"].map((writer) =>
        createOrUpdate(client, ConfigMap, { name: "shared", namespace: ns }, (cm) => {
          cm.data = { ...cm.data, [writer]: "yes" };
        }),
      ),
    );
    expect(results.map((r) => r.operation).sort()).toEqual(["created", "updated"]);
    expect((await client.get({ type: ConfigMap, namespace: ns, name: "shared" })).data).toEqual({
      a: "yes",
      b: "yes",
    });
  });

  it("refuses a mutate that changes the name or namespace", async () => {
    const ns = await namespace();
    await expect(
      createOrUpdate(client, ConfigMap, { name: "x", namespace: ns }, (cm) => {
        cm.metadata = { ...cm.metadata, name: "y" };
      }),
    ).rejects.toThrow(/must not change the object's name or namespace/);
  });
});
