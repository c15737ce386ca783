import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until as pollFor } from "../../test/helpers.js";
import { type NpmRegistry, packAt, startNpmRegistry } from "../../test/npm-registry.js";
import { processesMentioning } from "../../test/processes.js";
import { developerShell } from "../../test/shell.js";
import { defaultAssetsRoot } from "../testing/assets/index.js";
import { kubectl } from "../testing/kubectl.js";
import { readLayout } from "./image/index.js";
import { KUBELOOP_VERSION } from "./scaffold/versions.js";

// The developer workflow end to end, as a newcomer would go through it, in a folder outside the
// repository, with kubeloop and create-kubeloop published to an npm registry on loopback
// (verdaccio; every other package through it from the npm cache): `npm create kubeloop`, create
// api twice (a namespaced kind, and a cluster-scoped one with every webhook), `kubeloop run` with
// no kubeconfig (so it starts the local cluster profile), a sample applied with kubectl and
// reconciled to Ready=True — timed from `npm create` — then a restart on a source change,
// uninstall's refusal, deploy/undeploy, the project's own `npm test`, `npm run build` and
// `generate --check`, its image, and its `npm run test:e2e` on a real node (root).

const packageDir = join(import.meta.dirname, "../..");
const repoCli = join(packageDir, "dist/cli/main.js");
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-workflow-"));
const project = join(tmp, "demo-operator");
const clusterDir = join(project, ".kubeloop/cluster");
const kubeconfig = join(clusterDir, "kubeconfig");
/** The environment of a developer's shell: none of this test runner's variables. */
const shell = developerShell();

const timings: Record<string, number> = {};
let registry: NpmRegistry | undefined;
/** A version no earlier run published: npm's and npx's caches cannot serve an older build. */
const version = `${KUBELOOP_VERSION}-workflow.${Date.now()}`;
let run: ChildProcess | undefined;
let runOutput = "";

function sh(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const started = Date.now();
  const result = spawnSync(command, args, {
    cwd: options.cwd ?? project,
    env: { ...shell, ...options.env },
    encoding: "utf8",
    timeout: 600_000,
  });
  return {
    code: result.status,
    output: `${result.stdout}${result.stderr}`,
    stderr: result.stderr,
    seconds: (Date.now() - started) / 1000,
  };
}

/** The project's own kubeloop, installed from the registry. */
const kubeloop = (...args: string[]) =>
  sh(process.execPath, [realpathSync(join(project, "node_modules/.bin/kubeloop")), ...args], {
    env: { KUBECONFIG: kubeconfig },
  });

const k = (args: string[]) => kubectl(args, { kubeconfig });

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Polls until `check` holds; a timeout shows what the operator printed. */
const until = (check: () => boolean | Promise<boolean>, ms: number, what: string) =>
  pollFor(check, ms, what, () => runOutput);

