import { describe, expect, it } from "vitest";
import { checkRing, checkShardId, ownerOf, shardKey } from "./ring.js";

const keys = Array.from({ length: 10_000 }, (_, i) => `apps/Deployment/ns-${i % 37}/web-${i}`);

function spread(shards: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const key of keys) {
    const owner = ownerOf(key, shards) as string;
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}

describe("ownerOf (rendezvous hashing)", () => {
  it("spreads keys evenly: every shard within 10% of its share", () => {
    for (const shards of [
      ["a", "b", "c"],
      ["r1", "r2", "r3", "r4", "r5"],
      ["operator-7d9f-x2k", "operator-7d9f-q8z"],
    ]) {
      const counts = spread(shards);
      for (const shard of shards) {
        const share = (counts.get(shard) ?? 0) / keys.length;
        expect(share, `${shard} of ${shards.join(",")}`).toBeGreaterThan((1 / shards.length) * 0.9);
        expect(share, `${shard} of ${shards.join(",")}`).toBeLessThan((1 / shards.length) * 1.1);
      }
    }
  });

  it("moves only the keys the new shard wins when one joins, and only the leaver's when one leaves", () => {
    const before = keys.map((key) => ownerOf(key, ["a", "b", "c"]));
    const after = keys.map((key) => ownerOf(key, ["a", "b", "c", "d"]));
    const moved = after.filter((owner, i) => owner !== before[i]);
    expect(moved.every((owner) => owner === "d")).toBe(true);
    expect(moved.length / keys.length).toBeGreaterThan(0.2);
    expect(moved.length / keys.length).toBeLessThan(0.3);
    const without = keys.map((key) => ownerOf(key, ["a", "c"]));
    for (const [i, owner] of without.entries()) if (before[i] !== "b") expect(owner).toBe(before[i]);
  });

  it("does not depend on the order the shards are given in, and has no owner without shards", () => {
    for (const key of keys.slice(0, 500))
      expect(ownerOf(key, ["c", "a", "b"])).toBe(ownerOf(key, ["a", "b", "c"]));
    expect(ownerOf("x", [])).toBeUndefined();
  });
});

describe("shardKey", () => {
  it("is the object's group/kind/namespace/name, or its controller owner's so children land with it", () => {
    const type = { apiVersion: "apps/v1", kind: "Deployment" };
    expect(shardKey({ metadata: { name: "web", namespace: "a" } }, type)).toBe("apps/Deployment/a/web");
    const child = {
      metadata: {
        name: "web-1",
        namespace: "a",
        ownerReferences: [
          { apiVersion: "example.com/v1", kind: "Site", name: "other", uid: "1" },
          { apiVersion: "example.com/v1", kind: "Site", name: "web", uid: "2", controller: true },
        ],
      },
    };
    expect(shardKey(child, { apiVersion: "v1", kind: "ConfigMap" })).toBe("example.com/Site/a/web");
  });
});

describe("names", () => {
  it("rejects ring names and shard ids that cannot be label keys, values or Lease names, naming the fix", () => {
    expect(() => checkRing("Nginx_Operator")).toThrow(/lowercase letters, digits/);
    expect(() => checkShardId("host_123e4567-e89b")).toThrow(/set sharding.id/);
    expect(checkShardId("nginx-operator-7d9f-x2k")).toBe("nginx-operator-7d9f-x2k");
  });
});
