import { describe, expect, it } from "vitest";
import { generate } from "./builtin.js";
import type { Capture } from "./model.js";

const meta = {
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
    type: "object",
    properties: {
      name: { type: "string" },
      finalizers: { type: "array", items: { type: "string" }, "x-kubernetes-list-type": "set" },
    },
  },
};
const kind = (name: string, properties: Record<string, unknown>) => ({
  [`io.k8s.api.demo.v1.${name}`]: {
    type: "object",
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { $ref: "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" },
      ...properties,
    },
    "x-kubernetes-group-version-kind": [{ group: "demo.k8s.io", version: "v1", kind: name }],
  },
});
const served = (name: string) => ({
  group: "demo.k8s.io",
  version: "v1",
  kind: name,
  plural: `${name.toLowerCase()}s`,
  namespaced: true,
  verbs: ["get"],
});
const capture = (version: string, schemas: Record<string, unknown>, kinds: string[]): Capture =>
  ({
    capturedFrom: version,
    groupVersions: ["demo.k8s.io/v1"],
    resources: kinds.map(served),
    schemas,
  }) as Capture;

describe("the built-in generator across captured versions", () => {
  const files = generate({
    captures: [
      {
        minor: "1.35",
        data: capture(
          "v1.35.0",
          { ...meta, ...kind("Old", {}), ...kind("Widget", { size: { type: "integer" } }) },
          ["Old", "Widget"],
        ),
      },
      {
        minor: "1.36",
        data: capture(
          "v1.36.0",
          {
            ...meta,
            ...kind("Widget", { size: { type: "integer" }, color: { type: "string" } }),
            ...kind("Gadget", {}),
          },
          ["Widget", "Gadget"],
        ),
      },
    ],
  });
  const types = files.get("types/demo/v1.ts") ?? "";
  const kinds = files.get("kinds.ts") ?? "";

  it("tags what appeared after the oldest capture with @since, and what the newest lacks as removed", () => {
    expect(types).toMatch(/@since Kubernetes 1\.36 \*\/\n\s*color\?: string;/);
    expect(types).not.toMatch(/@since[^\n]*\n\s*size\?/);
    expect(types).toContain("/** @since Kubernetes 1.36 */\nexport interface Gadget");
    expect(types).toContain("/** @deprecated Removed in Kubernetes 1.36. */\nexport interface Old");
    expect(kinds).toMatch(/@since Kubernetes 1\.36\n \*\/\nexport const Gadget/);
    expect(kinds).toMatch(/@deprecated Removed in Kubernetes 1\.36\.\n \*\/\nexport const Old/);
  });

  it("pins apiVersion and kind, and keeps the list table", () => {
    expect(types).toContain('apiVersion?: "demo.k8s.io/v1";');
    expect(types).toContain('kind?: "Widget";');
    expect(JSON.parse(files.get("lists.json") ?? "{}")).toEqual({
      "demo/v1.Gadget": { metadata: { of: "meta/v1.ObjectMeta" } },
      "demo/v1.Old": { metadata: { of: "meta/v1.ObjectMeta" } },
      "demo/v1.Widget": { metadata: { of: "meta/v1.ObjectMeta" } },
      "meta/v1.ObjectMeta": { finalizers: { list: "set" } },
    });
  });
});
