import type { ConfigMap, Namespace } from "kubernetes-types/core/v1.js";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../client/types.js";
import { AlreadyOwned, InvalidOwnerReference } from "./errors.js";
import {
  controllerOf,
  controllerReference,
  isControlledBy,
  isOwnedBy,
  ownerReference,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "./owner-references.js";

function widget(name: string, uid: string, namespace = "shop", apiVersion = "example.com/v1"): KubeObject {
  return { apiVersion, kind: "Widget", metadata: { name, namespace, uid } };
}

function child(namespace = "shop"): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "child", namespace }, data: { a: "1" } };
}

const clusterScoped: Namespace = {
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name: "shop", uid: "ns-uid" },
};

describe("ownerReference / controllerReference", () => {
  it("a controller reference names the owner by apiVersion, kind, name and uid, with controller and blockOwnerDeletion true", () => {
    expect(controllerReference(widget("w", "uid-1"))).toEqual({
      apiVersion: "example.com/v1",
      kind: "Widget",
      name: "w",
      uid: "uid-1",
      controller: true,
      blockOwnerDeletion: true,
    });
  });

  it("a plain owner reference sets controller and blockOwnerDeletion only when asked", () => {
    expect(ownerReference(widget("w", "uid-1"))).toEqual({
      apiVersion: "example.com/v1",
      kind: "Widget",
      name: "w",
      uid: "uid-1",
    });
    expect(ownerReference(widget("w", "uid-1"), { blockOwnerDeletion: false })).toMatchObject({
      blockOwnerDeletion: false,
    });
  });

  it("refuses an owner without a uid: the garbage collector would see a dangling reference", () => {
    const built = {
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { name: "w", namespace: "shop" },
    };
    expect(() => controllerReference(built)).toThrow(InvalidOwnerReference);
    expect(() => controllerReference(built)).toThrow(/no metadata.uid/);
  });
});

describe("setControllerReference", () => {
  it("returns a copy with the controller reference added and leaves the input unchanged", () => {
    const original = child();
    const owned = setControllerReference(original, widget("w", "uid-1"));
    expect(owned.metadata?.ownerReferences).toEqual([controllerReference(widget("w", "uid-1"))]);
    expect(owned.data).toEqual({ a: "1" });
    expect(original.metadata?.ownerReferences).toBeUndefined();
  });

  it("is idempotent, and replaces the reference to the same owner served at another version", () => {
    const once = setControllerReference(child(), widget("w", "uid-1", "shop", "example.com/v1beta1"));
    const twice = setControllerReference(once, widget("w", "uid-1"));
    expect(twice.metadata?.ownerReferences).toHaveLength(1);
    expect(twice.metadata?.ownerReferences?.[0]?.apiVersion).toBe("example.com/v1");
  });

  it("keeps other (non-controller) owner references", () => {
    const shared = setOwnerReference(child(), widget("other", "uid-2"));
    const owned = setControllerReference(shared, widget("w", "uid-1"));
    expect(owned.metadata?.ownerReferences?.map((r) => r.name)).toEqual(["other", "w"]);
    expect(controllerOf(owned)?.name).toBe("w");
  });

  it("refuses a second controller, naming the first", () => {
    const owned = setControllerReference(child(), widget("first", "uid-1"));
    const error = (() => {
      try {
        setControllerReference(owned, widget("second", "uid-2"));
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(AlreadyOwned);
    expect((error as AlreadyOwned).existing.name).toBe("first");
    expect((error as Error).message).toMatch(/already controlled by Widget first.*Widget second/);
  });

  it("refuses an owner in another namespace", () => {
    expect(() => setControllerReference(child("other"), widget("w", "uid-1", "shop"))).toThrow(
      /cannot cross namespaces/,
    );
  });

  it("refuses a namespaced owner for a cluster-scoped object", () => {
    const clusterRole: KubeObject = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "r" },
    };
    expect(() => setControllerReference(clusterRole, widget("w", "uid-1"))).toThrow(InvalidOwnerReference);
    expect(() => setControllerReference(clusterRole, widget("w", "uid-1"))).toThrow(/cluster-scoped/);
  });

  it("lets a cluster-scoped owner own objects in any namespace and at cluster scope", () => {
    expect(controllerOf(setControllerReference(child("a"), clusterScoped))?.kind).toBe("Namespace");
    const clusterRole: KubeObject = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "r" },
    };
    expect(controllerOf(setControllerReference(clusterRole, clusterScoped))?.uid).toBe("ns-uid");
  });
});

describe("setOwnerReference / removeOwnerReference", () => {
  it("adds a non-controller reference, and does not demote an existing controller reference", () => {
    const shared = setOwnerReference(child(), widget("w", "uid-1"));
    expect(shared.metadata?.ownerReferences?.[0]?.controller).toBeUndefined();
    const controlled = setControllerReference(child(), widget("w", "uid-1"));
    expect(controllerOf(setOwnerReference(controlled, widget("w", "uid-1")))?.name).toBe("w");
  });

  it("removes every reference to the owner and keeps the others", () => {
    const both = setOwnerReference(
      setControllerReference(child(), widget("a", "uid-1")),
      widget("b", "uid-2"),
    );
    const orphaned = removeOwnerReference(both, widget("a", "uid-1"));
    expect(orphaned.metadata?.ownerReferences?.map((r) => r.name)).toEqual(["b"]);
    expect(controllerOf(orphaned)).toBeUndefined();
    expect(both.metadata?.ownerReferences).toHaveLength(2);
  });
});

describe("isOwnedBy / isControlledBy / controllerOf", () => {
  const owned = setOwnerReference(
    setControllerReference(child(), widget("w", "uid-1")),
    widget("x", "uid-2"),
  );

  it("matches by group, kind and name, across versions of the owner's API", () => {
    expect(isOwnedBy(owned, widget("w", "uid-1", "shop", "example.com/v2"))).toBe(true);
    expect(isOwnedBy(owned, widget("x", "uid-2"))).toBe(true);
    expect(isOwnedBy(owned, widget("y", "uid-3"))).toBe(false);
    expect(isOwnedBy(owned, { ...widget("w", "uid-1"), apiVersion: "other.com/v1" })).toBe(false);
  });

  it("does not match an owner recreated under the same name (another uid)", () => {
    expect(isOwnedBy(owned, widget("w", "uid-new"))).toBe(false);
  });

  it("tells the controller apart from other owners", () => {
    expect(isControlledBy(owned, widget("w", "uid-1"))).toBe(true);
    expect(isControlledBy(owned, widget("x", "uid-2"))).toBe(false);
    expect(controllerOf(owned)?.uid).toBe("uid-1");
    expect(controllerOf(child())).toBeUndefined();
  });
});
