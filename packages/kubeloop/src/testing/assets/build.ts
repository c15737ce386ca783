import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { AssetsError } from "./errors.js";
import { checkGo, type GoRun, goEnv, openLog } from "./go.js";
import { KARMADA_VERSION_ARGS } from "./karmada-build.js";
import { componentDir, defaultAssetsRoot } from "./locate.js";
import { acquireLock } from "./lock.js";
import { PackageCounter, RECIPES } from "./recipes.js";
import {
  type ComponentName,
  type ComponentSpec,
  componentDirName,
  componentsFor,
  resolveKubernetesVersion,
} from "./versions.js";

/**
 * Builds the pinned control-plane binaries from Go modules on the module proxy, into the
 * version-keyed asset cache. See docs/control-plane.md for the recipe and why each step is there.
 *
 * Safe to call from many processes at once: a lock per component serialises builders, a build is
 * written to a scratch folder and moved into place only once every binary runs, and a process that
 * waited for the lock finds the finished build and returns.
 */

export interface BuildOptions {
  /** The asset cache to install into. Defaults to {@link defaultAssetsRoot}. */
  root?: string;
  /** Receives human-readable progress lines. Defaults to standard error. */
  onProgress?: (line: string) => void;
  /** The `go` command. Defaults to `go` on PATH. */
  go?: string;
  /** Environment for the Go toolchain (GOPROXY, GOMODCACHE, …). Defaults to this process's. */
  env?: NodeJS.ProcessEnv;
  /**
   * The Kubernetes release to build (a minor such as `1.33`, or exact). Defaults to
   * `$KUBELOOP_K8S_VERSION`, else the newest supported. Each version is cached in its own folder.
   */
  kubernetesVersion?: string | undefined;
}

/** What `build-info.json` beside a component's binaries records. */
export interface BuildInfo {
  component: ComponentName;
  /** The component's version, e.g. `1.36.4` for `kubernetes`. */
  version: string;
  /** The Go version that built it, e.g. `1.26.8`; empty when it was downloaded. */
  go: string;
  /** When, as an ISO 8601 time. */
  builtAt: string;
  /** How long the build took. */
  seconds: number;
  /** Each binary's own `--version` output, as proof it runs. */
  versions: Record<string, string>;
  /** `download` when it came prebuilt from upstream (or a mirror); absent or `build` when Go built it. */
  source?: "build" | "download";
  /** The URLs it was downloaded from, each checked against upstream's checksum. */
  from?: string[];
}

export const BUILD_INFO = "build-info.json";
/** How often a long compile reports that it is still going. */
const HEARTBEAT_MS = 20_000;

export function isInstalled(root: string, spec: ComponentSpec): boolean {
  const dir = componentDir(root, spec);
  return existsSync(join(dir, BUILD_INFO)) && spec.binaries.every((binary) => existsSync(join(dir, binary)));
}

/**
 * The build record of a component installed under `root` (which version, which Go, when, how long),
 * or undefined when it is not built yet: what `kubeloop assets` prints, and how a CI cache step can
 * tell whether its cache holds the pinned versions.
 *
 * @example
 * ```ts
 * import { COMPONENTS, defaultAssetsRoot, readBuildInfo } from "kubeloop/testing/assets";
 *
 * const info = readBuildInfo(defaultAssetsRoot(), COMPONENTS.etcd);
 * if (info?.version !== COMPONENTS.etcd.version) throw new Error("etcd is not built yet: run `npx kubeloop assets build`");
 * ```
 */
export function readBuildInfo(root: string, spec: ComponentSpec): BuildInfo | undefined {
  const path = join(componentDir(root, spec), BUILD_INFO);
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, "utf8")) as BuildInfo;
}

/** Builds one component unless it is already installed; returns its build record. */
export async function buildComponent(name: ComponentName, options: BuildOptions = {}): Promise<BuildInfo> {
  const spec = componentsFor(resolveKubernetesVersion(options.kubernetesVersion))[name];
  const root = options.root ?? defaultAssetsRoot();
  const progress = options.onProgress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const existing = readBuildInfo(root, spec);
  if (existing && isInstalled(root, spec)) return existing;

  const goBinary = options.go ?? "go";
  const env = goEnv(options.env);
  const goVersion = checkGo(goBinary, env);
  const lock = await lockComponent(root, spec, progress);
  try {
    // The process we waited for may have finished the very build we came for.
    const built = readBuildInfo(root, spec);
    if (built && isInstalled(root, spec)) return built;
    return await buildLocked(spec, root, goBinary, goVersion, env, progress);
  } finally {
    lock.release();
  }
}

/** The lock both the build and the download of a component take, so only one process installs it. */
export async function lockComponent(root: string, spec: ComponentSpec, progress: (line: string) => void) {
  mkdirSync(join(root, ".locks"), { recursive: true });
  return acquireLock(join(root, ".locks", componentDirName(spec)), (holder) =>
    progress(`Waiting for ${holder}, which is installing ${spec.name} v${spec.version}…`),
  );
}