const ready = async (args: string[]) =>
  (await k([...args, "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])).stdout === "True";

beforeAll(async () => {
  registry = await startNpmRegistry(tmp);
  registry.publish(packAt(packageDir, tmp, version));
  registry.publish(packAt(join(packageDir, "../create-kubeloop"), tmp, version, ["kubeloop"]));
  const userEnv = { npm_config_userconfig: registry.userconfig, npm_config_prefer_offline: "true" };
  timings.start = Date.now();
  const create = sh("npm", ["create", `kubeloop@${version}`, "demo-operator"], { cwd: tmp, env: userEnv });
  expect(create.code, create.output).toBe(0);
  const installed = JSON.parse(readFileSync(join(project, "node_modules/kubeloop/package.json"), "utf8"));
  expect(installed.version).toBe(version);
  timings.init = create.seconds;
  timings.initDone = Date.now();
}, 600_000);

afterAll(async () => {
  // After a failure: stop run as Ctrl-C would, then make sure neither it nor its manager is left.
  if (run && run.exitCode === null && run.signalCode === null) {
    const exited = new Promise((resolve) => run?.once("exit", resolve));
    run.kill("SIGINT");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    if (run.exitCode === null && run.signalCode === null) run.kill("SIGKILL");
  }
  for (const pid of processesMentioning(join(project, "src/main.ts"))) process.kill(pid, "SIGKILL");
  spawnSync(process.execPath, [repoCli, "cluster", "stop", "--dir", clusterDir], { env: shell });
  await registry?.stop();
  rmSync(tmp, { recursive: true, force: true });
  const seconds = (from: number, to: number) => ((to - from) / 1000).toFixed(1);
  if (timings.ready && timings.start && timings.initDone) {
    console.log(
      `npm create kubeloop → first reconcile: ${seconds(timings.start, timings.ready)}s with npm install ` +
        `(npm create ${timings.init?.toFixed(1)}s), ${seconds(timings.initDone, timings.ready)}s after it: ` +
        `create api ×2 ${seconds(timings.initDone, timings.run ?? 0)}s, ` +
        `run → manager ready ${seconds(timings.run ?? 0, timings.managerReady ?? 0)}s (local cluster started), ` +
        `kubectl apply → Ready=True ${seconds(timings.managerReady ?? 0, timings.ready)}s`,
    );
  }
});

describe("the developer workflow", () => {
  it("creates a namespaced kind, and a cluster-scoped one with webhooks, generating config/", () => {
    // init generated what needs no kind: the manager's manifests and its leader-election Role.
    expect(readdirSync(join(project, "config/manager"))).toContain("deployment.yaml");
    const widget = kubeloop("create", "api", "--group", "ship", "--version", "v1", "--kind", "Widget");
    expect(widget.code, widget.output).toBe(0);
    const dock = kubeloop(
      ...["create", "api", "--group", "ship", "--version", "v1", "--kind", "Dock", "--namespaced=false"],
      ...["--webhook", "default,validate,convert"],
    );
    expect(dock.code, dock.output).toBe(0);
    expect(readdirSync(join(project, "config/crd")).sort()).toEqual([
      "docks.ship.example.com.yaml",
      "kustomization.yaml",
      "widgets.ship.example.com.yaml",
    ]);
    expect(readdirSync(join(project, "config/webhook"))).not.toEqual([]);
    // From the same objects: the Helm chart and the OLM bundle.
    expect(readdirSync(join(project, "charts/demo-operator/templates/crd")).sort()).toEqual([
      "docks.ship.example.com.yaml",
      "widgets.ship.example.com.yaml",
    ]);
    const csv = readFileSync(
      join(project, "bundle/manifests/demo-operator.clusterserviceversion.yaml"),
      "utf8",
    );
    expect(csv).toContain("kind: Dock");
    expect(csv).toContain("kind: Widget");
    const json = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    // The range init writes by default: the version create-kubeloop brought, from the registry.
    expect(json.dependencies.kubeloop).toBe(`^${version}`);
  });

  it("runs with no kubeconfig by starting the local cluster, and reconciles a sample to Ready=True", async () => {
    const home = join(tmp, "home"); // no ~/.kube/config here
    mkdirSync(home);
    const ports = [await freePort(), await freePort(), await freePort()].map(String);
    run = spawn(
      process.execPath,
      [realpathSync(join(project, "node_modules/.bin/kubeloop")), "run"].concat([
        "--metrics-port",
        ports[0] ?? "",
        "--probe-port",
        ports[1] ?? "",
        "--webhook-port",
        ports[2] ?? "",
      ]),
      { cwd: project, env: { ...shell, HOME: home, KUBELOOP_ASSETS: defaultAssetsRoot() } },
    );
    run.stdout?.on("data", (chunk: Buffer) => {
      runOutput += chunk.toString();
    });
    run.stderr?.on("data", (chunk: Buffer) => {
      runOutput += chunk.toString();
    });
    timings.run = Date.now();
    await until(() => runOutput.includes("The manager is ready"), 180_000, "the manager");
    timings.managerReady = Date.now();
    expect(runOutput).toContain(
      "No kubeconfig context (KUBECONFIG is not set, ~/.kube/config does not exist)",
    );
    expect(runOutput).toContain("starting the local cluster profile in .kubeloop/cluster");
    const applied = await k(["apply", "-f", join(project, "config/samples/ship_v1_widget.yaml")]);
    expect(applied.code, applied.stderr).toBe(0);
    await until(() => ready(["get", "widget", "widget-sample"]), 30_000, "the Widget to be Ready");
    timings.ready = Date.now();
    const dock = await k(["apply", "-f", join(project, "config/samples/ship_v1_dock.yaml")]);
    expect(dock.code, dock.stderr).toBe(0);
    await until(() => ready(["get", "dock", "dock-sample"]), 30_000, "the Dock to be Ready");
    // Defaulted by the webhook the run serves from this machine.
    const labels = await k(["get", "dock", "dock-sample", "-o", "jsonpath={.metadata.labels}"]);
    expect(labels.stdout).toContain('"app.kubernetes.io/managed-by":"demo-operator"');
  });

  it("restarts the manager when a source changes, saying which", async () => {
    const before = runOutput.length;
    appendFileSync(join(project, "src/controllers/widget.ts"), "// edited\n");
    await until(
      () => runOutput.slice(before).includes("The manager is ready"),
      60_000,
      "the manager to restart",
    );
    expect(runOutput.slice(before)).toContain("src/controllers/widget.ts changed: restarting the manager");
    const patched = await k([
      "patch",
      "widget",
      "widget-sample",
      "--type=merge",
      "-p",
      '{"spec":{"size":4}}',
    ]);
    expect(patched.code, patched.stderr).toBe(0);
    await until(
      async () =>
        (await k(["get", "widget", "widget-sample", "-o", "jsonpath={.status.observedGeneration}"]))
          .stdout === "2",
      30_000,
      "the new generation to be observed",
    );
  });

  it("refuses to uninstall the CRDs while custom resources exist", () => {
    const uninstall = kubeloop("uninstall");
    expect(uninstall.code).toBe(1);
    expect(uninstall.stderr).toContain(
      "2 custom resources still exist: Dock dock-sample, Widget default/widget-sample",
    );
    expect(uninstall.stderr).toContain("or pass --force");
  });

  it("deploys the operator with the image given, and undeploys it", async () => {
    const deploy = kubeloop("deploy", "--image", "registry.example.com/demo-operator:0.1.0");
    expect(deploy.code, deploy.output).toBe(0);
    const image = await k([
      ...["-n", "demo-operator-system", "get", "deployment", "demo-operator"],
      ...["-o", "jsonpath={.spec.template.spec.containers[0].image}"],
    ]);
    expect(image.stdout).toBe("registry.example.com/demo-operator:0.1.0");
    const secret = await k([
      "-n",
      "demo-operator-system",
      "get",
      "secret",
      "demo-operator-webhook-server-cert",
    ]);
    expect(secret.code, secret.stderr).toBe(0);
    const undeploy = kubeloop("undeploy", "--keep-crds");
    expect(undeploy.code, undeploy.output).toBe(0);
    expect(undeploy.output).toContain("deleted Deployment demo-operator-system/demo-operator");
    expect((await k(["get", "crd", "widgets.ship.example.com"])).code).toBe(0);
  });

  it("stops on Ctrl-C and leaves the local cluster running for the next run", async () => {
    const exited = new Promise<number | null>((resolve) => run?.on("exit", (code) => resolve(code)));
    run?.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(runOutput).toContain("The local cluster in .kubeloop/cluster keeps running");
    expect(processesMentioning(join(project, "src/main.ts"))).toEqual([]);
    expect((await k(["get", "widget", "widget-sample"])).code).toBe(0);
  });

  it("passes its own tests, type-checks, and its config/ is up to date", () => {
    const test = sh("npm", ["test"]);
    expect(test.code, test.output).toBe(0);
    expect(test.output).toMatch(/Tests\s+\d+ passed/);
    expect(test.output).not.toMatch(/failed/);
    timings.projectTests = test.seconds;
    const build = sh("npm", ["run", "build"]);
    expect(build.code, build.output).toBe(0);
    const check = kubeloop("generate", "--check");
    expect(check.code, check.output).toBe(0);
    expect(check.output).toContain("config is up to date");
  }, 300_000);

  it("builds its image without Docker: npm run build:image writes image.tar named as package.json says", () => {
    const build = sh("npm", ["run", "build:image"]);
    expect(build.code, build.output).toBe(0);
    const digest = /sha256:[0-9a-f]{64}/.exec(build.output)?.[0];
    expect(digest, build.output).toBeDefined();
    const { index } = readLayout(readFileSync(join(project, "image.tar")));
    expect(index.manifests[0]?.digest).toBe(digest);
    const { kubeloop: section } = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as {
      kubeloop: { image: string };
    };
    expect(index.manifests[0]?.annotations?.["io.containerd.image.name"]).toBe(section.image);
    expect(existsSync(join(project, "image.spdx.json"))).toBe(true);
  }, 600_000);

  it("passes its end-to-end suite: npm run test:e2e runs the image as a pod on a real node", () => {
    const e2e = sh("npm", ["run", "test:e2e"]);
    expect(e2e.code, e2e.output).toBe(0);
    // The pod Ready, both samples Ready=True, /metrics answering a reader: none skipped.
    expect(e2e.output).toMatch(/Tests\s+3 passed \(3\)/);
    console.log(`npm run test:e2e (image build, node, deploy, samples, metrics): ${e2e.seconds.toFixed(1)}s`);
  }, 900_000);
});
