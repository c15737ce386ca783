import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { cachedProjectDir, resourceModule, runCli } from "../../test/cli-project.js";
import { CliError } from "./errors.js";
import { karmadaPolicies, parseKarmadaRegions, REGION_LABEL } from "./karmada.js";

const crd = {
  metadata: { name: "nginxes.proxy.example.com" },
  spec: {
    group: "proxy.example.com",
    names: { kind: "Nginx" },
    versions: [{ name: "v1alpha1" }, { name: "v1", storage: true }],
  },
};
const objects = [
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "ops" } },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: "ops" } },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "ops", namespace: "ops-system" },
  },
  {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: "v" },
  },
];

type Policy = {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: Record<string, unknown> & {
    resourceSelectors?: Record<string, unknown>[];
    placement?: { clusterAffinity?: unknown };
    overrideRules?: { targetCluster: unknown; overriders: Record<string, unknown[]> }[];
  };
};

function generate(regions = "cn-east=5@registry.cn-east.example.com,ap-southeast=3") {
  const files = karmadaPolicies({
    name: "ops",
    namespace: "ops-system",
    regions: parseKarmadaRegions(regions),
    crds: [crd],
    objects,
  });
  const one = (file: string, index = 0) => files.get(file)?.[index] as Policy;
  return { files, one };
}

const inRegions = (...values: string[]) => ({
  labelSelector: { matchExpressions: [{ key: REGION_LABEL, operator: "In", values }] },
});

describe("Karmada policy generation", () => {
  it("sends the CRDs and cluster-wide RBAC to every member, but not webhook configurations", () => {
    const { one } = generate();
    const wide = one("cluster-wide.yaml");
    expect(wide.kind).toBe("ClusterPropagationPolicy");
    expect(wide.spec.placement).toEqual({});
    expect(wide.spec.resourceSelectors).toEqual([
      {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        name: "nginxes.proxy.example.com",
      },
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", name: "ops" },
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", name: "ops" },
    ]);
  });

  it("sends the namespace and what lives in it to the chosen regions only", () => {
    const { one } = generate();
    const ns = one("cluster-wide.yaml", 1);
    expect(ns.spec.resourceSelectors).toEqual([{ apiVersion: "v1", kind: "Namespace", name: "ops-system" }]);
    expect(ns.spec.placement?.clusterAffinity).toEqual(inRegions("cn-east", "ap-southeast"));
    expect(one("namespace.yaml").metadata).toEqual({
      name: "ops-system",
      labels: { "namespace.karmada.io/skip-auto-propagation": "true" },
    });
    const operator = one("operator.yaml");
    expect(operator.kind).toBe("PropagationPolicy");
    expect(operator.metadata.namespace).toBe("ops-system");
    expect(operator.spec.resourceSelectors).toContainEqual({ apiVersion: "apps/v1", kind: "Deployment" });
    expect(operator.spec.placement).toEqual({
      clusterAffinity: inRegions("cn-east", "ap-southeast"),
      replicaScheduling: { replicaSchedulingType: "Duplicated" },
    });
  });

  it("overrides replicas and the image registry per region", () => {
    const { one, files } = generate();
    const east = one("override-cn-east.yaml");
    expect(east.kind).toBe("OverridePolicy");
    expect(east.spec.resourceSelectors).toEqual([{ apiVersion: "apps/v1", kind: "Deployment", name: "ops" }]);
    expect(east.spec.overrideRules).toEqual([
      {
        targetCluster: inRegions("cn-east"),
        overriders: {
          plaintext: [{ path: "/spec/replicas", operator: "replace", value: 5 }],
          imageOverrider: [
            { component: "Registry", operator: "replace", value: "registry.cn-east.example.com" },
          ],
        },
      },
    ]);
    expect(one("override-ap-southeast.yaml").spec.overrideRules?.[0]?.overriders).toEqual({
      plaintext: [{ path: "/spec/replicas", operator: "replace", value: 3 }],
    });
    // A region with nothing to override gets no OverridePolicy.
    expect(generate("eu").files.has("override-eu.yaml")).toBe(false);
    expect(files.size).toBe(8);
  });

  it("places each custom resource by its region label, in the storage version", () => {
    const { one } = generate();
    const east = one("placement-cn-east.yaml");
    expect(east.kind).toBe("ClusterPropagationPolicy");
    expect(east.spec.resourceSelectors).toEqual([
      {
        apiVersion: "proxy.example.com/v1",
        kind: "Nginx",
        labelSelector: { matchLabels: { [REGION_LABEL]: "cn-east" } },
      },
    ]);
    expect(east.spec.placement?.clusterAffinity).toEqual(inRegions("cn-east"));
  });

  it("interprets health and status from the Ready condition", () => {
    const { one } = generate();
    const interpreter = one("interpreter.yaml") as unknown as {
      spec: { target: unknown; customizations: Record<string, { luaScript: string }> };
    };
    expect(interpreter.spec.target).toEqual({ apiVersion: "proxy.example.com/v1", kind: "Nginx" });
    const { healthInterpretation, statusReflection, statusAggregation } = interpreter.spec.customizations;
    expect(healthInterpretation?.luaScript).toMatch(/function InterpretHealth\(observedObj\)[\s\S]*"Ready"/);
    expect(statusReflection?.luaScript).toContain("resourcetemplate.karmada.io/generation");
    expect(statusAggregation?.luaScript).toMatch(/function AggregateStatus\(desiredObj, statusItems\)/);
  });

  it("refuses regions it cannot write, naming the form", () => {
    const bad = (value: string) => () => parseKarmadaRegions(value);
    expect(bad("")).toThrow(/name at least one region/);
    expect(bad("Shanghai=5")).toThrow(CliError);
    expect(bad("cn-east=five")).toThrow(/REGION\[=REPLICAS\]\[@REGISTRY\]/);
    expect(bad("cn-east=5,cn-east=3")).toThrow(/cn-east is given twice/);
    expect(bad("cn-east=5000")).toThrow(/at most 1000/);
    expect(parseKarmadaRegions(" eu , us=2 ")).toEqual([{ region: "eu" }, { region: "us", replicas: 2 }]);
  });
});

