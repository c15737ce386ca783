import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startPlane, stopPlane, until } from "../../test/helpers.js";
import { InformerRegistry } from "../cache/registry.js";
import type { Client } from "../client/client.js";
import type { TypedObjectRef } from "../client/index.js";
import { ConfigMap, Secret } from "../k8s/index.js";
import type { Secret as SecretObject } from "../k8s/types/core/v1.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { type ControllerBuilder, controller } from "./builder.js";
import { ControllerCaches } from "./caches.js";
import type { CacheReader } from "./context.js";
import { done } from "./result.js";

/**
 * One kind cached twice by one controller (`.owns(ConfigMap)` beside a label-selected
 * `.watches(ConfigMap, …)`): `ctx.cache` reads must see every object some informer holds, not
 * whichever informer was registered last.
 */

let plane: ControlPlane;
let client: Client;
let registry: InformerRegistry;
const logger = pino({ level: process.env.TEST_LOG ?? "silent" });

beforeAll(async () => {
  ({ plane, client } = await startPlane());
  registry = new InformerRegistry(client);
});
afterAll(async () => {
  await registry?.stopAll();
  await stopPlane(plane, client);
});

const namespace = namespaces(() => client, "caches");

async function configMap(ns: string, name: string, labels: Record<string, string> = {}): Promise<void> {
  await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns, labels } });
}

interface Reads {
  plain: boolean;
  web: boolean;
  listed: string[];
}

/** What one reconcile of the Secret "app" sees of the ConfigMaps in `ns`. */
function read(cache: CacheReader, ns: string): Reads {
  return {
    plain: cache.get({ type: ConfigMap, namespace: ns, name: "plain" }) !== undefined,
    // The positional form of 0.1, deprecated until 0.3: the same read.
    web: cache.get(ConfigMap, "web", ns) !== undefined,
    listed: cache
      .list(ConfigMap, { namespace: ns })
      .map((c) => c.metadata?.name ?? "")
      .filter((name) => name !== "kube-root-ca.crt")
      .sort(),
  };
}

async function reconcileOnce(
  ns: string,
  name: string,
  configure: (builder: ControllerBuilder<SecretObject>) => void,
): Promise<Reads> {
  let reads: Reads | undefined;
  const builder = controller(Secret).named(name).inNamespace(ns);
  configure(builder);
  const c = builder.reconcile((_secret, ctx) => {
    reads = read(ctx.cache, ns);
    return done();
  });
  c.prepare({ client, registry, logger });
  try {
    await Promise.all(c.allInformers.map((i) => i.synced));
    c.start();
    await client.create({ apiVersion: "v1", kind: "Secret", metadata: { name: "app", namespace: ns } });
    await until(() => reads !== undefined, 10_000, "a reconcile of the Secret");
  } finally {
    await c.stop(1_000);
  }
  return reads as Reads;
}

describe("A controller caching one kind twice", () => {
  it("reads every object from an unselected owns() beside a label-selected watches()", async () => {
    const ns = await namespace();
    await configMap(ns, "plain");
    await configMap(ns, "web", { tier: "web" });
    const reads = await reconcileOnce(ns, "caches-both", (b) =>
      b
        .owns(ConfigMap)
        .watches(ConfigMap, (cm) => ({ namespace: cm.metadata?.namespace ?? ns, name: "app" }), {
          labelSelector: "tier=web",
        }),
    );
    expect(reads).toEqual({ plain: true, web: true, listed: ["plain", "web"] });
  });

  it("lists the union of two label-selected caches of one kind", async () => {
    const ns = await namespace();
    await configMap(ns, "plain");
    await configMap(ns, "web", { tier: "web" });
    await configMap(ns, "db", { tier: "db" });
    const reads = await reconcileOnce(ns, "caches-union", (b) =>
      b
        .owns(ConfigMap, { labelSelector: "tier=db" })
        .watches(ConfigMap, (cm) => ({ namespace: cm.metadata?.namespace ?? ns, name: "app" }), {
          labelSelector: "tier=web",
        }),
    );
    // "plain" is in neither cache: not seen, rather than read from a cache that does not hold it.
    expect(reads).toEqual({ plain: false, web: true, listed: ["db", "web"] });
  });
});

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
