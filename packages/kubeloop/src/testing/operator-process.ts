import { type ChildProcess, spawn } from "node:child_process";
import { isAbsolute, resolve } from "node:path";
import { type PollOptions, pollUntil } from "../util/index.js";
import { type Disposable, track, untrack } from "./cleanup.js";
import { kubectl } from "./kubectl.js";
import { freePorts } from "./ports.js";

/**
 * An operator run the way a user runs it, `node <entry>` in its own process, for end-to-end tests:
 * its output collected, its JSON log lines parsed, stopped with SIGTERM as a kubelet would, and
 * never left running after the test process (exit and signal handlers, {@link killOperators}).
 */

/** How {@link startOperator} runs an operator. */
export interface StartOperatorOptions {
  /** Set on top of this process's environment, e.g. `KUBECONFIG`, `METRICS_PORT`. */
  env?: Record<string, string>;
  /** The working directory. Default: this process's. */
  cwd?: string;
  /**
   * Runs the operator in its own process group (as a container's processes are), so that
   * `kill()` reaches its children too (e.g. a `pg_dump` it started). Default false.
   */
  processGroup?: boolean;
  /**
   * How long `stop()` waits after SIGTERM before SIGKILL. Default 30 s: the kubelet's default
   * `terminationGracePeriodSeconds`, and the Manager's own graceful shutdown budget for reconciles in flight.
   */
  stopGraceMs?: number;
}

/** A running operator process; see {@link startOperator}. */
export interface OperatorProcess extends AsyncDisposable {
  /** The child process. */
  readonly process: ChildProcess;
  /** Everything it printed so far, stdout and stderr interleaved as they arrived. */
  output(): string;
  /** The lines of its output that are JSON objects (pino's log lines), parsed; other lines are skipped. */
  logs(): Record<string, unknown>[];
  /** Resolves with its exit code (null when a signal ended it) once it has ended and its output is read. */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after the grace period; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Sends `signal` (default SIGKILL) at once, to its process group when it has one. */
  kill(signal?: NodeJS.Signals): void;
  /**
   * {@link pollUntil} for something the operator is to do: fails at once if the operator exits
   * meanwhile, and on any failure the error ends with the last 4,000 characters of its output.
   */
  waitUntil(check: () => unknown, options: PollOptions): Promise<void>;
}

const DEFAULT_STOP_GRACE_MS = 30_000;
function stopGraceOf(options: StartOperatorOptions): number {
  return options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
}
/** How much of the output a failed `waitUntil` shows: enough for a stack trace and the lines before. */
const OUTPUT_TAIL_CHARS = 4_000;
const running = new Set<RunningOperator>();

class RunningOperator implements OperatorProcess, Disposable {
  readonly process: ChildProcess;
  readonly exited: Promise<number | null>;
  private text = "";
  private ended = false;

  constructor(
    entry: string,
    private readonly options: StartOperatorOptions,
  ) {
    const script = isAbsolute(entry) ? entry : resolve(options.cwd ?? process.cwd(), entry);
    this.process = spawn(process.execPath, [script], {
      env: { ...process.env, ...options.env },
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      stdio: ["ignore", "pipe", "pipe"],
      detached: options.processGroup ?? false,
    });
    const append = (chunk: Buffer) => {
      this.text += chunk.toString("utf8");
    };
    this.process.stdout?.on("data", append);
    this.process.stderr?.on("data", append);
    this.exited = new Promise((resolveExit) => {
      this.process.once("error", (error) => {
        this.text += `\n${script} could not be started: ${error.message}\n`;
        this.end();
        resolveExit(null);
      });
      this.process.once("close", (code) => {
        this.end();
        resolveExit(code);
      });
    });
    running.add(this);
    track(this, true);
  }

  output(): string {
    return this.text;
  }

