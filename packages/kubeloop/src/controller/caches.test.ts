import { describe, expect, it } from "vitest";
import type { InformerRegistry } from "../cache/index.js";
import type { TypedObjectRef } from "../client/index.js";
import { ConfigMap } from "../k8s/index.js";
import { ControllerCaches } from "./caches.js";

// ctx.cache's reads before any informer is asked: the mistakes a reconciler can make.

describe("ctx.cache.get", () => {
  const caches = new ControllerCaches("readers", {} as InformerRegistry, undefined);

  it("names the fix for a reference without its type", () => {
    const untyped = { namespace: "default", name: "settings" } as TypedObjectRef;
    expect(() => caches.reader.get(untyped)).toThrow(
      /ctx.cache.get: the reference to "settings" needs its type: get\(\{ type: ConfigMap, namespace, name \}\)/,
    );
  });

  it("names the fix for a kind the controller does not cache", () => {
    expect(() => caches.reader.get({ type: ConfigMap, namespace: "default", name: "settings" })).toThrow(
      /ConfigMap is not cached by controller "readers": add .owns\(ConfigMap\) or .watches\(ConfigMap, …\)/,
    );
  });
});
