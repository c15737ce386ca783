import { spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Client } from "../client/index.js";
import { type BinaryName, defaultAssetsRoot, ensureAssets } from "../testing/assets/index.js";
import { ControlPlane, type Profile } from "../testing/index.js";
import { baseImage, importImage, isProcessAlive, REAL_NODE_BINARIES } from "../testing/internal.js";
import { sleep } from "../util/index.js";
import {
  describeMembers,
  KARMADA_USAGE,
  type KarmadaFlags,
  karmadaBinaries,
  karmadaFlags,
  karmadaPlane,
  karmadaSupervisorArgs,
  type MemberState,
  memberStates,
} from "./cluster-karmada.js";
import { CliError } from "./errors.js";
import { printUsage } from "./usage.js";

/**
 * `kubeloop cluster start|status|stop|run`: a local control plane that outlives the command.
 *
 * `start` builds missing binaries in the foreground (so progress shows), then launches a detached
 * supervisor (`cluster run`) that owns the plane, and waits until the supervisor reports it ready.
 * The supervisor's state file is how `status` and `stop` find it again.
 */

const USAGE = `Usage:
  kubeloop cluster start  [--profile apiserver|cluster|node] [--hardened] [--nodes N] [--dir DIR]
  kubeloop cluster start  --profile karmada [--members N] [--member-profile apiserver|cluster|node] [--dir DIR]
  kubeloop cluster status [--dir DIR]
  kubeloop cluster stop   [--dir DIR]
  kubeloop cluster load   ARCHIVE... [--dir DIR]    (node profile: an image tarball into every node)
  kubeloop cluster load   --base tools|nginx [--dir DIR]   (an image made here from Debian's packages)
  kubeloop cluster run    [--profile …] [--hardened] [--nodes N] [--dir DIR]   (in the foreground, until Ctrl-C)

  --profile  apiserver: etcd + kube-apiserver (default)
             cluster:   also controller manager, scheduler and kwok fake nodes (Pods are simulated)
             node:      real nodes: containerd, runc, kubelet, kube-proxy, CoreDNS (Pods are
                        real containers; needs root and cgroups)
  --hardened with either profile, the API server of a hardened cluster (OpenShift, CIS):
             owner-reference permission enforcement, Pod Security restricted on every
             namespace, AlwaysPullImages, NodeRestriction, EventRateLimit, no anonymous
             access, an audit log in the logs folder
${KARMADA_USAGE}
  --nodes    nodes in the cluster and node profiles, and in each karmada member (default 1)
  --dir      the cluster's folder (default .kubeloop/cluster)`;

export const DEFAULT_CLUSTER_DIR = ".kubeloop/cluster";
/** Starting a cold cluster profile takes ~10–20 s here; allow for a much slower machine. */
const START_WAIT_MS = 180_000;
/** A supervisor stops the plane within ~15 s; after this it is killed. */
const STOP_WAIT_MS = 60_000;

/** A plane's profile, or `karmada`: a Karmada plane with members (cluster-karmada.ts). */
type ClusterProfile = Profile | "karmada";

export interface ClusterState {
  phase: "starting" | "ready" | "failed" | "stopping";
  pid: number;
  profile: ClusterProfile;
  /** The karmada profile's members. */
  members?: MemberState[];
  /** Started with `--hardened` (absent in state files of older versions: false). */
  hardened?: boolean;
  nodes: number;
  server?: string;
  kubeconfig?: string;
  /** The API server's audit log, in a hardened plane. */
  auditLog?: string;
  /** The node profile's containerd sockets, which `cluster load` imports images through. */
  runtimes?: string[];
  components?: { name: string; pid: number | undefined; logPath: string }[];
  error?: string;
  startedAt: string;
}

interface ClusterFlags {
  dir: string;
  profile: ClusterProfile;
  /** Set for the karmada profile. */
  karmada?: KarmadaFlags;
  hardened: boolean;
  nodes: number;
}

