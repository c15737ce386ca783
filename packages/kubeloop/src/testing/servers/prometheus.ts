import { spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { stringify } from "yaml";
import { freePorts } from "../ports.js";
import { type ManagedProcess, ProcessGroup, tempDir } from "../process.js";

/** Prometheus' binaries are missing, or the server could not start. */
export class PrometheusError extends Error {
  override readonly name = "PrometheusError";
}

const INSTALL_HINT =
  "Install Prometheus: `apt-get install prometheus` on Debian or Ubuntu (`npm test` does this itself " +
  "when it runs as root), or set $PROMTOOL and $PROMETHEUS to the binaries.";

/**
 * The path of `promtool` or `prometheus`: `$PROMTOOL` / `$PROMETHEUS`, else the first on PATH.
 * Throws a {@link PrometheusError} naming `apt-get install prometheus` when there is none.
 */
export function findPrometheusBinary(name: "promtool" | "prometheus"): string {
  const variable = name.toUpperCase();
  const explicit = process.env[variable];
  if (explicit) {
    if (existsSync(explicit)) return explicit;
    throw new PrometheusError(`$${variable}=${explicit} does not exist. ${INSTALL_HINT}`);
  }
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  throw new PrometheusError(`${name} is not on PATH. ${INSTALL_HINT}`);
}

/** What a {@link promtool} run printed; it does not throw on a non-zero exit. */
export interface PromtoolResult {
  /** The exit code: 0 when the rules are valid and their unit tests pass. */
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `promtool` with `args` (e.g. `["test", "rules", "tests.yaml"]`) and returns what it printed. */
export function promtool(args: string[], options: { cwd?: string } = {}): PromtoolResult {
  const result = spawnSync(findPrometheusBinary("promtool"), args, {
    encoding: "utf8",
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  if (result.error) throw new PrometheusError(`promtool could not run: ${result.error.message}`);
  return { code: result.status ?? 1, stdout: result.stdout, stderr: result.stderr };
}

/** What a {@link PrometheusServer} scrapes and evaluates; written to its prometheus.yml and rules.yml. */
export interface PrometheusServerOptions {
  /** `scrape_configs` of prometheus.yml, as objects (written as YAML); files they name must exist. */
  scrapeConfigs?: object[];
  /** Rule groups (`{ name, rules }`, as in a rules file or a PrometheusRule's `spec.groups`). */
  ruleGroups?: object[];
  /** `global.scrape_interval`. Default `1s`: tests wait for scrapes. */
  scrapeInterval?: string;
  /** `global.evaluation_interval`. Default `1s`: tests wait for alerts. */
  evaluationInterval?: string;
  /**
   * The address it listens on. Default `127.0.0.1`; a node-profile plane's host address (the
   * address of `plane.registry`) lets pods reach it, e.g. a custom-metrics adapter.
   */
  host?: string;
  /** Time allowed until the server answers /-/ready. Default 30 s. */
  startTimeoutMs?: number;
  /** Stop the server on SIGINT/SIGTERM/SIGHUP before the process goes (default true). */
  handleSignals?: boolean;
}

/** An alert as Prometheus' `/api/v1/alerts` lists it. */
export interface PrometheusAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: "pending" | "firing" | "inactive";
  activeAt?: string;
  value: string;
}

/** One series of a query's answer: its labels and value. */
export interface PrometheusSample {
  metric: Record<string, string>;
  value: [number, string];
}

/**
 * A real Prometheus for tests of alerting rules and scrapes: `promtool` to check and unit-test
 * rules, and a server on a free loopback port with its data in a temporary folder, stopped (files
 * removed) by `stop()`, an exception, `process.exit()`, a signal, or — through a watchdog — a
 * SIGKILL of its owner. The binaries are the machine's (Debian's `prometheus` package, which
 * `npm test` installs when missing and it runs as root), found on PATH or through `$PROMTOOL` and
 * `$PROMETHEUS`.
 *
 * @example
 * ```ts
 * import { PrometheusServer, promtool } from "kubeloop/testing/servers";
 *
 * expect(promtool(["check", "rules", "alerts.yaml"]).code).toBe(0);
 * const prometheus = await new PrometheusServer({
 *   scrapeConfigs: [{ job_name: "op", static_configs: [{ targets: ["127.0.0.1:8080"] }] }],
 *   ruleGroups: [{ name: "op", rules: [{ alert: "Down", expr: "up == 0" }] }],
 * }).start();
 * try {
 *   const [up, alerts] = [await prometheus.query("up"), await prometheus.alerts()];
 * } finally {
 *   await prometheus.stop();
 * }
 * ```
 */
export class PrometheusServer {
  private readonly options: PrometheusServerOptions;
  private dirPath: string | undefined;
  private portNumber: number | undefined;
  private group: ProcessGroup | undefined;
  private process: ManagedProcess | undefined;

  constructor(options: PrometheusServerOptions = {}) {
    this.options = options;
  }

  /** `http://<host>:<port>` (host `127.0.0.1` unless given). */
  get url(): string {
    if (this.portNumber === undefined) throw new PrometheusError("The Prometheus server is not started");
    return `http://${this.options.host ?? "127.0.0.1"}:${this.portNumber}`;
  }

  /** Its folder: prometheus.yml, rules.yml, data/, prometheus.log. Put files scrape configs name here. */
  get dir(): string {
    if (!this.dirPath) throw new PrometheusError("The Prometheus server is not started");
    return this.dirPath;
  }

  /** Writes the configuration, runs the server, and resolves once it answers `/-/ready`. */
  async start(): Promise<this> {
    if (this.dirPath) throw new PrometheusError("This Prometheus server was already started");
    const binary = findPrometheusBinary("prometheus");
    const dir = tempDir("kubeloop-prometheus-");
    this.dirPath = dir;
    const group = new ProcessGroup({
      pidFile: join(dir, "pids"),
      removeOnOrphan: [dir],
      handleSignals: this.options.handleSignals ?? true,
      removeFiles: () => rmSync(dir, { recursive: true, force: true }),
    });
    this.group = group;
    try {
      const rules = join(dir, "rules.yml");
      writeFileSync(rules, stringify({ groups: this.options.ruleGroups ?? [] }));
      writeFileSync(
        join(dir, "prometheus.yml"),
        stringify({
          global: {
            scrape_interval: this.options.scrapeInterval ?? "1s",
            evaluation_interval: this.options.evaluationInterval ?? "1s",
          },
          rule_files: [rules],
          scrape_configs: this.options.scrapeConfigs ?? [],
        }),
      );
      const [port] = await freePorts(1, this.options.host);
      this.portNumber = port;
      this.process = group.spawn({
        name: "prometheus",
        binary,
        args: [
          `--config.file=${join(dir, "prometheus.yml")}`,
          `--storage.tsdb.path=${join(dir, "data")}`,
          `--web.listen-address=${this.options.host ?? "127.0.0.1"}:${port}`,
          "--web.enable-lifecycle",
        ],
        logPath: join(dir, "prometheus.log"),
        cwd: dir,
        // A test's Prometheus holds nothing worth a long flush.
        stopGraceMs: 5_000,
      });
      await group.waitUntil("Prometheus to be ready", async () => (await fetch(`${this.url}/-/ready`)).ok, {
        timeoutMs: this.options.startTimeoutMs ?? 30_000,
        failure: (dead) => new PrometheusError(dead.describeFailure("starting", 20)),
      });
    } catch (error) {
      await this.stop();
      throw error;
    }
    return this;
  }

  /** An instant query's series (`/api/v1/query`). Throws with Prometheus' error on a bad query. */
  async query(expr: string): Promise<PrometheusSample[]> {
    const data = await this.api<{ result: PrometheusSample[] }>(
      `/api/v1/query?query=${encodeURIComponent(expr)}`,
    );
    return data.result;
  }

  /** Every pending and firing alert (`/api/v1/alerts`). */
  async alerts(): Promise<PrometheusAlert[]> {
    return (await this.api<{ alerts: PrometheusAlert[] }>("/api/v1/alerts")).alerts;
  }

  /** The scrape targets and their health (`/api/v1/targets`): `lastError` says why a scrape failed. */
  async targets(): Promise<{ labels: Record<string, string>; health: string; lastError: string }[]> {
    return (
      await this.api<{
        activeTargets: { labels: Record<string, string>; health: string; lastError: string }[];
      }>("/api/v1/targets")
    ).activeTargets;
  }

  /** The server's last log lines, for assertion messages. */
  log(lines = 30): string {
    return this.process?.tail(lines) ?? "";
  }

  /** Ends the server and removes its folder. Safe to call twice. */
  async stop(): Promise<void> {
    await this.group?.close();
  }

  /** `stop()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private async api<T>(path: string): Promise<T> {
    const response = await fetch(`${this.url}${path}`);
    const body = (await response.json()) as { status: string; data: T; error?: string };
    if (body.status !== "success")
      throw new PrometheusError(`Prometheus ${path}: ${body.error ?? response.status}`);
    return body.data;
  }
}
