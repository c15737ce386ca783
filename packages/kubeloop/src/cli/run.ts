import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, type FSWatcher, watch } from "node:fs";
import { createServer } from "node:net";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import type { KubeObject } from "../client/index.js";
import { type LocalWebhookServing, localWebhookServing } from "../testing/index.js";
import { applyAll, readConfig } from "./apply-manifests.js";
import { clusterCommand, DEFAULT_CLUSTER_DIR, liveState } from "./cluster.js";
import { CliError } from "./errors.js";
import { loadProject, type Project } from "./project.js";
import { regenerate } from "./regenerate.js";
import { currentCluster, type Target } from "./target.js";

/**
 * `kubeloop run`: the inner loop (kubebuilder's `make install run`, plus a file watcher). It
 * regenerates config/, installs the CRDs (and, for webhooks, configurations that point at this
 * machine), and runs the project's manager — `node src/main.ts` — against the current kubeconfig
 * context. Without one, it starts the local `cluster` profile in .kubeloop/cluster (or reuses the
 * one running there) and leaves it running on exit: the next `run` starts in a second, with the
 * objects of the last one still there. A change under src/ restarts the manager, after
 * regenerating and reinstalling, so a schema edit reaches the API server too.
 */

const USAGE = `Usage:
  kubeloop run [--metrics-port N] [--probe-port N] [--webhook-port N] [--no-watch]

  --metrics-port  the manager's /metrics (default 8080; 0 for any free port)
  --probe-port    its /healthz and /readyz (default 8081)
  --webhook-port  its webhook server, when the project has webhooks (default 9443)
  --no-watch      run once: do not restart on changes

The cluster: the current kubeconfig context ($KUBECONFIG, else ~/.kube/config); when there is
none, a local cluster started in ${DEFAULT_CLUSTER_DIR} (left running; \`kubeloop cluster stop\` stops it).`;

/** Editors write a file in bursts (temp file, rename, chmod): wait for quiet before restarting. */
const DEBOUNCE_MS = 300;
/** The manager finishes reconciles in flight on SIGTERM; a dev loop should not wait long for it. */
const STOP_GRACE_MS = 10_000;

interface Ports {
  metrics: number;
  probes: number;
  webhooks: number;
}

export async function runCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "metrics-port": { type: "string", default: "8080" },
      "probe-port": { type: "string", default: "8081" },
      "webhook-port": { type: "string", default: "9443" },
      "no-watch": { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const started = Date.now();
  const project = loadProject();
  const main = join(project.root, "src", "main.ts");
  if (!existsSync(main))
    throw new CliError(`${relative(process.cwd(), main)} does not exist: it is what run starts`);
  const ports: Ports = {
    metrics: port("--metrics-port", values["metrics-port"]),
    probes: port("--probe-port", values["probe-port"]),
    webhooks: port("--webhook-port", values["webhook-port"]),
  };
  const hasWebhooks = existsSync(join(project.config, "webhook"));
  await checkFree("metrics", ports.metrics, "--metrics-port");
  await checkFree("probes", ports.probes, "--probe-port");
  if (hasWebhooks) await checkFree("webhooks", ports.webhooks, "--webhook-port");

  regenerate(project.root, { quiet: true });
  const { target, kubeconfig } = await cluster(project);
  try {
    await loop(project, target, kubeconfig, ports, !values["no-watch"], started);
  } finally {
    await target.client.close();
  }
  if (kubeconfig && !process.env.KUBECONFIG) {
    console.log(
      `The local cluster in ${DEFAULT_CLUSTER_DIR} keeps running, with its objects: the next run reuses it.\n` +
        `Use it: export KUBECONFIG=${kubeconfig}   Stop it: npx kubeloop cluster stop`,
    );
  }
  return 0;
}

