import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Manager } from "kubeloop";
import type { Clock } from "kubeloop/queue";
import { ControlPlane, kubectl, pollUntil } from "kubeloop/testing";
import { PostgresServer } from "kubeloop/testing/servers";
import pg from "pg";
import { type PgDatabaseOptions, pgDatabaseControllers } from "../src/controllers.ts";
import { PgDatabase, PgDatabaseBackup } from "../src/resources.ts";

/**
 * One test file's world: a real PostgreSQL server, a real API server with the CRDs, a backup store,
 * and the operator running in this process (so a test can stop it and start another, like a
 * restart). Everything is checked as a user would: kubectl, and SQL on the server.
 */
export class World {
  pg!: PostgresServer;
  plane!: ControlPlane;
  backupDir!: string;
  private operator: { manager: Manager; close: () => Promise<void> } | undefined;

  async start(): Promise<this> {
    [this.pg, this.plane] = await Promise.all([
      new PostgresServer().start(),
      new ControlPlane({ profile: "apiserver" }).start(),
    ]);
    await this.plane.installCrdObjects([PgDatabase.crd(), PgDatabaseBackup.crd()]);
    this.backupDir = mkdtempSync(join(tmpdir(), "pgdatabase-backups-"));
    return this;
  }

  /** Starts the operator in this process. */
  async startOperator(
    options: Partial<PgDatabaseOptions> & { clock?: Clock; backups?: boolean; metrics?: boolean } = {},
  ): Promise<Manager> {
    await this.stopOperator();
    // The tests provoke failures on purpose; their error lines would drown the output (LOG_LEVEL=info shows them).
    process.env.LOG_LEVEL ??= "fatal";
    const manager = new Manager({
      kubeconfig: this.plane.kubeconfigPath,
      metrics: options.metrics ? { port: 0, host: "127.0.0.1" } : false,
      probes: false,
      handleSignals: false,
      gracefulShutdownMs: 2_000,
    });
    const operator = pgDatabaseControllers({
      backupDir: this.backupDir,
      tools: { binDir: this.pg.binDir },
      ...(options.metrics ? { registry: manager.metrics.registry } : {}),
      ...options,
    });
    manager.add(operator.pgDatabase);
    // Without the backup controller, backups stay as they are: a test's way to stop mid-way.
    if (options.backups !== false) manager.add(operator.pgDatabaseBackup);
    // start() runs until stop(); `ready` resolves once the caches synced and the controllers run.
    const running = manager.start();
    await Promise.race([manager.ready, running]);
    this.operator = { manager, close: operator.close };
    return manager;
  }

  async stopOperator(): Promise<void> {
    const operator = this.operator;
    this.operator = undefined;
    if (!operator) return;
    await operator.manager.stop();
    await operator.close();
  }

  async stop(): Promise<void> {
    await this.stopOperator().catch(() => {});
    await Promise.all([this.plane?.stop(), this.pg?.stop()]);
    if (this.backupDir) rmSync(this.backupDir, { recursive: true, force: true });
  }

  kubectl(args: string[], input?: string) {
    return kubectl(args, { kubeconfig: this.plane.kubeconfigPath, ...(input ? { input } : {}) });
  }

  /** kubectl that must succeed; returns stdout. */
  async k(args: string[], input?: string): Promise<string> {
    const result = await this.kubectl(args, input);
    if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${result.stderr}`);
    return result.stdout;
  }

  async apply(object: object): Promise<void> {
    await this.k(["apply", "-f", "-"], JSON.stringify(object));
  }

  async jsonpath(args: string[], path: string): Promise<string> {
    const result = await this.kubectl([...args, "-o", `jsonpath=${path}`]);
    return result.code === 0 ? result.stdout : "";
  }

  async condition(
    namespace: string,
    name: string,
    type: string,
  ): Promise<{ status: string; reason: string }> {
    const path = `{.status.conditions[?(@.type=="${type}")].status}/{.status.conditions[?(@.type=="${type}")].reason}`;
    const [status = "", reason = ""] = (
      await this.jsonpath(["-n", namespace, "get", "pgdatabase", name], path)
    ).split("/");
    return { status, reason };
  }

  /** Creates a namespace with the server Secret `pg-admin` for the admin role. */
  async namespace(name: string, admin: { password?: string; port?: number } = {}): Promise<void> {
    await this.k(["create", "namespace", name]);
    await this.serverSecret(name, admin);
  }

  async serverSecret(namespace: string, admin: { password?: string; port?: number } = {}): Promise<void> {
    await this.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "pg-admin", namespace },
      stringData: {
        host: this.pg.host,
        port: String(admin.port ?? this.pg.port),
        username: this.pg.user,
        password: admin.password ?? this.pg.password,
      },
    });
  }

  pgDatabase(namespace: string, name: string, spec: Record<string, unknown> = {}) {
    return this.apply({
      apiVersion: "db.example.com/v1alpha1",
      kind: "PgDatabase",
      metadata: { name, namespace },
      spec: { server: { secretName: "pg-admin" }, ...spec },
    });
  }

  /** The credentials Secret's keys, decoded. */
  async credentials(namespace: string, name: string): Promise<Record<string, string>> {
    const data = JSON.parse(
      await this.k(["-n", namespace, "get", "secret", `${name}-credentials`, "-o", "json"]),
    ).data as Record<string, string>;
    return Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
    );
  }

  /** Runs SQL as the app would, with the credentials Secret's uri. */
  async asApp<R>(namespace: string, name: string, work: (client: pg.Client) => Promise<R>): Promise<R> {
    const { uri } = await this.credentials(namespace, name);
    const client = new pg.Client({ connectionString: uri });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  /** Events about an object, as `reason: note` lines. */
  async events(namespace: string, name: string): Promise<string[]> {
    const out = await this.k([
      "-n",
      namespace,
      "get",
      "events.events.k8s.io",
      "--field-selector",
      `regarding.name=${name}`,
      "-o",
      'jsonpath={range .items[*]}{.type} {.reason}: {.note}{"\\n"}{end}',
    ]);
    return out.split("\n").filter(Boolean);
  }
}

/** Polls `check` every 200 ms until it holds (a throw is "not yet"); names `what` and the last error after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
): Promise<void> {
  await pollUntil(check, { timeoutMs: ms, intervalMs: 200, message: what });
}
