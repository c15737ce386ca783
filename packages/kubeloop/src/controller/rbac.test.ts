import { describe, expect, it } from "vitest";
import { resourceType } from "../client/types.js";
import { ConfigMap, Deployment, Node, Pod, Secret } from "../k8s/index.js";
import { controller } from "./builder.js";
import { rbacRoles, rbacRules } from "./rbac.js";

const Shop = resourceType("shop.example.com/v1", "Shop", { plural: "shops", namespaced: true });

describe("rbacRules", () => {
  it("grants what the controllers declare, merged per resource, in a stable order", () => {
    const shops = controller(Shop)
      .owns(Deployment)
      .watches(Pod, () => undefined)
      .reconcile(() => undefined);
    const audit = controller(Shop)
      .named("audit")
      .watches(ConfigMap, () => undefined)
      .reconcile(() => undefined);
    expect(rbacRules([shops.spec, audit.spec])).toEqual([
      { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] },
      { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] },
      {
        apiGroups: ["apps"],
        resources: ["deployments"],
        verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
      },
      { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
      {
        apiGroups: ["shop.example.com"],
        resources: ["shops"],
        verbs: ["get", "list", "watch", "update", "patch"],
      },
      { apiGroups: ["shop.example.com"], resources: ["shops/finalizers"], verbs: ["update"] },
      { apiGroups: ["shop.example.com"], resources: ["shops/status"], verbs: ["get", "update", "patch"] },
    ]);
  });

  it("lets every primary's children carry blockOwnerDeletion: update on the primary's finalizers", () => {
    // OwnerReferencesPermissionEnforcement (OpenShift, hardened clusters) refuses a child whose
    // owner reference blocks deletion unless its writer may update the owner's finalizers; ctx.apply
    // sets such a reference on whatever it applies, owned types declared or not.
    const bare = controller(Shop).reconcile(() => undefined);
    expect(rbacRules([bare.spec])).toContainEqual({
      apiGroups: ["shop.example.com"],
      resources: ["shops/finalizers"],
      verbs: ["update"],
    });
    const local = controller(Shop)
      .inNamespace("team-a")
      .reconcile(() => undefined);
    expect(rbacRoles([local.spec]).namespaced["team-a"]).toContainEqual({
      apiGroups: ["shop.example.com"],
      resources: ["shops/finalizers"],
      verbs: ["update"],
    });
  });

  it("asks for a plural it cannot know", () => {
    const Nameless = resourceType("x.example.com/v1", "Thing");
    expect(() => rbacRules([controller(Nameless).reconcile(() => undefined).spec])).toThrow(
      /Thing \(x\.example\.com\/v1\) has no plural/,
    );
  });

  it("adds what a controller permits beyond its types", () => {
    const shops = controller(Shop)
      .permits({ apiGroups: [""], resources: ["secrets"], verbs: ["get"] })
      .reconcile(() => undefined);
    expect(rbacRules([shops.spec])).toContainEqual({
      apiGroups: [""],
      resources: ["secrets"],
      verbs: ["get"],
    });
    expect(() => controller(Shop).permits({ apiGroups: [""], resources: ["secrets"], verbs: [] })).toThrow(
      "a rule needs apiGroups, resources and verbs",
    );
  });
});

describe("rbacRoles", () => {
  it("puts a namespace-bound controller's namespaced grants in a Role there, cluster-scoped ones in the ClusterRole", () => {
    const local = controller(Shop)
      .inNamespace("team-a")
      .owns(Secret)
      .watches(Node, () => undefined)
      .permits({ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] })
      .reconcile(() => undefined);
    const roles = rbacRoles([local.spec]);
    expect(roles.cluster).toEqual([
      { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] },
    ]);
    expect(Object.keys(roles.namespaced)).toEqual(["team-a"]);
    expect(roles.namespaced["team-a"]?.map((r) => r.resources[0])).toEqual([
      "configmaps",
      "secrets",
      "events",
      "shops",
      "shops/finalizers",
      "shops/status",
    ]);
  });

  it("keeps a cluster-wide controller's grants in the ClusterRole alone", () => {
    const wide = controller(Shop)
      .owns(Deployment)
      .reconcile(() => undefined);
    const roles = rbacRoles([wide.spec]);
    expect(roles.namespaced).toEqual({});
    expect(roles.cluster).toEqual(rbacRules([wide.spec]));
  });
});
