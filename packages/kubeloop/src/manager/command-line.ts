import { parseArgs } from "node:util";
import {
  type ManagerOptions,
  optionsFromEnv,
  parseWorkers,
  portOf,
  watchNamespaces,
  withDefaults,
} from "./options.js";

/** Where {@link optionsFromCommandLine} reads; each defaults to the process's own. */
export interface CommandLine {
  /** The operator's name: the Lease's when `--leader-elect` or `LEADER_ELECT=true` turns election on. */
  name?: string;
  /** Default `process.argv.slice(2)`. */
  args?: readonly string[];
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

const FLAGS = {
  "metrics-port": { type: "string" },
  "probe-port": { type: "string" },
  "leader-elect": { type: "boolean" },
  "leader-election-id": { type: "string" },
  "leader-election-namespace": { type: "string" },
  "watch-namespace": { type: "string" },
  workers: { type: "string" },
  "log-level": { type: "string" },
  kubeconfig: { type: "string" },
} as const;

/**
 * The manager's options from the command line and the environment, as kubebuilder's `main.go`
 * takes them: a flag wins over its variable ({@link optionsFromEnv}), which wins over the default.
 *
 * | flag | variable |
 * |---|---|
 * | `--metrics-port <n>` | `METRICS_PORT` |
 * | `--probe-port <n>` | `PROBE_PORT` |
 * | `--leader-elect[=true\|false]` | `LEADER_ELECT` |
 * | `--leader-election-id <name>` | `LEADER_ELECTION_ID` (default: `name`) |
 * | `--leader-election-namespace <ns>` | `LEADER_ELECTION_NAMESPACE` |
 * | `--watch-namespace <a,b>` | `WATCH_NAMESPACE` |
 * | `--workers <n>\|adaptive:<min>-<max>` | `WORKERS` |
 * | `--log-level <level>` | `LOG_LEVEL` |
 * | `--kubeconfig <file>` | `KUBECONFIG` (read by the client) |
 *
 * Flags it does not know are left to the program, which may parse its own from the same
 * arguments; a known flag with a malformed value is an error naming it.
 *
 * @example
 * ```ts
 * import { Manager, optionsFromCommandLine } from "kubeloop/manager";
 *
 * // `node main.ts --metrics-port 0 --leader-elect`, or the Deployment's METRICS_PORT and LEADER_ELECT
 * const options = optionsFromCommandLine({ name: "nginx-operator", args: ["--metrics-port", "0"], env: {} });
 * if (options.metrics === false || options.metrics?.port !== 0) throw new Error("the flag sets the port");
 * const manager = new Manager(options);
 * ```
 */
export function optionsFromCommandLine(commandLine: CommandLine = {}): ManagerOptions {
  const { name, args = process.argv.slice(2), env = process.env } = commandLine;
  const { values } = parseArgs({ args: [...args], options: FLAGS, strict: false, allowPositionals: true });
  const text = (flag: keyof typeof FLAGS): string | undefined => {
    const value = values[flag];
    if (value === true)
      throw new TypeError(`--${flag} needs a value: --${flag} <value> or --${flag}=<value>`);
    return value === undefined ? undefined : String(value);
  };
  const metricsPort = portOf("--metrics-port", text("metrics-port"));
  const probePort = portOf("--probe-port", text("probe-port"));
  const elect = electFlag(values["leader-elect"]);
  const electionId = text("leader-election-id");
  const electionNamespace = text("leader-election-namespace");
  const workers = text("workers");
  const namespaces = text("watch-namespace");
  const logLevel = text("log-level");
  const kubeconfig = text("kubeconfig");
  // The Lease's flags go through the environment's reading, which names the Lease.
  const electionEnv = {
    ...env,
    ...(elect !== undefined ? { LEADER_ELECT: String(elect) } : {}),
    ...(electionId ? { LEADER_ELECTION_ID: electionId } : {}),
    ...(electionNamespace ? { LEADER_ELECTION_NAMESPACE: electionNamespace } : {}),
  };
  const flags: ManagerOptions = {
    ...(name ? { name } : {}),
    ...(metricsPort !== undefined ? { metrics: { port: metricsPort } } : {}),
    ...(probePort !== undefined ? { probes: { port: probePort } } : {}),
    ...(workers ? { workers: parseWorkers(workers, "--workers") } : {}),
    ...(namespaces !== undefined ? { namespaces: [...(watchNamespaces(namespaces) ?? [])] } : {}),
    ...(logLevel ? { logLevel } : {}),
    ...(kubeconfig ? { kubeconfig } : {}),
  };
  const resolved = withDefaults(flags, optionsFromEnv(electionEnv));
  // An empty --watch-namespace means all namespaces, over a WATCH_NAMESPACE that names some.
  if (namespaces !== undefined && !watchNamespaces(namespaces)) delete resolved.namespaces;
  return resolved;
}

/** `--leader-elect` (true), `--leader-elect=true|false`, or absent (`undefined`). */
function electFlag(value: string | boolean | undefined): boolean | undefined {
  if (value === undefined || typeof value === "boolean") return value;
  if (value === "true" || value === "false") return value === "true";
  throw new TypeError(
    `--leader-elect=${value}: give --leader-elect, --leader-elect=true or --leader-elect=false`,
  );
}