/** Installs, starts the manager, and restarts it on changes until SIGINT/SIGTERM (or its exit, unwatched). */
async function loop(
  project: Project,
  target: Target,
  kubeconfig: string | undefined,
  ports: Ports,
  watching: boolean,
  started: number,
): Promise<void> {
  const main = join(project.root, "src", "main.ts");
  const serving = await webhookServing(project, target, ports);
  const install = async () => {
    // CRDs first (config/crd is read first), awaited until served; then the webhook configurations.
    await applyAll(target.client, manifests(project, serving));
  };
  console.log("Installing the CRDs …");
  await install();

  const env = managerEnv(project, kubeconfig, ports, serving);
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const startManager = (since: number) => {
    console.log(`Starting the manager: node ${relative(project.root, main)}`);
    const current = spawn(process.execPath, [main], { cwd: project.root, env, stdio: "inherit" });
    child = current;
    exited = new Promise((resolveExit) => {
      current.on("exit", (code, signal) => {
        if (child === current) {
          child = undefined;
          console.log(
            `The manager exited (${signal ?? `code ${code}`})${watching ? "; it restarts on the next change under src/" : ""}.`,
          );
        }
        resolveExit();
      });
    });
    if (ports.probes !== 0) void announceReady(ports.probes, since, () => child === current);
  };
  const stopManager = async () => {
    const current = child;
    if (!current) return;
    child = undefined;
    current.kill("SIGTERM");
    const timer = setTimeout(() => current.kill("SIGKILL"), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };
  startManager(started);

  const watcher = watching
    ? watchSources(project, async (changed) => {
        const since = Date.now();
        console.log(`\n${changed.join(", ")} changed: restarting the manager`);
        await stopManager();
        try {
          regenerate(project.root, { quiet: true });
          await install();
        } catch (error) {
          console.error(`kubeloop: ${(error as Error).message}\nWaiting for the next change.`);
          return;
        }
        startManager(since);
      })
    : undefined;

  await new Promise<void>((resolveStop) => {
    const stop = () => resolveStop();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    if (!watching) void exited.then(stop);
  });
  watcher?.close();
  await stopManager();
  serving?.dispose();
}

/** With webhooks, a local server for them, which a remote cluster cannot call: it says so. */
async function webhookServing(project: Project, target: Target, ports: Ports) {
  const hasWebhooks = existsSync(join(project.config, "webhook"));
  const serving = hasWebhooks
    ? await localWebhookServing(ports.webhooks ? { port: ports.webhooks } : {})
    : undefined;
  if (serving && !isLoopback(target.server)) {
    console.warn(
      `Warning: the webhooks are served on this machine (127.0.0.1:${serving.port}), which ${target.server} ` +
        "cannot reach unless it runs here too: writes of kinds with webhooks will fail. Use a local cluster " +
        "(unset KUBECONFIG), or deploy the operator (`kubeloop deploy`).",
    );
  }
  return serving;
}

/** The manager's environment: the run's ports and cluster over the developer's. */
function managerEnv(
  project: Project,
  kubeconfig: string | undefined,
  ports: Ports,
  serving: Awaited<ReturnType<typeof webhookServing>>,
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
    METRICS_PORT: String(ports.metrics),
    PROBE_PORT: String(ports.probes),
    ...(serving ? { WEBHOOK_PORT: String(serving.port), WEBHOOK_CERT_DIR: serving.certDir } : {}),
    // The namespaces the project watches, as its Deployment gets them (unless set here already).
    ...(project.namespaces?.length && process.env.WATCH_NAMESPACE === undefined
      ? { WATCH_NAMESPACE: project.namespaces.join(",") }
      : {}),
  };
}

/** The current context's cluster, or the project's local one (started if need be). */
async function cluster(project: Project): Promise<{ target: Target; kubeconfig: string | undefined }> {
  const current = await currentCluster();
  if (current) {
    console.log(`Using ${current.description}`);
    return { target: current, kubeconfig: undefined };
  }
  const dir = join(project.root, DEFAULT_CLUSTER_DIR);
  const running = liveState(dir);
  if (running?.phase === "ready" && running.kubeconfig) {
    console.log(
      `No kubeconfig context: using the local cluster already running in ${DEFAULT_CLUSTER_DIR} (${running.server})`,
    );
  } else {
    console.log(
      `No kubeconfig context (KUBECONFIG is not set, ~/.kube/config does not exist): starting the local cluster profile in ${DEFAULT_CLUSTER_DIR}`,
    );
    const code = await clusterCommand(["start", "--profile", "cluster", "--dir", dir]);
    if (code !== 0) throw new CliError("the local cluster did not start");
  }
  const kubeconfig = join(dir, "kubeconfig");
  const target = await currentCluster(kubeconfig);
  if (!target) throw new CliError(`the local cluster in ${dir} has no kubeconfig`);
  return { target, kubeconfig };
}

/** config/crd and config/webhook, pointed at this machine's webhook server when there is one. */
function manifests(project: Project, serving: LocalWebhookServing | undefined): KubeObject[] {
  const objects = readConfig(project.config, ["crd", "webhook"]);
  return serving ? serving.rewrite(objects) : objects;
}

function watchSources(project: Project, onChange: (changed: string[]) => Promise<void>): FSWatcher {
  const src = join(project.root, "src");
  const changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const fire = () => {
    const files = [...changed].sort();
    changed.clear();
    // One restart at a time: changes during a restart make the next one.
    running = running.then(() => onChange(files));
  };
  return watch(src, { recursive: true }, (_event, file) => {
    if (!file) return;
    changed.add(join("src", file.toString()));
    clearTimeout(timer);
    timer = setTimeout(fire, DEBOUNCE_MS);
  });
}

/** Prints once the manager's /readyz passes: caches synced, controllers running. */
async function announceReady(probePort: number, since: number, stillCurrent: () => boolean) {
  while (stillCurrent()) {
    const response = await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => undefined);
    if (response?.ok) {
      console.log(`The manager is ready (${((Date.now() - since) / 1000).toFixed(1)}s). Ctrl-C stops it.`);
      return;
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
  }
}

function isLoopback(server: string): boolean {
  const host = new URL(server).hostname;
  return host === "localhost" || host === "[::1]" || host.startsWith("127.");
}

function port(flag: string, value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0 || number > 65535) {
    throw new CliError(`${flag} must be a port number (0–65535), got "${value}"`);
  }
  return number;
}

/** A clear error now rather than the manager's EADDRINUSE stack trace after the cluster started. */
async function checkFree(what: string, portNumber: number, flag: string): Promise<void> {
  if (portNumber === 0) return;
  const error = await new Promise<NodeJS.ErrnoException | undefined>((resolveCheck) => {
    const server = createServer();
    server.once("error", (listenError: NodeJS.ErrnoException) => resolveCheck(listenError));
    server.listen(portNumber, () => server.close(() => resolveCheck(undefined)));
  });
  if (error?.code === "EADDRINUSE") {
    throw new CliError(
      `port ${portNumber} (${what}) is taken — is another operator or \`kubeloop run\` running? ` +
        `Stop it, or pass ${flag} with another port (0 picks a free one).`,
    );
  }
  if (error) throw new CliError(`cannot listen on port ${portNumber} (${what}): ${error.message}`);
}
