import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AssetsMirror, startAssetsMirror } from "../../test/assets-mirror.js";
import { type NpmRegistry, packAt, startNpmRegistry } from "../../test/npm-registry.js";
import { developerShell } from "../../test/shell.js";
import { defaultAssetsRoot, ensureAssets, readBuildInfo } from "../testing/assets/index.js";
import { componentsFor, KUBERNETES_VERSION } from "../testing/assets/versions.js";
import { REAL_NODE_BINARIES } from "../testing/control-plane/node-host.js";
import { kubectl } from "../testing/kubectl.js";
import { CertificateAuthority } from "../testing/pki.js";
import { KUBELOOP_VERSION } from "./scaffold/versions.js";

// A newcomer's first run on a machine with Node and no Go: `go` is off the PATH, the asset cache
// is empty, and KUBELOOP_ASSETS_MIRROR points at an HTTPS mirror on loopback (its own CA, given to
// Node with NODE_EXTRA_CA_CERTS) whose tree `kubeloop assets pack --mirror` wrote from this
// project's cached builds. A project made by `npm create kubeloop` + `create api` passes its
// `npm test` and `npm run test:e2e`, and `kubeloop cluster start --profile node` runs a pod; every
// binary in the fresh cache was downloaded and checked, none built.

const packageDir = join(import.meta.dirname, "../..");
const repoCli = join(packageDir, "dist/cli/main.js");
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-no-go-"));
const project = join(tmp, "first-operator");
// The cache too is under /var/tmp: the real nodes' control plane sees the host's /var/tmp, not its /tmp.
const cache = join(mkdtempSync("/var/tmp/kubeloop-no-go-cache-"), "cache");
// Under /var/tmp: the nodes see the plane's own tmp/ as /tmp.
const clusterDir = join(mkdtempSync("/var/tmp/kubeloop-no-go-"), "cluster");
const version = `${KUBELOOP_VERSION}-nogo.${Date.now()}`;
const PATH = [dirname(process.execPath), ...(process.env.PATH ?? "").split(delimiter)]
  .filter((dir) => dir && !existsSync(join(dir, "go")))
  .join(delimiter);
let registry: NpmRegistry | undefined;
let mirror: AssetsMirror | undefined;
let env: Record<string, string> = {};
const seconds: Record<string, number> = {};

/**
 * Runs a command and waits for it without blocking this process: the mirror is served from here,
 * so a synchronous spawn would leave the child's downloads unanswered.
 */
function sh(
  command: string,
  args: string[],
  cwd = project,
): Promise<{ code: number | null; output: string; seconds: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, timeout: 900_000 });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("close", (code) => resolve({ code, output, seconds: (Date.now() - started) / 1000 }));
  });
}

const kubeloop = (...args: string[]) =>
  sh(process.execPath, [realpathSync(join(project, "node_modules/.bin/kubeloop")), ...args]);

beforeAll(async () => {
  // The mirror's content: this project's own builds, from the shared cache (built once if missing).
  const shared = defaultAssetsRoot();
  await ensureAssets(
    ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", ...REAL_NODE_BINARIES],
    {
      root: shared,
    },
  );
  const tree = join(tmp, "mirror");
  const pack = spawnSync(process.execPath, [repoCli, "assets", "pack", "--mirror", "--out", tree], {
    encoding: "utf8",
  });
  expect(pack.status, pack.stderr).toBe(0);
  const ca = CertificateAuthority.create("assets-mirror-ca");
  mirror = await startAssetsMirror(tree, {
    tls: ca.issueServing({ commonName: "127.0.0.1", dnsNames: [], ipAddresses: ["127.0.0.1"] }),
  });
  writeFileSync(join(tmp, "mirror-ca.pem"), ca.cert);

  registry = await startNpmRegistry(tmp);
  registry.publish(packAt(packageDir, tmp, version));
  registry.publish(packAt(join(packageDir, "../create-kubeloop"), tmp, version, ["kubeloop"]));
  // A developer's shell with no Go on its PATH, and none of this machine's KUBELOOP_ settings.
  const shell = developerShell({ PATH });
  for (const key of Object.keys(shell)) if (key.startsWith("KUBELOOP_")) delete shell[key];
  env = {
    ...shell,
    KUBELOOP_ASSETS: cache,
    KUBELOOP_ASSETS_MIRROR: mirror.url,
    NODE_EXTRA_CA_CERTS: join(tmp, "mirror-ca.pem"),
    npm_config_userconfig: registry.userconfig,
    npm_config_prefer_offline: "true",
  };
  expect((await sh("sh", ["-c", "command -v go || echo no go"], tmp)).output.trim()).toBe("no go");
  const create = await sh("npm", ["create", `kubeloop@${version}`, "first-operator"], tmp);
  expect(create.code, create.output).toBe(0);
  const api = await kubeloop("create", "api", "--group", "ship", "--version", "v1", "--kind", "Widget");
  expect(api.code, api.output).toBe(0);
}, 1_200_000);

