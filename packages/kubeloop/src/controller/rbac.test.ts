import { describe, expect, it } from "vitest";
import { resourceType } from "../client/types.js";
import { ConfigMap, Deployment, Pod } from "../k8s/index.js";
import { controller } from "./builder.js";
import { rbacRules } from "./rbac.js";

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
      { apiGroups: ["shop.example.com"], resources: ["shops/status"], verbs: ["get", "update", "patch"] },
    ]);
  });

  it("asks for a plural it cannot know", () => {
    const Nameless = resourceType("x.example.com/v1", "Thing");
    expect(() => rbacRules([controller(Nameless).reconcile(() => undefined).spec])).toThrow(
      /Thing \(x\.example\.com\/v1\) has no plural/,
    );
  });
});
