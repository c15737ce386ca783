import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KubeObject, resourceType } from "../../client/types.js";
import { kubectl } from "../kubectl.js";
import type { ServedMemoryApiServer } from "./https.js";
import { MemoryApiServer } from "./server.js";

// The in-memory API server on a loopback HTTPS port, driven by the machine's kubectl.

let server: MemoryApiServer;
let served: ServedMemoryApiServer;
// --validate=false: kubectl's validation needs the OpenAPI documents, which are not served.
const k = (args: string[], input?: string) =>
  kubectl(args[0] === "get" || args[0] === "delete" ? args : [...args, "--validate=false"], {
    kubeconfig: served.kubeconfigPath,
    ...(input ? { input } : {}),
  });

beforeAll(async () => {
  server = new MemoryApiServer();
  served = await server.serve();
});
afterAll(async () => {
  await served?.close();
});

describe("MemoryApiServer over HTTPS", () => {
  it("serves kubectl create, get, server-side apply and delete", async () => {
    const blue = JSON.stringify({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "settings" },
      data: { color: "blue" },
    });
    const created = await k(["create", "-f", "-"], blue);
    expect(created.code, created.stderr).toBe(0);
    const got = await k(["get", "configmap", "settings", "-o", "jsonpath={.data.color}"]);
    expect(got.stdout).toBe("blue");
    const manifest = JSON.stringify({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "settings", namespace: "default" },
      data: { color: "red" },
    });
    const applied = await k(["apply", "--server-side", "--force-conflicts", "-f", "-"], manifest);
    expect(applied.code, applied.stderr).toBe(0);
    const object = await server
      .client()
      .get(resourceType<KubeObject & { data?: Record<string, string> }>("v1", "ConfigMap"), "settings", {
        namespace: "default",
      });
    expect(object.data).toEqual({ color: "red" });
    const deleted = await k(["delete", "configmap", "settings"]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await k(["get", "configmap", "settings"])).stderr).toContain('configmaps "settings" not found');
  });

  it("answers a refused feature with its message", async () => {
    const manifest = JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } });
    const dryRun = await k(["create", "-f", "-", "--dry-run=server"], manifest);
    expect(dryRun.code).not.toBe(0);
    expect(dryRun.stderr).toContain("does not emulate dry-run requests");
    const typed = await k(["create", "configmap", "y"]);
    expect(typed.stderr).toContain(
      "kubectl's typed commands such as `kubectl create configmap` send protobuf",
    );
  });

  it("streams a watch to kubectl get --watch", async () => {
    const watching = kubectl(
      ["get", "configmaps", "--watch", "--output-watch-events", "-o", "name", "--request-timeout=3s"],
      {
        kubeconfig: served.kubeconfigPath,
        timeoutMs: 10_000,
      },
    );
    await expect.poll(() => server.watchCount, { timeout: 5000 }).toBeGreaterThan(0);
    await server
      .client()
      .create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "watched", namespace: "default" } });
    const result = await watching;
    expect(result.stdout).toContain("configmap/watched");
  });
});
