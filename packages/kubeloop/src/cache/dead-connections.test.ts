import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, rejection, startPlane, stopPlane, until } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { loadConfig } from "../client/config.js";
import { ConnectionError } from "../client/errors.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { type FaultProxy, startFaultProxy } from "../testing/faults/fault-proxy.js";
import { Informer } from "./informer.js";
import { DEFAULT_WATCH_INACTIVITY_MS } from "./reflector.js";

// A half-open connection (a proxy that stops moving bytes but keeps the connection open) between a
// client and a real API server, with the library's default timeouts.
let plane: ControlPlane;
let client: Client;
let proxy: FaultProxy;

const namespace = namespaces(() => client, "dead-connections");

async function clientThroughProxy(options: { requestTimeoutMs?: number } = {}): Promise<Client> {
  const config = await loadConfig({ kubeconfig: plane.kubeconfigPath });
  return new Client({ ...config, server: proxy.url }, options);
}

beforeAll(async () => ({ plane, client } = await startPlane()));
afterAll(() => stopPlane(plane, client));

describe("A connection that stops moving bytes", () => {
  it("is found by a watch within 30 s, which resumes from its resourceVersion without a relist", async () => {
    proxy = await startFaultProxy({ target: new URL(plane.server) });
    const ns = await namespace();
    const viaProxy = await clientThroughProxy();
    const informer = new Informer(viaProxy, ConfigMap, { namespace: ns });
    const errors: Error[] = [];
    informer.onError((error) => errors.push(error));
    informer.start();
    await informer.synced;
    await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "before", namespace: ns } });
    await until(() => informer.get("before", ns) !== undefined, 10_000, "the watch to deliver");
    const lists = informer.stats.lists;

    proxy.stall();
    const stalled = performance.now();
    await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "during", namespace: ns } });
    await until(() => informer.get("during", ns) !== undefined, 30_000, "the change made during the stall");
    const noticedAfterMs = performance.now() - stalled;

    expect(informer.stats.lists).toBe(lists);
    expect(informer.stats.relistsAfterGone).toBe(0);
    expect(viaProxy.transport.poolReplacements).toBeGreaterThanOrEqual(1);
    expect(
      errors.some((error) => error instanceof ConnectionError && /UND_ERR_BODY_TIMEOUT/.test(error.message)),
    ).toBe(true);
    // Found by the inactivity bound (not by a lucky server-side end of the watch).
    expect(noticedAfterMs).toBeLessThan(DEFAULT_WATCH_INACTIVITY_MS + 10_000);
    await informer.stop();
    await viaProxy.close();
    await proxy.close();
  });

  it("fails a read in flight on it, which is retried on a fresh connection", async () => {
    proxy = await startFaultProxy({ target: new URL(plane.server) });
    const ns = await namespace();
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "read-me", namespace: ns },
    });
    const viaProxy = await clientThroughProxy({ requestTimeoutMs: 2_000 });
    await viaProxy.get({ type: ConfigMap, namespace: ns, name: "read-me" }); // leaves a kept-alive connection
    const accepted = proxy.stats.accepted;
    proxy.stall();
    const read = await viaProxy.get({ type: ConfigMap, namespace: ns, name: "read-me" });
    expect(read.metadata?.name).toBe("read-me");
    expect(viaProxy.transport.poolReplacements).toBe(1);
    expect(proxy.stats.accepted).toBeGreaterThan(accepted);
    await viaProxy.close();
    await proxy.close();
  });

  it("fails a write in flight on it with a ConnectionError naming the timeout; the next write goes through", async () => {
    proxy = await startFaultProxy({ target: new URL(plane.server) });
    const ns = await namespace();
    const viaProxy = await clientThroughProxy({ requestTimeoutMs: 2_000 });
    await viaProxy.get({ type: ConfigMap, namespace: ns, name: "absent" }).catch(() => undefined);
    proxy.stall();
    const create = (name: string) =>
      viaProxy.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns } });
    const error = await rejection(create("lost"));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error.message).toMatch(/POST .*configmaps.*UND_ERR_HEADERS_TIMEOUT/);
    expect((await create("second")).metadata?.name).toBe("second");
    await viaProxy.close();
    await proxy.close();
  });
});
