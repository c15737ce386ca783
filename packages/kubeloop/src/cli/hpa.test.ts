import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { adapterRules, parseAutoscale } from "./autoscaling.js";
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

describe("the autoscaler on the operator's own series", () => {
  const spec = (hpa: object) => (hpa as { spec: Record<string, unknown> }).spec;
  const config = (rules: object | undefined) =>
    parse((rules as { data: { "config.yaml": string } }).data["config.yaml"]) as {
      rules: { seriesQuery: string; name: { as: string }; metricsQuery: string }[];
    };

  it("scales 2 → 6 on seed 003's rule: over 5 reconcile errors a minute per pod, held for 2 minutes", () => {
    const autoscale = parseAutoscale("reconcile-errors");
    const hpa = spec(shardingAutoscaler("op", "op-system", { minReplicas: 2, maxReplicas: 6, autoscale }));
    expect(hpa).toMatchObject({ minReplicas: 2, maxReplicas: 6 });
    expect(hpa.metrics).toEqual([
      {
        type: "Pods",
        pods: {
          metric: { name: "reconcile_errors_per_minute" },
          target: { type: "AverageValue", averageValue: "5" },
        },
      },
    ]);
    expect(hpa.behavior).toMatchObject({ scaleUp: { stabilizationWindowSeconds: 120 } });
    // The adapter serves that name per pod, from the manager's error counter over 2 minutes.
    const [rule] = config(adapterRules("op", "op-system", autoscale)).rules;
    expect(rule).toMatchObject({
      seriesQuery: 'controller_runtime_reconcile_errors_total{namespace!="",pod!=""}',
      name: { as: "reconcile_errors_per_minute" },
      metricsQuery: "60 * sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
    });
  });

  it("scales on the work rate with the target given, at once (no scale-up window)", () => {
    const autoscale = parseAutoscale("reconciles=2.5");
    const hpa = spec(shardingAutoscaler("op", "ns", { minReplicas: 1, maxReplicas: 3, autoscale }));
    expect(hpa.metrics).toEqual([
      {
        type: "Pods",
        pods: {
          metric: { name: "reconciles_per_second" },
          target: { type: "AverageValue", averageValue: "2500m" },
        },
      },
    ]);
    expect(hpa.behavior).not.toHaveProperty("scaleUp");
    const [rule] = config(adapterRules("op", "ns", autoscale)).rules;
    expect(rule?.seriesQuery).toBe('controller_runtime_reconcile_total{namespace!="",pod!=""}');
    expect(rule?.metricsQuery).toContain("[1m]");
  });

  it("keep CPU (no adapter rule) by default, and name a bad metric or target", () => {
    expect(spec(shardingAutoscaler("op", "ns", { minReplicas: 1, maxReplicas: 2 })).metrics).toEqual([
      {
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } },
      },
    ]);
    expect(adapterRules("op", "ns", parseAutoscale("cpu=50"))).toBeUndefined();
    for (const bad of ["queue", "reconciles=0", "reconciles=x", "cpu=1=2"])
      expect(() => parseAutoscale(bad)).toThrow(`--autoscale "${bad}": give METRIC[=TARGET]`);
  });
});
