/**
 * Captures the built-in kinds' aggregated discovery from a real kube-apiserver (ControlPlane,
 * apiserver profile, no CRDs) and writes builtin-discovery.json, the data builtin-discovery.ts
 * serves. Run it when the Kubernetes version changes:
 * `npm run build && node packages/kubeloop/dist/testing/memory/capture-discovery.js`.
 * conformance.test.ts checks the data against a live server, so it cannot drift unnoticed.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "../../client/index.js";
import { ControlPlane } from "../control-plane.js";

/** The aggregated discovery media type; the server answers the legacy documents to plain JSON. */
export const AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/** `/api` and `/apis` as aggregated discovery documents, from the server `client` talks to. */
export async function readDiscovery(client: Client): Promise<{ core: unknown; groups: unknown }> {
  const get = async (path: string) =>
    (await client.transport.request({ method: "GET", path, accept: AGGREGATED_DISCOVERY })).body;
  return { core: await get("/api"), groups: await get("/apis") };
}

async function main(): Promise<void> {
  const plane = await new ControlPlane({ profile: "apiserver" }).start();
  const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  try {
    const version = (await client.transport.request({ method: "GET", path: "/version" })).body as {
      gitVersion: string;
    };
    const documents = await readDiscovery(client);
    // Run from dist/testing/memory: the data goes next to this file's source, formatted as the
    // repository's formatter (biome) would, so a capture with no change leaves no diff.
    const target = fileURLToPath(
      new URL("../../../src/testing/memory/builtin-discovery.json", import.meta.url),
    );
    writeFileSync(target, `${JSON.stringify({ capturedFrom: version.gitVersion, ...documents }, null, 2)}\n`);
    execFileSync("npx", ["biome", "format", "--write", target], { stdio: "inherit" });
    process.stdout.write(`wrote ${target}\n`);
  } finally {
    await client.close();
    await plane.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
