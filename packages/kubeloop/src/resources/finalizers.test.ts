import type { ConfigMap as ConfigMapObject } from "kubernetes-types/core/v1.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { namespaces, rejection, startPlane } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { Conflict, NotFound } from "../client/errors.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { addFinalizer, handleFinalizer, hasFinalizer, isDeleting, removeFinalizer } from "./finalizers.js";

let plane: ControlPlane;
let client: Client;
/** A second client: another controller (or a user) writing the same objects. */
let other: Client;

const namespace = namespaces(() => client, "finalizers");

async function configMap(ns: string, finalizers?: string[]): Promise<ConfigMapObject> {
  return client.create({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "cm", namespace: ns, ...(finalizers ? { finalizers } : {}) },
    data: { a: "1" },
  });
}

async function read(ns: string): Promise<ConfigMapObject> {
  return client.get({ type: ConfigMap, namespace: ns, name: "cm" });
}

beforeAll(async () => {
  ({ plane, client } = await startPlane());
  other = await Client.connect({ kubeconfig: plane.kubeconfigPath });
});
afterAll(async () => {
  await client?.close();
  await other?.close();
  await plane?.stop();
});

describe("addFinalizer / removeFinalizer", () => {
  it("adds a finalizer, and adding it again sends no request", async () => {
    const ns = await namespace();
    const added = await addFinalizer(client, await configMap(ns), "example.com/cleanup");
    expect(added.metadata?.finalizers).toEqual(["example.com/cleanup"]);
    expect(hasFinalizer(await read(ns), "example.com/cleanup")).toBe(true);
    const patch = vi.spyOn(client, "patch");
    try {
      expect(await addFinalizer(client, added, "example.com/cleanup")).toBe(added);
      expect(patch).not.toHaveBeenCalled();
    } finally {
      patch.mockRestore();
    }
  });

  it("two writers adding different finalizers from the same read both succeed: the loser of the race re-reads", async () => {
    const ns = await namespace();
    const snapshot = await configMap(ns, ["example.com/existing"]);
    const spies = [vi.spyOn(client, "patch"), vi.spyOn(other, "patch")];
    try {
      await Promise.all([
        addFinalizer(client, snapshot, "example.com/first"),
        addFinalizer(other, snapshot, "example.com/second"),
      ]);
      const { finalizers } = (await read(ns)).metadata ?? {};
      expect(finalizers).toHaveLength(3);
      expect(finalizers).toEqual(
        expect.arrayContaining(["example.com/existing", "example.com/first", "example.com/second"]),
      );
      // Both wrote against the same resourceVersion: the second got a Conflict, re-read and wrote again.
      const outcomes = spies.flatMap((spy) => spy.mock.settledResults.map((r) => r.type));
      expect(outcomes.sort()).toEqual(["fulfilled", "fulfilled", "rejected"]);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it("ten concurrent writers adding ten finalizers lose none of them", async () => {
    const ns = await namespace();
    const snapshot = await configMap(ns);
    const clients = [client, other];
    const names = Array.from({ length: 10 }, (_, i) => `example.com/f${i}`);
    await Promise.all(
      names.map((name, i) => addFinalizer(clients[i % 2] as Client, snapshot, name, { attempts: 20 })),
    );
    expect([...((await read(ns)).metadata?.finalizers ?? [])].sort()).toEqual([...names].sort());
  });

  it("removing from a stale copy keeps a finalizer another writer added meanwhile", async () => {
    const ns = await namespace();
    const stale = await configMap(ns, ["example.com/mine"]);
    await addFinalizer(other, stale, "example.com/theirs");
    const result = await removeFinalizer(client, stale, "example.com/mine");
    expect(result?.metadata?.finalizers).toEqual(["example.com/theirs"]);
    expect((await read(ns)).metadata?.finalizers).toEqual(["example.com/theirs"]);
  });

  it("removing does not remove another finalizer that moved to our index meanwhile", async () => {
    const ns = await namespace();
    const stale = await configMap(ns, ["example.com/a", "example.com/mine", "example.com/b"]);
    // Another writer removes "a": "mine" moves from index 1 to 0, and "b" is now at index 1.
    await removeFinalizer(other, stale, "example.com/a");
    await removeFinalizer(client, stale, "example.com/mine");
    expect((await read(ns)).metadata?.finalizers).toEqual(["example.com/b"]);
  });

  it("gives up with the Conflict after the given number of attempts", async () => {
    const ns = await namespace();
    const stale = await configMap(ns);
    await client.patch(ConfigMap, "cm", { data: { a: "2" } }, { namespace: ns });
    const error = await rejection(addFinalizer(client, stale, "example.com/cleanup", { attempts: 1 }));
    expect(error).toBeInstanceOf(Conflict);
    expect(hasFinalizer(await read(ns), "example.com/cleanup")).toBe(false);
  });

  it("refuses names the API would reject, and adding to an object being deleted, before any request", async () => {
    const ns = await namespace();
    const object = await configMap(ns, ["example.com/keep"]);
    await expect(addFinalizer(client, object, "not a name")).rejects.toThrow(/not a valid name/);
    await client.delete(ConfigMap, "cm", { namespace: ns });
    await expect(addFinalizer(client, await read(ns), "example.com/late")).rejects.toThrow(/being deleted/);
  });

  it("removing from an object that is already gone resolves undefined", async () => {
    const ns = await namespace();
    const stale = await configMap(ns, ["example.com/mine"]);
    await client.patch(ConfigMap, "cm", { metadata: { finalizers: null } }, { namespace: ns });
    await client.delete(ConfigMap, "cm", { namespace: ns });
    expect(await removeFinalizer(client, stale, "example.com/mine")).toBeUndefined();
  });
});

describe("handleFinalizer", () => {
  it("on a live object adds the finalizer once and never runs cleanup", async () => {
    const ns = await namespace();
    const cleanup = vi.fn();
    const first = await handleFinalizer(client, await configMap(ns), "example.com/cleanup", cleanup);
    expect(first.state).toBe("added");
    const second = await handleFinalizer(client, await read(ns), "example.com/cleanup", cleanup);
    expect(second.state).toBe("present");
    expect(second.object?.metadata?.resourceVersion).toBe(first.object?.metadata?.resourceVersion);
    expect(cleanup).not.toHaveBeenCalled();
  });

  it("on deletion runs cleanup, then removes the finalizer, and the object is gone", async () => {
    const ns = await namespace();
    await handleFinalizer(client, await configMap(ns), "example.com/cleanup", () => {});
    await client.delete(ConfigMap, "cm", { namespace: ns });
    const deleting = await read(ns);
    expect(isDeleting(deleting)).toBe(true);
    const cleanup = vi.fn(async (object: ConfigMapObject) => {
      // Cleanup runs while the object still exists, finalizer and all.
      expect(hasFinalizer(await read(ns), "example.com/cleanup")).toBe(true);
      return object.metadata?.name;
    });
    const result = await handleFinalizer(client, deleting, "example.com/cleanup", cleanup);
    expect(result.state).toBe("finalized");
    expect(cleanup).toHaveBeenCalledExactlyOnceWith(deleting);
    expect(await rejection(read(ns))).toBeInstanceOf(NotFound);
  });

  it("when cleanup throws, the error propagates and the finalizer stays, so the object stays", async () => {
    const ns = await namespace();
    await handleFinalizer(client, await configMap(ns), "example.com/cleanup", () => {});
    await client.delete(ConfigMap, "cm", { namespace: ns });
    const failure = new Error("bucket not empty");
    const error = await rejection(
      handleFinalizer(client, await read(ns), "example.com/cleanup", () => Promise.reject(failure)),
    );
    expect(error).toBe(failure);
    const still = await read(ns);
    expect(isDeleting(still)).toBe(true);
    expect(hasFinalizer(still, "example.com/cleanup")).toBe(true);
  });

  it("on deletion keeps other controllers' finalizers: the object waits for them", async () => {
    const ns = await namespace();
    await configMap(ns, ["example.com/other"]);
    await handleFinalizer(client, await read(ns), "example.com/cleanup", () => {});
    await client.delete(ConfigMap, "cm", { namespace: ns });
    const result = await handleFinalizer(client, await read(ns), "example.com/cleanup", () => {});
    expect(result.state).toBe("finalized");
    expect(result.object?.metadata?.finalizers).toEqual(["example.com/other"]);
    expect((await read(ns)).metadata?.finalizers).toEqual(["example.com/other"]);
  });

  it("on deletion without our finalizer does nothing: not-ours", async () => {
    const ns = await namespace();
    await configMap(ns, ["example.com/other"]);
    await client.delete(ConfigMap, "cm", { namespace: ns });
    const cleanup = vi.fn();
    const patch = vi.spyOn(client, "patch");
    try {
      const result = await handleFinalizer(client, await read(ns), "example.com/cleanup", cleanup);
      expect(result.state).toBe("not-ours");
      expect(cleanup).not.toHaveBeenCalled();
      expect(patch).not.toHaveBeenCalled();
    } finally {
      patch.mockRestore();
    }
  });
});