describe("kubeloop generate --karmada", () => {
  const dir = cachedProjectDir("generate-karmada");
  writeFileSync(
    join(dir, "resources.mjs"),
    resourceModule(`export const Gizmo = defineResource({
  group: "gen.kubeloop.dev", version: "v1", kind: "Gizmo",
  spec: Type.Object({ size: Type.Integer() }),
});
`),
  );
  const generate = (...args: string[]) =>
    runCli(dir, ["generate", "--resources", "resources.mjs", "--name", "gizmo", ...args]);

  it("writes config/karmada, keeps it with --check, and removes it when the option goes", () => {
    const written = generate("--karmada", "a=2,b=1@mirror.example.com");
    expect(written.code, written.stderr).toBe(0);
    expect(written.stdout).toContain("wrote config/karmada/placement-a.yaml");
    const placement = parseAllDocuments(
      readFileSync(join(dir, "config/karmada/placement-b.yaml"), "utf8"),
    )[0]?.toJS();
    expect(placement.spec.resourceSelectors[0]).toMatchObject({
      apiVersion: "gen.kubeloop.dev/v1",
      kind: "Gizmo",
    });
    expect(generate("--karmada", "a=2,b=1@mirror.example.com", "--check").code).toBe(0);
    const removed = generate();
    expect(removed.stdout).toContain("removed config/karmada/placement-a.yaml");
    expect(existsSync(join(dir, "config/karmada/placement-a.yaml"))).toBe(false);
  });

  it("names the option in a bad value's error", () => {
    const result = generate("--karmada", "A B");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--karmada: "A B" is not REGION[=REPLICAS][@REGISTRY]');
  });
});
