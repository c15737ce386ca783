import { describe, expect, it } from "vitest";
import { deployManifests, shardingAutoscaler } from "./manifests.js";

describe("a sharded operator's manifests", () => {
  const files = new Map(
    deployManifests({
      name: "op",
      namespace: "op-system",
      image: "op:1",
      sharding: { minReplicas: 2, maxReplicas: 6 },
    }),
  );
  const deployment = files.get("deployment.yaml")?.[0] as {
    spec: { replicas: number; template: { spec: { containers: { env: { name: string }[] }[] } } };
  };

  it("run every replica with its shard id instead of leader election, and scale on CPU within the bounds", () => {
    expect(deployment.spec.replicas).toBe(2);
    const env = deployment.spec.template.spec.containers[0]?.env.map((e) => e.name) ?? [];
    expect(env).toEqual(expect.arrayContaining(["SHARDING_RING", "POD_NAME"]));
    expect(env).not.toContain("LEADER_ELECT");
    expect(files.get("hpa.yaml")).toEqual([
      expect.objectContaining({
        kind: "HorizontalPodAutoscaler",
        spec: expect.objectContaining({
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "op" },
          minReplicas: 2,
          maxReplicas: 6,
        }),
      }),
    ]);
  });

  it("leave a leader-elected operator without an autoscaler", () => {
    expect(
      new Map(deployManifests({ name: "op", namespace: "op-system", image: "op:1" })).has("hpa.yaml"),
    ).toBe(false);
  });

  it("reject bounds that make no sense, naming them", () => {
    expect(() => shardingAutoscaler("op", "ns", { minReplicas: 3, maxReplicas: 2 })).toThrow(
      "give whole numbers with 1 ≤ min ≤ max (got min 3, max 2)",
    );
  });
});