  logs(): Record<string, unknown>[] {
    const parsed: Record<string, unknown>[] = [];
    for (const line of this.text.split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        const value: unknown = JSON.parse(line);
        if (value !== null && typeof value === "object" && !Array.isArray(value)) {
          parsed.push(value as Record<string, unknown>);
        }
      } catch {
        // A line cut short (still being written) or not JSON after all: not a log line yet.
      }
    }
    return parsed;
  }

  async stop(): Promise<number | null> {
    if (this.ended) return this.exited;
    this.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolveGrace) => {
      timer = setTimeout(resolveGrace, stopGraceOf(this.options));
    });
    await Promise.race([this.exited, grace]);
    clearTimeout(timer);
    if (!this.ended) {
      // Said in the output, so a test that expected a clean exit shows why it got none.
      this.text += `\n[kubeloop/testing] still running ${stopGraceOf(this.options)} ms after SIGTERM: sent SIGKILL\n`;
      this.kill("SIGKILL");
    }
    return this.exited;
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.ended) return;
    const pid = this.process.pid;
    try {
      if (this.options.processGroup && pid !== undefined) process.kill(-pid, signal);
      else this.process.kill(signal);
    } catch {
      // Already gone.
    }
  }

  async waitUntil(check: () => unknown, options: PollOptions): Promise<void> {
    const what = options.message ?? "the condition";
    try {
      await pollUntil(check, {
        ...options,
        abortIf: () => {
          options.abortIf?.();
          if (this.ended)
            throw new Error(`The operator exited (code ${this.process.exitCode}) while waiting for ${what}.`);
        },
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`${message}\nThe operator's output ends:\n${this.text.slice(-OUTPUT_TAIL_CHARS)}`, {
        cause: error,
      });
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** For exit handlers: nothing asynchronous runs any more. */
  disposeNow(): void {
    this.kill("SIGKILL");
  }

  private end(): void {
    this.ended = true;
    running.delete(this);
    untrack(this);
  }
}

/**
 * Starts `node <entry>` (an operator's main module; `.ts` runs as is on Node 24) with `env` on top
 * of this process's environment. The process is killed if the test process exits first; stop it
 * with `stop()`, `await using`, or {@link stopOperators}/{@link killOperators} in `afterAll`.
 *
 * @example
 * ```ts
 * import { ControlPlane, freePort, startOperator } from "kubeloop/testing";
 *
 * const plane = await new ControlPlane().start();
 * const probePort = await freePort();
 * const operator = startOperator("src/main.ts", {
 *   cwd: "examples/nginx",
 *   env: { KUBECONFIG: plane.kubeconfigPath, PROBE_PORT: String(probePort), METRICS_PORT: "0" },
 * });
 * await operator.waitUntil(async () => (await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => null))?.ok, {
 *   timeoutMs: 30_000,
 *   message: "the operator to be ready",
 * });
 * const exitCode = await operator.stop(); // 0: a clean shutdown on SIGTERM
 * const errors = operator.logs().filter((line) => line.level === "error");
 * ```
 */
export function startOperator(entry: string, options: StartOperatorOptions = {}): OperatorProcess {
  return new RunningOperator(entry, options);
}

/**
 * Stops every operator {@link startOperator} started and that still runs (SIGTERM, then SIGKILL
 * after its grace); resolves with their exit codes.
 *
 * @example
 * ```ts
 * import { stopOperators } from "kubeloop/testing";
 * import { afterAll } from "vitest";
 *
 * afterAll(() => stopOperators());
 * ```
 */
export async function stopOperators(): Promise<(number | null)[]> {
  return Promise.all([...running].map((operator) => operator.stop()));
}

/**
 * Kills every operator {@link startOperator} started (SIGKILL, at once), for `afterAll` when how they
 * end does not matter: none may outlive its test file.
 *
 * @example
 * ```ts
 * import { killOperators } from "kubeloop/testing";
 * import { afterAll } from "vitest";
 *
 * afterAll(() => killOperators());
 * ```
 */
export function killOperators(): void {
  for (const operator of running) operator.kill("SIGKILL");
}

/**
 * A free TCP port on 127.0.0.1, for an operator's metrics or probe server. Another process may
 * take it before the operator binds it; ports the kernel hands out rarely come back soon.
 *
 * @example
 * ```ts
 * import { freePort } from "kubeloop/testing";
 *
 * const env = { METRICS_PORT: String(await freePort()), PROBE_PORT: String(await freePort()) };
 * ```
 */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  if (!port) throw new Error("The kernel gave no free port on 127.0.0.1: is the loopback interface up?");
  return port;
}

/** What {@link revokeRule} takes away, and whose permission it waits to see gone. */
export interface RevokeRuleOptions {
  /** An admin kubeconfig (e.g. `plane.kubeconfigPath`): it replaces the role and impersonates `as`. */
  kubeconfig: string;
  /** The role, `clusterrole/<name>` or `role/<name>` (then with `namespace`). */
  role: string;
  /** The namespace of a `role/…`, and where `kubectl auth can-i` checks. */
  namespace?: string;
  /** The resource of the one rule to remove, as the rule names it, e.g. `nginxes/finalizers`. */
  resource: string;
  /** The identity that must lose the permission, e.g. `system:serviceaccount:ops:nginx-operator`. */
  as: string;
  /** How long to wait for the API server's RBAC cache to show the change. Default 10 s. */
  timeoutMs?: number;
}

interface RoleRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
}