async function buildLocked(
  spec: ComponentSpec,
  root: string,
  goBinary: string,
  goVersion: string,
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
): Promise<BuildInfo> {
  const started = Date.now();
  const work = join(root, ".build", componentDirName(spec));
  const out = join(work, "out");
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const logPath = join(work, "build.log");
  const log = openLog(logPath);
  const counter = new PackageCounter();
  const run: GoRun = { cwd: work, env, log, logPath, onLine: (line) => counter.see(line) };
  progress(`Building ${spec.name} v${spec.version} with Go ${goVersion} (log: ${logPath})`);
  const heartbeat = setInterval(() => {
    progress(`  ${spec.name}: ${counter.describe()}, ${formatSeconds((Date.now() - started) / 1000)} so far`);
  }, HEARTBEAT_MS);
  try {
    await RECIPES[spec.name]({ spec, work, out, run, goBinary, progress, counter });
    const info = installFolder(root, spec, out, started, { go: goVersion, source: "build" });
    progress(
      `Built ${spec.name} v${spec.version} in ${formatSeconds(info.seconds)} → ${componentDir(root, spec)}`,
    );
    return info;
  } finally {
    clearInterval(heartbeat);
    log.end();
  }
}

/**
 * Runs each binary in `out` once (a broken one never lands in the cache), writes its record, and
 * moves the folder into the cache in one rename: how both the build and the download finish.
 */
export function installFolder(
  root: string,
  spec: ComponentSpec,
  out: string,
  started: number,
  how: Pick<BuildInfo, "go" | "source" | "from">,
): BuildInfo {
  const versions: Record<string, string> = {};
  for (const binary of spec.binaries) versions[binary] = verifyBinary(join(out, binary), spec);
  const info: BuildInfo = {
    component: spec.name,
    version: spec.version,
    builtAt: new Date().toISOString(),
    seconds: Math.round((Date.now() - started) / 100) / 10,
    versions,
    ...how,
  };
  writeFileSync(join(out, BUILD_INFO), `${JSON.stringify(info, null, 2)}\n`);
  const target = componentDir(root, spec);
  rmSync(target, { recursive: true, force: true });
  renameSync(out, target);
  return info;
}

/**
 * How each binary tells its version: most take `--version`; helm has a subcommand; operator-verify
 * has none, so its help proves it runs and the recorded version is the module's.
 */
const VERSION_ARGS: Partial<Record<string, { args: string[]; printsVersion: boolean }>> = {
  helm: { args: ["version", "--short"], printsVersion: true },
  "operator-verify": { args: ["manifests", "--help"], printsVersion: false },
  // OLM's utilities have no version of their own; opm and grpc_health_probe print their own releases'.
  "copy-content": { args: ["--help"], printsVersion: false },
  cpb: { args: ["--help"], printsVersion: false },
  opm: { args: ["version"], printsVersion: false },
  grpc_health_probe: { args: ["-version"], printsVersion: false },
  // pause prints its own version (3.10.x), not the Kubernetes release it came with.
  pause: { args: ["-v"], printsVersion: false },
  "containerd-shim-runc-v2": { args: ["-v"], printsVersion: true },
  coredns: { args: ["-version"], printsVersion: true },
  // A CNI plugin run by hand (no CNI_COMMAND) prints its name and version.
  ptp: { args: [], printsVersion: true },
  "host-local": { args: [], printsVersion: true },
  loopback: { args: [], printsVersion: true },
  portmap: { args: [], printsVersion: true },
  ...KARMADA_VERSION_ARGS,
};

/** Runs a fresh binary's `--version` so a broken build never lands in the cache. */
export function verifyBinary(path: string, spec: ComponentSpec): string {
  const how = VERSION_ARGS[basename(path)] ?? { args: ["--version"], printsVersion: true };
  const result = spawnSync(path, how.args, { encoding: "utf8", timeout: 30_000 });
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.trim();
  if (!how.printsVersion && !result.error && result.status === 0) return `${basename(path)} v${spec.version}`;
  if (result.error || result.status !== 0 || !output.includes(spec.version)) {
    throw new AssetsError(
      `The freshly built ${path} does not run as expected (wanted version ${spec.version} from \`${how.args.join(" ")}\`): ` +
        `${result.error?.message ?? output.slice(0, 500)}`,
    );
  }
  return output.split("\n")[0] ?? output;
}

export function formatSeconds(seconds: number): string {
  const minutes = Math.floor(seconds / 60);
  const rest = Math.round(seconds % 60);
  return minutes > 0 ? `${minutes}m${String(rest).padStart(2, "0")}s` : `${rest}s`;
}
