import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import type { ControlPlane } from "../testing/control-plane.js";

// What a plain operator loads: only what runs. Each of these costs RSS and start-up time at import
// (docs/performance.md, "where the memory goes") and is needed by a feature a plain manager does
// not use: certificates, cron schedules, Prometheus metrics, tracing's SDK, the exec/OIDC paths.
const NOT_AT_START = [
  "node-forge",
  "cron-parser",
  "luxon",
  "prom-client",
  "@opentelemetry/sdk-trace-base",
  "@kubernetes/client-node",
];

// Node's module hooks, in the child: every module it loads (ES and CommonJS), printed at exit.
const RECORD = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from "node:module";
const loaded = new Set();
registerHooks({ load(url, context, next) { loaded.add(url); return next(url, context); } });
process.on("exit", () => process.stdout.write("LOADED " + JSON.stringify([...loaded]) + "\\n"));
`)}`;

/** Runs `script` (an ES module) in a Node with the built kubeloop; the packages it loaded. */
function packagesLoadedBy(script: string, env: Record<string, string> = {}): string[] {
  const run = spawnSync(process.execPath, ["--import", RECORD, "--input-type=module", "-e", script], {
    cwd: join(import.meta.dirname, "../.."),
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  expect(run.status, run.stderr).toBe(0);
  const line = run.stdout.split("\n").find((l) => l.startsWith("LOADED "));
  const urls = JSON.parse(line?.slice(7) ?? "[]") as string[];
  expect(urls.length).toBeGreaterThan(10);
  const names = urls.map((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1]).filter(Boolean);
  return [...new Set(names as string[])];
}

let plane: ControlPlane;
let client: Client;
beforeAll(async () => ({ plane, client } = await startPlane()), 120_000);
afterAll(() => stopPlane(plane, client));

describe("start-up", () => {
  it("importing kubeloop and making a manager loads neither YAML nor the optional features", () => {
    const loaded = packagesLoadedBy(`
      const { Manager } = await import("kubeloop");
      new Manager({ metrics: false, probes: false });
    `);
    expect(loaded).toEqual(expect.arrayContaining(["undici", "pino"]));
    for (const name of [...NOT_AT_START, "yaml"]) expect(loaded).not.toContain(name);
  });

  it("a plain manager running a controller loads only what runs (YAML for its kubeconfig)", () => {
    const loaded = packagesLoadedBy(
      `
      const { controller, done, Manager } = await import("kubeloop");
      const { ConfigMap } = await import("kubeloop/k8s");
      const manager = new Manager({ kubeconfig: process.env.KUBECONFIG, metrics: false, probes: false });
      manager.add(controller(ConfigMap).named("plain").reconcile(() => done()));
      const running = manager.start();
      await manager.ready;
      await manager.stop();
      await running;
    `,
      { KUBECONFIG: plane.kubeconfigPath },
    );
    expect(loaded).toEqual(expect.arrayContaining(["undici", "pino", "yaml"]));
    for (const name of NOT_AT_START) expect(loaded).not.toContain(name);
  });

  it("metrics on load prom-client, when the manager starts serving them", () => {
    const loaded = packagesLoadedBy(`
      const { Manager } = await import("kubeloop");
      await new Manager({ probes: false }).metrics.text();
    `);
    expect(loaded).toContain("prom-client");
  });
});