/**
 * Takes the one rule that lists `resource` away from a Role or ClusterRole, then waits until
 * `kubectl auth can-i` says `as` may no longer use it (RBAC is read from the API server's cache),
 * to reproduce on a running operator the failure a grant prevents.
 *
 * @example
 * ```ts
 * import { ControlPlane, revokeRule } from "kubeloop/testing";
 *
 * const plane = await new ControlPlane().start();
 * // … the operator's ClusterRole and its binding installed …
 * await revokeRule({
 *   kubeconfig: plane.kubeconfigPath,
 *   role: "clusterrole/nginx-operator",
 *   resource: "nginxes/finalizers",
 *   as: "system:serviceaccount:ops:nginx-operator",
 * });
 * ```
 */
export async function revokeRule(options: RevokeRuleOptions): Promise<void> {
  const scope = options.namespace ? ["-n", options.namespace] : [];
  const k = (args: string[], input?: string) =>
    kubectl([...scope, ...args], { kubeconfig: options.kubeconfig, ...(input ? { input } : {}) });
  const read = await k(["get", options.role, "-o", "json"]);
  if (read.code !== 0) {
    throw new Error(`revokeRule: cannot read ${options.role}: ${read.stderr.trim()}. Is it installed?`);
  }
  const role = JSON.parse(read.stdout) as { rules?: RoleRule[] };
  const rules = role.rules ?? [];
  const matching = rules.filter((rule) => rule.resources?.includes(options.resource));
  if (matching.length !== 1) {
    throw new Error(
      `revokeRule: ${options.role} has ${matching.length} rules listing ${options.resource}; ` +
        "it removes exactly one: name a resource that one rule lists.",
    );
  }
  const [removed] = matching as [RoleRule];
  const replaced = await k(
    ["replace", "-f", "-"],
    JSON.stringify({ ...role, rules: rules.filter((rule) => rule !== removed) }),
  );
  if (replaced.code !== 0) {
    throw new Error(`revokeRule: cannot replace ${options.role}: ${replaced.stderr.trim()}`);
  }
  const [resource, subresource] = options.resource.split("/") as [string, string | undefined];
  const group = removed.apiGroups?.[0] ?? "";
  const verb = removed.verbs?.[0] ?? "*";
  const target = group ? `${resource}.${group}` : resource;
  await pollUntil(
    async () =>
      (
        await k([
          "auth",
          "can-i",
          verb,
          target,
          ...(subresource ? [`--subresource=${subresource}`] : []),
          `--as=${options.as}`,
        ])
      ).stdout.trim() === "no",
    {
      timeoutMs: options.timeoutMs ?? 10_000,
      intervalMs: 200,
      message: `${options.as} to lose ${verb} on ${options.resource} after its rule left ${options.role}`,
    },
  );
}
