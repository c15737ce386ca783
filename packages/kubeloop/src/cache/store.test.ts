import { describe, expect, it } from "vitest";
import type { KubeObject } from "../client/types.js";
import { NAMESPACE_INDEX, Store } from "./store.js";

const obj = (namespace: string, name: string, rv: string, owner?: string): KubeObject => ({
  metadata: { namespace, name, resourceVersion: rv, ...(owner ? { labels: { owner } } : {}) },
});

describe("Store", () => {
  it("keys objects by namespace/name and files them by namespace", () => {
    const store = new Store();
    store.upsert(obj("a", "x", "1"));
    store.upsert(obj("b", "x", "1"));
    store.upsert({ metadata: { name: "cluster-wide", resourceVersion: "1" } });
    expect(store.keys().sort()).toEqual(["a/x", "b/x", "cluster-wide"]);
    expect(store.byIndex(NAMESPACE_INDEX, "a").map((o) => o.metadata?.name)).toEqual(["x"]);
  });

  it("moves an object between index values when it changes, and forgets it on removal", () => {
    const store = new Store({ owner: (o) => [o.metadata?.labels?.owner ?? ""] });
    store.upsert(obj("ns", "child", "1", "alice"));
    store.upsert(obj("ns", "child", "2", "bob"));
    expect(store.byIndex("owner", "alice")).toEqual([]);
    expect(store.byIndex("owner", "bob").map((o) => o.metadata?.resourceVersion)).toEqual(["2"]);
    expect(store.remove("ns/child")?.metadata?.resourceVersion).toBe("2");
    expect(store.byIndex("owner", "bob")).toEqual([]);
    expect(store.remove("ns/child")).toBeUndefined();
  });

  it("replaces its content with a list and reports adds, updates and deletes", () => {
    const store = new Store();
    store.upsert(obj("ns", "stays", "1"));
    store.upsert(obj("ns", "goes", "1"));
    const changes = store.replace([obj("ns", "stays", "2"), obj("ns", "new", "1")]);
    expect(changes.added.map((o) => o.metadata?.name)).toEqual(["new"]);
    expect(
      changes.updated.map((u) => `${u.old.metadata?.resourceVersion}→${u.object.metadata?.resourceVersion}`),
    ).toEqual(["1→2"]);
    expect(changes.vanished.map((o) => o.metadata?.name)).toEqual(["goes"]);
    expect(store.size).toBe(2);
  });

  it("indexes objects cached before the index was added", () => {
    const store = new Store();
    store.upsert(obj("ns", "early", "1", "carol"));
    store.addIndex("owner", (o) => [o.metadata?.labels?.owner ?? ""]);
    expect(store.byIndex("owner", "carol").map((o) => o.metadata?.name)).toEqual(["early"]);
    expect(() => store.byIndex("missing", "x")).toThrow(/No index named "missing"/);
  });
});