afterAll(async () => {
  if (existsSync(join(clusterDir, "state.json"))) await kubeloop("cluster", "stop", "--dir", clusterDir);
  await registry?.stop();
  await mirror?.close();
  rmSync(tmp, { recursive: true, force: true });
  rmSync(dirname(clusterDir), { recursive: true, force: true });
  rmSync(dirname(cache), { recursive: true, force: true });
  console.log(
    `no Go, empty cache, HTTPS mirror: npm test ${seconds.test?.toFixed(1)}s, npm run test:e2e ` +
      `${seconds.e2e?.toFixed(1)}s, cluster start --profile node ${seconds.node?.toFixed(1)}s`,
  );
});

describe("a first run with no Go, from a mirror", () => {
  it("passes the project's npm test, downloading the API server, etcd and kwok from the mirror", async () => {
    const test = await sh("npm", ["test"]);
    seconds.test = test.seconds;
    expect(test.code, test.output).toBe(0);
    expect(test.output).toMatch(/Tests\s+\d+ passed/);
    const specs = componentsFor(KUBERNETES_VERSION);
    // The project's `kubeloop check --live` runs on the cluster profile: kwok comes from the mirror too.
    for (const spec of [specs.kubernetes, specs.etcd, specs.kwok]) {
      expect(readBuildInfo(cache, spec)?.source, spec.name).toBe("download");
    }
    expect(readBuildInfo(cache, specs.kubernetes)?.from?.[0]).toBe(
      `${mirror?.url}/dl.k8s.io/release/v${KUBERNETES_VERSION}/bin/linux/${readBuildInfo(cache, specs.kubernetes)?.from?.[0]?.split("/linux/")[1]}`,
    );
  }, 900_000);

  it("passes npm run test:e2e: its image as a pod on a real node, the node stack downloaded too", async () => {
    const e2e = await sh("npm", ["run", "test:e2e"]);
    seconds.e2e = e2e.seconds;
    expect(e2e.code, e2e.output).toBe(0);
    expect(e2e.output).toMatch(/Tests\s+3 passed \(3\)/);
    const specs = componentsFor(KUBERNETES_VERSION);
    for (const name of [
      "kubernetes-node",
      "containerd",
      "runc",
      "cni-plugins",
      "coredns",
      "registry",
    ] as const) {
      expect(readBuildInfo(cache, specs[name])?.source, name).toBe("download");
    }
  }, 900_000);

  it("starts the node profile with kubeloop cluster start, and runs a pod", async () => {
    const started = await kubeloop("cluster", "start", "--profile", "node", "--dir", clusterDir);
    seconds.node = started.seconds;
    expect(started.code, started.output).toBe(0);
    const loaded = await kubeloop("cluster", "load", "--base", "tools", "--dir", clusterDir);
    expect(loaded.code, loaded.output).toBe(0);
    const k = (...args: string[]) =>
      kubectl(args, { kubeconfig: join(clusterDir, "kubeconfig"), timeoutMs: 150_000 });
    const image = "--image=kubeloop.local/tools:bookworm";
    expect((await k("run", "probe", image, "--restart=Never", "--command", "--", "sleep", "600")).code).toBe(
      0,
    );
    const running = await k("wait", "--for=jsonpath={.status.phase}=Running", "pod/probe", "--timeout=120s");
    expect(running.code, `${running.stderr}${(await k("describe", "pod", "probe")).stdout}`).toBe(0);
    // Nothing in the fresh cache was built with Go: every component came from the mirror.
    const installed = readdirSync(cache).filter((dir) => existsSync(join(cache, dir, "build-info.json")));
    expect(installed.length).toBeGreaterThanOrEqual(8);
    for (const dir of installed) {
      const info = JSON.parse(readFileSync(join(cache, dir, "build-info.json"), "utf8")) as {
        source?: string;
      };
      expect(info.source, dir).toBe("download");
    }
  }, 600_000);
});