export async function clusterCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "--help" || sub === "-h" || sub === "help") {
    console.log(USAGE);
    return 0;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      base: { type: "string" },
      profile: { type: "string" },
      hardened: { type: "boolean" },
      nodes: { type: "string" },
      members: { type: "string" },
      "member-profile": { type: "string" },
      dir: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help || sub === undefined) return printUsage(USAGE, values.help);
  const profile = (values.profile ?? "apiserver") as ClusterProfile;
  if (profile !== "apiserver" && profile !== "cluster" && profile !== "node" && profile !== "karmada") {
    throw new CliError(`--profile must be apiserver, cluster, node or karmada, got "${values.profile}"`);
  }
  if (profile !== "karmada" && (values.members !== undefined || values["member-profile"] !== undefined))
    throw new CliError("--members and --member-profile are for the karmada profile: add --profile karmada");
  if (profile === "karmada" && values.hardened)
    throw new CliError("--hardened is for one plane's API server; the karmada profile does not take it");
  const nodes = values.nodes === undefined ? 1 : Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 0 || nodes > 1000) {
    throw new CliError(`--nodes must be a whole number from 0 to 1000, got "${values.nodes}"`);
  }
  const dir = resolve(values.dir ?? DEFAULT_CLUSTER_DIR);
  const flags: ClusterFlags = {
    dir,
    profile,
    hardened: values.hardened ?? false,
    nodes,
    ...(profile === "karmada"
      ? { karmada: karmadaFlags(dir, nodes, values.members, values["member-profile"]) }
      : {}),
  };
  switch (sub) {
    case "start":
      return start(flags);
    case "status":
      return status(flags);
    case "stop":
      return stop(flags);
    case "run":
      return run(flags);
    case "load":
      return load(flags, positionals, values.base);
    default:
      throw new CliError(`unknown cluster command "${sub}"\n\n${USAGE}`);
  }
}

async function start(flags: ClusterFlags): Promise<number> {
  const running = liveState(flags.dir);
  if (running) {
    throw new CliError(
      `a cluster is already running in ${flags.dir} (pid ${running.pid}, profile ${running.profile}).\n` +
        `Use it:   export KUBECONFIG=${running.kubeconfig ?? join(flags.dir, "kubeconfig")}\n` +
        `Stop it:  kubeloop cluster stop --dir ${flags.dir}`,
    );
  }
  await ensureAssets(
    flags.karmada
      ? karmadaBinaries(binariesFor(flags.karmada.memberProfile))
      : binariesFor(flags.profile as Profile),
  );
  mkdirSync(join(flags.dir, "logs"), { recursive: true });
  rmSync(statePath(flags.dir), { force: true });
  const logPath = join(flags.dir, "logs", "supervisor.log");
  const log = openSync(logPath, "a");
  const script = fileURLToPath(new URL("./main.js", import.meta.url));
  const args = [
    script,
    "cluster",
    "run",
    "--dir",
    flags.dir,
    "--profile",
    flags.profile,
    "--nodes",
    String(flags.nodes),
    ...(flags.hardened ? ["--hardened"] : []),
    ...(flags.karmada ? karmadaSupervisorArgs(flags.karmada) : []),
  ];
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", log, log] });
  let exited: number | null | undefined;
  child.on("exit", (code) => {
    exited = code;
  });
  child.unref();
  console.error(`Starting a ${describePlane(flags)} control plane in ${flags.dir} …`);
  const deadline = Date.now() + START_WAIT_MS;
  const release = stopOnInterrupt(child.pid ?? 0);
  try {
    return await waitUntilReady(flags, child.pid ?? 0, () => exited, logPath, deadline);
  } finally {
    release();
  }
}

/**
 * Interrupted while the plane starts (Ctrl-C, or a SIGTERM to the process group of the script that
 * ran this, as `npm run demo` passes it on): stop the detached supervisor, which would otherwise
 * go on starting a cluster nobody stops, then exit. Returns the handlers' removal.
 */
