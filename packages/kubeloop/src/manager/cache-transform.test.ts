import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startManager, startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import type { KubeObject } from "../client/types.js";
import { controller } from "../controller/builder.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import type { ManagerOptions } from "./options.js";

let plane: ControlPlane;
let client: Client;
beforeAll(async () => {
  ({ plane, client } = await startPlane());
});
afterAll(() => stopPlane(plane, client));
const namespace = namespaces(() => client, "cache-transform");

/** What the manager's cache holds for one ConfigMap, as a reconcile reads it. */
async function cached(options: ManagerOptions): Promise<KubeObject | undefined> {
  const ns = await namespace();
  // With data: the server keeps no managedFields entry for an empty field set.
  await client.create({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "seen", namespace: ns },
    data: { a: "1" },
  });
  let seen: KubeObject | undefined;
  const { manager, running } = await startManager(
    { client, namespaces: [ns], ...options },
    controller(ConfigMap)
      .named(`cache-transform-${ns}`)
      .reconcile((_, ctx) => {
        seen = ctx.cache.get({ type: ConfigMap, namespace: ctx.namespace, name: ctx.name });
      }),
  );
  await until(() => seen !== undefined, 10_000, "the ConfigMap to be reconciled");
  await manager.stop();
  await running;
  return seen;
}

describe("the manager's cache transform", () => {
  it("drops managedFields by default, keeps them with cacheTransform: null, and applies a given one", async () => {
    const stripped = await cached({});
    expect(stripped?.metadata?.name).toBe("seen");
    expect(stripped?.metadata?.managedFields).toBeUndefined();
    const kept = await cached({ cacheTransform: null });
    expect(kept?.metadata?.managedFields?.[0]).toMatchObject({ operation: "Update", fieldsType: "FieldsV1" });
    const labelled = await cached({
      cacheTransform: (object) => ({
        ...object,
        metadata: { ...object.metadata, labels: { transformed: "yes" } },
      }),
    });
    expect(labelled?.metadata?.labels).toEqual({ transformed: "yes" });
    expect(labelled?.metadata?.managedFields).toHaveLength(1);
  });
});
