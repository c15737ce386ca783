import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane } from "../../test/helpers.js";
import type { Client } from "../client/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { kubectl } from "../testing/kubectl.js";
import {
  BUILTIN_KINDS,
  Deployment,
  listTypeAt,
  Service,
  type storage,
  VolumeAttributesClass,
} from "./index.js";

let plane: ControlPlane;
let client: Client;
beforeAll(async () => ({ plane, client } = await startPlane({ profile: "apiserver" })));
afterAll(() => stopPlane(plane, client));

describe("kubeloop/k8s's descriptors", () => {
  it("name every kind `kubectl api-resources` lists, with its plural and scope", async () => {
    const result = await kubectl(["api-resources", "--no-headers"], {
      kubeconfig: plane.kubeconfigPath,
    });
    expect(result.code, result.stderr).toBe(0);
    const rows = result.stdout
      .trim()
      .split("\n")
      .map((line) => line.trim().split(/\s+/));
    expect(rows.length).toBeGreaterThan(50);
    const missing: string[] = [];
    for (const row of rows) {
      // NAME [SHORTNAMES] APIVERSION NAMESPACED KIND: APIVERSION is the cell before NAMESPACED.
      const at = row.findIndex((_cell, i) => i > 0 && (row[i + 1] === "true" || row[i + 1] === "false"));
      const [plural, apiVersion, namespaced, kind] = [row[0], row[at], row[at + 1] === "true", row[at + 2]];
      const found = BUILTIN_KINDS.find((t) => t.apiVersion === apiVersion && t.kind === kind);
      if (!found || found.plural !== plural || found.namespaced !== namespaced)
        missing.push(`${apiVersion} ${kind} (${plural}, namespaced ${namespaced})`);
    }
    expect(missing).toEqual([]);
  });

  it("carry how lists merge, from the schema", () => {
    expect(listTypeAt(Deployment, ["spec", "template", "spec", "containers"])).toEqual({
      type: "map",
      keys: ["name"],
      patchMergeKey: "name",
      patchStrategy: "merge",
    });
    expect(listTypeAt(Deployment, ["spec", "template", "spec", "containers", "ports"])).toMatchObject({
      type: "map",
      keys: ["containerPort", "protocol"],
    });
    expect(listTypeAt(Service, ["spec", "ports"])).toMatchObject({ type: "map", keys: ["port", "protocol"] });
    expect(listTypeAt(Deployment, ["metadata", "finalizers"])).toMatchObject({ type: "set" });
    expect(listTypeAt(Deployment, ["spec", "selector"])).toEqual({ type: "atomic-struct" });
    expect(listTypeAt(Deployment, ["spec", "template", "spec", "nodeSelector"])).toEqual({
      type: "atomic-struct",
    });
    expect(listTypeAt(Deployment, ["spec", "replicas"])).toEqual({ type: "atomic" });
    expect(Deployment.subresources).toEqual(["scale", "status"]);
  });
});

describe("a kind newer than kubernetes-types (1.30): VolumeAttributesClass, storage.k8s.io/v1 since 1.34", () => {
  it("is created, read and applied with its fields typed", async () => {
    // kubernetes-types stops at 1.30 and has no such type:
    // @ts-expect-error VolumeAttributesClass is not in kubernetes-types
    type Old = import("kubernetes-types/storage/v1.js").VolumeAttributesClass;
    const object: storage.VolumeAttributesClass = {
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttributesClass",
      metadata: { name: "gold" },
      driverName: "csi.example.com",
      parameters: { iops: "3000" },
    };
    const created = await client.create(object);
    expect(created.driverName).toBe("csi.example.com");
    const read = await client.get({ type: VolumeAttributesClass, name: "gold" });
    const driver: string = read.driverName;
    expect(driver).toBe("csi.example.com");
    const applied = await client.apply(
      { ...object, metadata: { name: "gold", labels: { tier: "gold" } } },
      { fieldManager: "kinds-test", force: true },
    );
    expect(applied.metadata?.labels).toEqual({ tier: "gold" });
    expect(applied.parameters).toEqual({ iops: "3000" });
    // parameters are immutable: the server's own validation answers, as for any kind.
    await expect(
      client.apply({ ...object, parameters: { iops: "6000" } }, { fieldManager: "kinds-test", force: true }),
    ).rejects.toThrow(/updates to parameters are forbidden/);
    void (undefined as unknown as Old);
  });
});
