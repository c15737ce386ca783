import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { developerShell } from "../../test/shell.js";
import { defaultAssetsRoot } from "../testing/assets/index.js";

// What npm would publish, as a user gets it: `npm pack` of kubeloop and create-kubeloop, installed
// by their tarball files into a clean project outside the workspace (their dependencies from the
// npm registry), which type-checks under nodenext and bundler resolution and runs a manager, with a
// controller, against a real API server that kubeloop/testing starts.

const packages = join(import.meta.dirname, "../../..");
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-tarball-"));
const project = join(tmp, "consumer");
const env = developerShell({ npm_config_prefer_offline: "true" });

function sh(command: string, args: string[], cwd = project) {
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8", timeout: 600_000 });
  return { code: result.status, stdout: result.stdout, output: `${result.stdout}${result.stderr}` };
}

function pack(name: string): string {
  const packed = sh("npm", ["pack", "--json", "--pack-destination", tmp], join(packages, name));
  expect(packed.code, packed.output).toBe(0);
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  return join(tmp, filename);
}

const MAIN = `import { Client, controller, done, Manager } from "kubeloop";
import { ConfigMap } from "kubeloop/k8s";
import { ControlPlane } from "kubeloop/testing";

const plane = await new ControlPlane({ profile: "apiserver" }).start();
const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
const seen = new Set<string>();
const echo = controller(ConfigMap)
  .named("echo")
  .reconcile((configMap) => {
    seen.add(configMap.metadata?.name ?? "");
    return done();
  });
const manager = new Manager({ client, metrics: false, probes: false, handleSignals: false }).add(echo);
const running = manager.start();
await manager.ready;
await client.create({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "hello", namespace: "default" },
  data: { a: "b" },
});
const deadline = Date.now() + 30_000;
while (!seen.has("hello") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
await manager.stop();
await running;
await client.close();
await plane.stop();
console.log(seen.has("hello") ? "reconciled hello" : "hello was not reconciled");
process.exitCode = seen.has("hello") ? 0 : 1;
`;

const tsconfig = (moduleResolution: "nodenext" | "bundler") => ({
  compilerOptions: {
    target: "es2023",
    module: moduleResolution === "bundler" ? "esnext" : "nodenext",
    moduleResolution,
    lib: ["es2023"],
    types: ["node"],
    strict: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    // Only the consumer's code and kubeloop's declarations are checked, not every dependency's.
    skipLibCheck: true,
  },
  include: ["main.ts"],
});

let tarballs: string[] = [];

beforeAll(() => {
  tarballs = [pack("kubeloop"), pack("create-kubeloop")];
  mkdirSync(project);
  const { devDependencies } = JSON.parse(readFileSync(join(packages, "../package.json"), "utf8")) as {
    devDependencies: Record<string, string>;
  };
  const manifest = {
    name: "consumer",
    private: true,
    type: "module",
    dependencies: {},
    devDependencies: {
      typescript: devDependencies.typescript,
      "@types/node": devDependencies["@types/node"],
    },
  };
  writeFileSync(join(project, "package.json"), JSON.stringify(manifest, null, 2));
  writeFileSync(join(project, "main.ts"), MAIN);
  writeFileSync(join(project, "tsconfig.json"), JSON.stringify(tsconfig("nodenext"), null, 2));
  writeFileSync(join(project, "tsconfig.bundler.json"), JSON.stringify(tsconfig("bundler"), null, 2));
  const install = sh("npm", ["install", "--no-audit", "--no-fund", ...tarballs]);
  expect(install.code, install.output).toBe(0);
}, 600_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the packed packages, installed from their tarballs", () => {
  it("install as dependencies, with kubeloop's and create-kubeloop's commands", () => {
    const json = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(json.dependencies).sort()).toEqual(["create-kubeloop", "kubeloop"]);
    expect(json.dependencies.kubeloop).toMatch(/^file:.*kubeloop-\d+\.\d+\.\d+.*\.tgz$/);
    const help = sh(join(project, "node_modules/.bin/kubeloop"), ["--help"]);
    expect(help.code, help.output).toBe(0);
    expect(help.output).toContain("kubeloop upgrade");
    const license = readFileSync(join(project, "node_modules/kubeloop/LICENSE"), "utf8");
    expect(license).toContain("Apache License");
  });

  it("type-checks a consumer under nodenext and bundler module resolution", () => {
    for (const config of ["tsconfig.json", "tsconfig.bundler.json"]) {
      const tsc = sh(join(project, "node_modules/.bin/tsc"), ["-p", config]);
      expect(tsc.code, `${config}: ${tsc.output}`).toBe(0);
    }
  });

  it("runs a manager whose controller reconciles a ConfigMap on a real API server", () => {
    const run = spawnSync(process.execPath, ["main.ts"], {
      cwd: project,
      env: { ...env, KUBELOOP_ASSETS: defaultAssetsRoot() },
      encoding: "utf8",
      timeout: 180_000,
    });
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
    expect(run.stdout).toContain("reconciled hello");
  }, 200_000);
});
