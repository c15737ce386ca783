import { describe, expect, it } from "vitest";
import { resourceType } from "../client/types.js";
import { ConfigMap, Deployment, Node, Pod } from "../k8s/index.js";
import { controller } from "./builder.js";
import { rbacRoles, rbacRules } from "./rbac.js";

const Shop = resourceType("shop.example.com/v1", "Shop", { plural: "shops", namespaced: true });

const shops = () =>
  controller(Shop)
    .owns(Deployment)
    .watches(Pod, () => undefined);

describe("rbacRoles for a manager watching some namespaces", () => {
  it("gives each namespace a Role with the namespaced grants, and writes no ClusterRole when nothing is cluster-scoped", () => {
    const roles = rbacRoles([shops().reconcile(() => undefined).spec], { namespaces: ["team-b", "team-a"] });
    expect(roles.cluster).toEqual([]);
    expect(Object.keys(roles.namespaced)).toEqual(["team-a", "team-b"]);
    expect(roles.namespaced["team-a"]).toEqual(roles.namespaced["team-b"]);
    // Exactly what the same controller gets cluster-wide: the scope changes, not the grants.
    expect(roles.namespaced["team-a"]).toEqual(rbacRules([shops().reconcile(() => undefined).spec]));
  });

  it("keeps the grants of cluster-scoped types in a ClusterRole, and only those", () => {
    const withNodes = shops()
      .watches(Node, () => undefined)
      .reconcile(() => undefined);
    const roles = rbacRoles([withNodes.spec], { namespaces: ["team-a", "team-b"] });
    expect(roles.cluster).toEqual([
      { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] },
    ]);
    for (const rules of Object.values(roles.namespaced)) {
      expect(rules.some((rule) => rule.resources.includes("nodes"))).toBe(false);
      expect(rules.some((rule) => rule.resources.includes("pods"))).toBe(true);
    }
  });

  it("lets a controller's own namespaces win over the manager's", () => {
    const own = controller(ConfigMap)
      .named("own")
      .inNamespaces(["audit"])
      .reconcile(() => undefined);
    const roles = rbacRoles([shops().reconcile(() => undefined).spec, own.spec], { namespaces: ["team-a"] });
    expect(Object.keys(roles.namespaced)).toEqual(["audit", "team-a"]);
    const audit = roles.namespaced.audit?.map((rule) => rule.resources[0] ?? "") ?? [];
    expect(audit).toContain("configmaps");
    expect(audit.filter((resource) => !resource.startsWith("configmaps"))).toEqual(["events"]);
    expect(roles.namespaced["team-a"]?.some((rule) => rule.resources.includes("configmaps"))).toBe(false);
  });

  it("is today's ClusterRole without namespaces (none given, or an empty list)", () => {
    const spec = shops().reconcile(() => undefined).spec;
    expect(rbacRoles([spec], {})).toEqual(rbacRoles([spec]));
    expect(rbacRoles([spec], { namespaces: [] })).toEqual({ cluster: rbacRules([spec]), namespaced: {} });
  });
});

describe("inNamespaces", () => {
  it("refuses an empty list, a malformed name, and a namespace given twice, saying which", () => {
    expect(() => controller(Shop).inNamespaces([])).toThrow("give at least one namespace");
    expect(() => controller(Shop).inNamespaces(["team-a", "Team_B"])).toThrow(
      'inNamespaces: "Team_B" is not a namespace name',
    );
    expect(() => controller(Shop).inNamespaces(["a", "a"])).toThrow('namespace "a" is given twice');
  });
});
