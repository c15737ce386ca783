import { describe, expect, it } from "vitest";
import { resourceType } from "../../client/index.js";
import { ConfigMap, Deployment } from "../../k8s/index.js";
import { controller } from "../builder.js";
import { rbacRules } from "../rbac.js";
import {
  APPLYSET_PART_OF_LABEL,
  applySetId,
  asMember,
  checkTooling,
  groupKindOf,
  parentMetadata,
} from "./applyset.js";
import { dependents } from "./dependents.js";
import { creationWaves, deletionWaves } from "./graph.js";
import { readiness } from "./readiness.js";

// The pure parts of dependents: a declaration's mistakes fail where they are made, with the fix;
// the order; the ApplySet metadata; the built-in readiness. (What a reconcile does against an API
// server is in dependents.test.ts and dependents.memory.test.ts.)

const Thing = resourceType("test.kubeloop.dev/v1", "Thing", { plural: "things", namespaced: true });
const cm = (name: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
});
const node = (name: string, dependsOn: string[] = []) => ({ name, dependsOn });
const ctx = { client: undefined as never, signal: new AbortController().signal };

describe("a dependents declaration", () => {
  it("given to a controller, owns the kinds always served and grants RBAC without a watch for the others", () => {
    const Monitor = resourceType("monitoring.example.com/v1", "Monitor", {
      plural: "monitors",
      namespaced: true,
    });
    const children = dependents(Thing)
      .child("config", ConfigMap, () => cm("config"))
      .child("web", Deployment, () => undefined)
      .child("monitor", Monitor, () => undefined, { activeWhenServed: true });
    const spec = controller(Thing)
      .owns(ConfigMap)
      .dependents(children)
      .reconcile(() => undefined).spec;
    expect(spec.owns.map((owned) => owned.type.kind)).toEqual(["ConfigMap", "Deployment"]);
    expect(rbacRules([spec])).toContainEqual({
      apiGroups: ["monitoring.example.com"],
      resources: ["monitors"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    });
    expect(spec.watches).toEqual([]);
    const Nameless = resourceType("monitoring.example.com/v1", "Nameless");
    const unnamed = dependents(Thing).child("n", Nameless, () => undefined, { activeWhenServed: true });
    expect(() => controller(Thing).dependents(unnamed)).toThrow(/Nameless .* has no plural/);
  });
  it("refuses a dependency on a child not declared before, naming it", () => {
    expect(() => dependents(Thing).child("b", ConfigMap, () => cm("b"), { dependsOn: ["a"] })).toThrow(
      /dependent "b" depends on "a": declare "a" first/,
    );
  });
  it("refuses a name twice, and a name that cannot be a label value", () => {
    const d = dependents(Thing).child("a", ConfigMap, () => cm("a"));
    expect(() => d.child("a", ConfigMap, () => cm("a"))).toThrow(/declared twice/);
    expect(() => dependents(Thing).child("Not OK", ConfigMap, () => cm("x"))).toThrow(/lowercase/);
  });
  it("refuses a condition type that is not CamelCase, and a bad duration", () => {
    expect(() => dependents(Thing, { condition: "ready-ish" })).toThrow(/CamelCase/);
    expect(() => dependents(Thing, { poll: "soon" })).toThrow(/Invalid duration/);
  });
  it("lists the kinds of its children once each, for .owns(…)", () => {
    const d = dependents(Thing)
      .child("a", ConfigMap, () => cm("a"))
      .children("b", ConfigMap, () => [])
      .child("c", Deployment, () => undefined);
    expect(d.types.map((t) => t.kind)).toEqual(["ConfigMap", "Deployment"]);
  });
});

describe("the order", () => {
  it("creates in waves: independent children together, each after what it depends on", () => {
    const waves = creationWaves([
      node("secret"),
      node("svc", ["secret"]),
      node("pvc"),
      node("sts", ["svc", "pvc"]),
    ]);
    expect(waves.map((w) => w.map((n) => n.name))).toEqual([["secret", "pvc"], ["svc"], ["sts"]]);
  });
  it("deletes in reverse by default, or after the children deleteAfter names", () => {
    const nodes = [node("a"), node("b", ["a"]), node("c", ["b"])];
    expect(deletionWaves(nodes, () => undefined).map((w) => w.map((n) => n.name))).toEqual([
      ["c"],
      ["b"],
      ["a"],
    ]);
    const custom = deletionWaves(nodes, (n) => (n.name === "c" ? ["a"] : n.name === "a" ? [] : undefined));
    expect(custom.map((w) => w.map((n) => n.name))).toEqual([["a"], ["c"], ["b"]]);
  });
  it("names the children of a cycle of deleteAfter", () => {
    expect(() => deletionWaves([node("a"), node("b")], (n) => (n.name === "a" ? ["b"] : ["a"]))).toThrow(
      /"a", "b" wait for each other in a cycle/,
    );
  });
});

describe("ApplySet metadata", () => {
  const parent = { apiVersion: Thing.apiVersion, kind: "Thing", metadata: { name: "p", namespace: "ns" } };
  it("derives the id from the parent's group, kind, namespace and name: a valid label value", () => {
    const id = applySetId(parent, Thing);
    expect(id).toMatch(/^applyset-[A-Za-z0-9_-]{43}-v1$/);
    expect(id.length).toBeLessThanOrEqual(63);
    expect(applySetId({ ...parent, metadata: { name: "p", namespace: "other" } }, Thing)).not.toBe(id);
  });
  it("spells group-kinds as kubectl does, and writes the parent's metadata only when it differs", () => {
    expect(groupKindOf(Deployment)).toBe("Deployment.apps");
    expect(groupKindOf(ConfigMap)).toBe("ConfigMap");
    const body = parentMetadata(parent, Thing, ["Deployment.apps", "ConfigMap", "ConfigMap"]);
    expect(body?.metadata?.annotations).toEqual({
      "applyset.kubernetes.io/tooling": "kubeloop/v1",
      "applyset.kubernetes.io/contains-group-kinds": "ConfigMap,Deployment.apps",
    });
    expect(
      parentMetadata({ ...parent, metadata: { ...parent.metadata, ...body?.metadata } }, Thing, [
        "ConfigMap",
        "Deployment.apps",
      ]),
    ).toBeUndefined();
  });
  it("refuses a set another tool manages, and a child that sets another set's label", () => {
    const kubectl = {
      ...parent,
      metadata: { ...parent.metadata, annotations: { "applyset.kubernetes.io/tooling": "kubectl/v1.36" } },
    };
    expect(() => checkTooling(kubectl)).toThrow(
      /managed by "kubectl\/v1.36".*remove the applyset.kubernetes.io\/tooling annotation/,
    );
    const foreign = {
      ...cm("x"),
      metadata: { ...cm("x").metadata, labels: { [APPLYSET_PART_OF_LABEL]: "applyset-other-v1" } },
    };
    expect(() => asMember(foreign, applySetId(parent, Thing), "x")).toThrow(/leave that label out/);
  });
});

describe("built-in readiness", () => {
  it("Deployment: ready when its rollout is complete", async () => {
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { generation: 2 },
      spec: { replicas: 2 },
    };
    expect(
      await readiness.deployment({ ...deployment, status: { observedGeneration: 1 } } as never, ctx),
    ).toMatch(/generation 2/);
    const done = {
      observedGeneration: 2,
      replicas: 2,
      updatedReplicas: 2,
      availableReplicas: 2,
      readyReplicas: 2,
    };
    expect(await readiness.deployment({ ...deployment, status: done } as never, ctx)).toBe(true);
  });
  it("StatefulSet, Job, Pod, PVC and a custom resource's Ready condition", async () => {
    const sts = {
      metadata: { generation: 1 },
      spec: { replicas: 3 },
      status: { observedGeneration: 1, readyReplicas: 2, updatedReplicas: 3 },
    };
    expect(await readiness.statefulSet(sts as never, ctx)).toBe("2 of 3 replicas ready");
    expect(
      await readiness.statefulSet({ ...sts, status: { ...sts.status, readyReplicas: 3 } } as never, ctx),
    ).toBe(true);
    const failed = {
      status: {
        conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded", message: "x" }],
      },
    };
    expect(await readiness.job(failed as never, ctx)).toMatch(/failed \(BackoffLimitExceeded/);
    expect(
      await readiness.job({ status: { conditions: [{ type: "Complete", status: "True" }] } } as never, ctx),
    ).toBe(true);
    expect(
      await readiness.pod(
        { status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } } as never,
        ctx,
      ),
    ).toBe(true);
    expect(await readiness.persistentVolumeClaim({ status: { phase: "Pending" } } as never, ctx)).toMatch(
      /not Bound/,
    );
    const custom = readiness.condition();
    expect(
      await custom(
        {
          metadata: { generation: 3 },
          status: { conditions: [{ type: "Ready", status: "True", observedGeneration: 2 }] },
        } as never,
        ctx,
      ),
    ).toMatch(/generation 2, not 3/);
  });
  it("a Service without a selector is ready at once (nothing to wait for)", async () => {
    expect(await readiness.service({ spec: { ports: [] } } as never, ctx)).toBe(true);
  });
});