function stopOnInterrupt(supervisor: number): () => void {
  const interrupt = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping the control plane that was starting`);
    if (isProcessAlive(supervisor)) process.kill(supervisor, "SIGTERM");
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.once("SIGINT", interrupt).once("SIGTERM", interrupt);
  return () => {
    process.removeListener("SIGINT", interrupt).removeListener("SIGTERM", interrupt);
  };
}

/** Polls the supervisor's state until the plane is ready; fails naming its log otherwise. */
async function waitUntilReady(
  flags: ClusterFlags,
  supervisor: number,
  exited: () => number | null | undefined,
  logPath: string,
  deadline: number,
): Promise<number> {
  for (;;) {
    const state = readState(flags.dir);
    if (state?.phase === "ready") {
      printReady(state, flags.dir);
      return 0;
    }
    if (state?.phase === "failed" || exited() !== undefined) {
      throw new CliError(
        `the control plane did not start${state?.error ? `:\n${state.error}` : ` (supervisor exited with ${exited()})`}\n` +
          `Supervisor log: ${logPath}`,
      );
    }
    if (Date.now() > deadline) {
      process.kill(supervisor, "SIGTERM");
      throw new CliError(`the control plane was not ready after ${START_WAIT_MS / 1000}s; see ${logPath}`);
    }
    await sleep(100);
  }
}

/** `cluster` or `cluster, hardened`. */
function describePlane(plane: { profile: ClusterProfile; hardened?: boolean | undefined }): string {
  return plane.hardened ? `${plane.profile}, hardened` : plane.profile;
}

function printReady(state: ClusterState, dir: string): void {
  console.log(`Control plane (${describePlane(state)}) is running: ${state.server}`);
  console.log(`kubeconfig: ${state.kubeconfig}`);
  console.log(`logs:       ${join(dir, "logs")}`);
  if (state.auditLog) console.log(`audit log:  ${state.auditLog}`);
  for (const line of describeMembers(state.members, dir)) console.log(line);
  console.log(`stop with:  kubeloop cluster stop --dir ${dir}`);
  console.log(`export KUBECONFIG=${state.kubeconfig}`);
}

async function status(flags: ClusterFlags): Promise<number> {
  const state = readState(flags.dir);
  if (!state) {
    console.log(`No cluster in ${flags.dir}.`);
    return 1;
  }
  if (!isProcessAlive(state.pid)) {
    console.log(`The cluster in ${flags.dir} is not running (its supervisor, pid ${state.pid}, is gone).`);
    return 1;
  }
  console.log(
    `Cluster in ${flags.dir}: ${state.phase}, profile ${describePlane(state)}, supervisor pid ${state.pid}`,
  );
  if (state.phase !== "ready") return 1;
  console.log(`server:     ${state.server}`);
  console.log(`kubeconfig: ${state.kubeconfig}`);
  let healthy = true;
  for (const component of state.components ?? []) {
    const alive = component.pid !== undefined && isProcessAlive(component.pid);
    healthy &&= alive;
    console.log(`  ${component.name.padEnd(24)} pid ${component.pid} ${alive ? "running" : "NOT RUNNING"}`);
  }
  const ready = await readyz(state);
  console.log(`  /readyz                  ${ready}`);
  return healthy && ready === "ok" ? 0 : 1;
}

/** Asks the API server's /readyz with the cluster's own kubeconfig, through the project's client. */
async function readyz(state: ClusterState): Promise<string> {
  if (!state.kubeconfig) return "unknown";
  let client: Client | undefined;
  try {
    client = await Client.connect({ kubeconfig: state.kubeconfig, requestTimeoutMs: 5_000, maxRetries: 0 });
    await client.transport.request({ method: "GET", path: "/readyz" });
    return "ok";
  } catch (error) {
    return `not ready (${(error as Error).message.trim()})`;
  } finally {
    await client?.close();
  }
}

async function stop(flags: ClusterFlags): Promise<number> {
  const state = readState(flags.dir);
  if (!state || !isProcessAlive(state.pid)) {
    rmSync(statePath(flags.dir), { force: true });
    console.log(`No cluster is running in ${flags.dir}.`);
    return 0;
  }
  process.kill(state.pid, "SIGTERM");
  const deadline = Date.now() + STOP_WAIT_MS;
  while (isProcessAlive(state.pid)) {
    if (Date.now() > deadline) {
      // The supervisor is stuck: kill it; its watchdog then ends the components.
      process.kill(state.pid, "SIGKILL");
      break;
    }
    await sleep(100);
  }
  rmSync(statePath(flags.dir), { force: true });
  console.log(`Stopped the cluster in ${flags.dir}.`);
  return 0;
}

/** The supervisor: owns the plane until SIGTERM/SIGINT. Also usable directly, in the foreground. */
async function run(flags: ClusterFlags): Promise<number> {
  const running = liveState(flags.dir);
  if (running && running.pid !== process.pid) {
    throw new CliError(`a cluster is already running in ${flags.dir} (pid ${running.pid})`);
  }
  const base = {
    pid: process.pid,
    profile: flags.profile,
    hardened: flags.hardened,
    nodes: flags.nodes,
    startedAt: new Date().toISOString(),
  };
  writeState(flags.dir, { ...base, phase: "starting" });
  const plane = flags.karmada
    ? karmadaPlane(flags.karmada)
    : new ControlPlane({
        profile: flags.profile as Profile,
        hardened: flags.hardened,
        nodes: flags.nodes,
        dir: flags.dir,
        handleSignals: false,
      });
  let stopRequested = false;
  const stopped = new Promise<void>((resolveStop) => {
    const onSignal = () => {
      if (stopRequested) return;
      stopRequested = true;
      writeState(flags.dir, { ...base, phase: "stopping" });
      void plane.stop().then(resolveStop, resolveStop);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    process.on("SIGHUP", onSignal);
  });
  try {
    await plane.start();
  } catch (error) {
    writeState(flags.dir, { ...base, phase: "failed", error: (error as Error).message });
    console.error((error as Error).message);
    return 1;
  }
  const ready: ClusterState = {
    ...base,
    phase: "ready",
    server: plane.server,
    kubeconfig: plane.kubeconfigPath,
    components: plane.components,
    ...(plane instanceof ControlPlane
      ? {
          ...(plane.hardened ? { auditLog: plane.auditLogPath } : {}),
          ...(plane.profile === "node" ? { runtimes: plane.containerRuntimeSockets } : {}),
        }
      : { members: memberStates(plane) }),
  };
  if (!stopRequested) writeState(flags.dir, ready);
  console.error(`ready: ${plane.server} (kubeconfig ${plane.kubeconfigPath})`);
  // Nothing else holds the event loop open (the plane's processes are unref'd): keep it alive.
  const keepAlive = setInterval(() => {}, 60_000);
  await stopped;
  clearInterval(keepAlive);
  rmSync(statePath(flags.dir), { force: true });
  console.error("stopped");
  return 0;
}

/** `cluster load`: each archive (or a base image made here) into every node of a running node-profile cluster. */
async function load(flags: ClusterFlags, archives: string[], base: string | undefined): Promise<number> {
  const paths = [...archives.map((archive) => resolve(archive))];
  if (base !== undefined) {
    if (base !== "tools" && base !== "nginx")
      throw new CliError(`--base must be tools or nginx, got "${base}"`);
    paths.push(baseImage(base, defaultAssetsRoot()).path);
  }
  if (paths.length === 0) throw new CliError("cluster load needs an image archive (or --base tools|nginx)");
  for (const line of await loadIntoCluster(flags.dir, paths)) console.log(line);
  return 0;
}

/**
 * Imports image archives into every node of the node-profile cluster running from `dir` (what
 * `kubeloop cluster load` and `kubeloop build --load` do); returns a line per archive.
 */
export async function loadIntoCluster(dir: string, archives: string[]): Promise<string[]> {
  const state = liveState(dir);
  if (state?.phase !== "ready")
    throw new CliError(
      `no cluster is running in ${dir}: start one with \`kubeloop cluster start --profile node\``,
    );
  const runtimes = state.runtimes ?? [];
  if (runtimes.length === 0)
    throw new CliError(
      `the cluster in ${dir} has no container runtime to load into (profile ${state.profile}): ` +
        "images load into the node profile's real nodes (`--profile node`)",
    );
  const { binaries } = await ensureAssets(["ctr"]);
  const lines: string[] = [];
  for (const archive of archives) {
    if (!existsSync(archive)) throw new CliError(`${archive} does not exist`);
    const names = new Set<string>();
    for (const socket of runtimes) {
      for (const name of importImage(binaries.ctr as string, socket, archive)) names.add(name);
    }
    lines.push(`loaded ${[...names].join(", ") || archive} into ${runtimes.length} node(s)`);
  }
  return lines;
}

function binariesFor(profile: Profile): BinaryName[] {
  const base: BinaryName[] = ["etcd", "kube-apiserver"];
  if (profile === "node")
    return [...base, "kube-controller-manager", "kube-scheduler", ...REAL_NODE_BINARIES];
  return profile === "cluster" ? [...base, "kube-controller-manager", "kube-scheduler", "kwok"] : base;
}

function statePath(dir: string): string {
  return join(dir, "state.json");
}

function readState(dir: string): ClusterState | undefined {
  const path = statePath(dir);
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as ClusterState;
  } catch {
    return undefined; // Caught mid-write; the next poll reads it whole.
  }
}

function writeState(dir: string, state: ClusterState): void {
  const path = statePath(dir);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  // Rename is atomic: readers never see half a file.
  renameSync(`${path}.tmp`, path);
}

/** The cluster running from this folder, if any (`kubeloop run` reuses it). */
export function liveState(dir: string): ClusterState | undefined {
  const state = readState(dir);
  return state && isProcessAlive(state.pid) && state.phase !== "failed" ? state : undefined;
}
