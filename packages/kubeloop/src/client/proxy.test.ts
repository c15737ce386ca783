import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { namespaces, rejection } from "../../test/helpers.js";
import { ConfigMap } from "../k8s/index.js";
import { ControlPlane } from "../testing/control-plane.js";
import { startTunnelProxy } from "../testing/servers/proxy.js";
import { Client } from "./client.js";
import { ConnectionError } from "./errors.js";

/**
 * A cluster only a proxy leads to: the kubeconfig names the API server by a name that only the test
 * proxy resolves, so every byte the client exchanges with the server must pass through the proxy.
 */

let plane: ControlPlane;
let admin: Client;
const namespace = namespaces(() => admin, "proxy");

beforeAll(async () => {
  plane = await new ControlPlane().start();
  admin = await Client.connect({ kubeconfig: plane.kubeconfigPath });
});
afterAll(async () => {
  await admin?.close();
  await plane?.stop();
});

/** The admin kubeconfig, with the server behind `proxy-url`. */
function behindProxy(proxyUrl: string): string {
  const doc = parse(plane.kubeconfig);
  const cluster = doc.clusters[0].cluster;
  cluster.server = `https://kubernetes.default.svc:${new URL(plane.server).port}`;
  cluster["proxy-url"] = proxyUrl;
  return stringify(doc);
}

describe("proxy-url", () => {
  it.each(["http", "socks5"] as const)(
    "%s: requests and a watch go through the proxy, and nothing works once it is gone",
    async (kind) => {
      const ns = await namespace();
      const proxy = await startTunnelProxy({ hosts: { "kubernetes.default.svc": "127.0.0.1" } });
      const client = await Client.connect({
        kubeconfigText: behindProxy(kind === "http" ? proxy.httpUrl : proxy.socks5Url),
      });
      try {
        const created = await client.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "through", namespace: ns },
          data: { step: "1" },
        });
        const watch = client.watch(ConfigMap, {
          namespace: ns,
          resourceVersion: created.metadata.resourceVersion,
        });
        const event = watch.next();
        // The change comes from the admin, directly; the client sees it only through the proxy.
        const opened = proxy.tunnels.length;
        await admin.patch(ConfigMap, "through", { data: { step: "2" } }, { namespace: ns });
        const { value } = await event;
        expect(value).toMatchObject({ type: "MODIFIED", object: { data: { step: "2" } } });
        expect(opened).toBeGreaterThan(0);
        expect(new Set(proxy.tunnels)).toEqual(
          new Set([`kubernetes.default.svc:${new URL(plane.server).port}`]),
        );
        expect(proxy.bytes).toBeGreaterThan(0);
        await watch.return(undefined);

        await proxy.close();
        const error = await rejection(client.get({ type: ConfigMap, namespace: ns, name: "through" }));
        expect(error).toBeInstanceOf(ConnectionError);
        expect(error.message).toContain("through the proxy");
      } finally {
        await client.close();
        await proxy.close();
      }
    },
  );
});
