// PgDatabase figures, on a real PostgreSQL server and a real API server (`npm run bench:pgdatabase` from
// the repository root):
//   1. create → Ready: one PgDatabase at a time (median and p90 of 10);
//   2. backup and restore of a 100 MB database (pg_dump custom format, then pg_restore into a new PgDatabase);
//   3. the operator's memory (its own process, as deployed) idle and with 200 PgDatabases Ready.
// Prints a Markdown table.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { until, World } from "../test/harness.ts";

const root = join(import.meta.dirname, "..");
const world = new World();
const rows: [string, string][] = [];
const record = (what: string, value: string) => {
  rows.push([what, value]);
  console.error(`${what}: ${value}`); // as it comes, in case a later step fails
};
const ns = "bench";

const ready = async (name: string) => (await world.condition(ns, name, "Ready")).status === "True";
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

async function timeToReady(name: string, spec: Record<string, unknown> = {}): Promise<number> {
  const started = performance.now();
  await world.pgDatabase(ns, name, spec);
  await until(() => ready(name), 600_000, `${name} Ready`);
  return performance.now() - started;
}

async function scrape(port: number, metric: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${metric} `));
  return Number(line?.split(" ")[1] ?? Number.NaN);
}

let operator: ChildProcess | undefined;
try {
  await world.start();
  await world.namespace(ns);

  // 1. create → Ready (the operator in this process, as in the tests).
  await world.startOperator();
  const samples: number[] = [];
  for (let i = 0; i < 10; i++) samples.push(await timeToReady(`ready-${i}`));
  samples.sort((a, b) => a - b);
  record("create → Ready, median of 10", seconds(samples[4] ?? 0));
  record("create → Ready, p90 of 10", seconds(samples[8] ?? 0));

  // 2. A 100 MB database: backup, then restore into a new PgDatabase.
  await timeToReady("big");
  await world.asApp(ns, "big", async (client) => {
    await client.query("create table rows (id int primary key, body text)");
    await client.query(
      "insert into rows select g, repeat(md5(g::text), 2) from generate_series(1, 800000) g",
    );
  });
  const size = Number(await world.pg.psql("select pg_database_size('big')"));
  record("database size", mib(size));
  let started = performance.now();
  await world.apply({
    apiVersion: "db.example.com/v1alpha1",
    kind: "PgDatabaseBackup",
    metadata: { name: "big-1", namespace: ns },
    spec: { database: "big" },
  });
  await until(
    async () =>
      (await world.jsonpath(["-n", ns, "get", "pgdatabasebackup", "big-1"], "{.status.phase}")) ===
      "Completed",
    600_000,
    "the backup",
  );
  const backupWall = performance.now() - started;
  const backup = JSON.parse(
    await world.k(["-n", ns, "get", "pgdatabasebackup", "big-1", "-o", "json"]),
  ).status;
  record("backup: pg_dump (status.durationSeconds)", `${backup.durationSeconds} s`);
  record("backup: created → Completed", seconds(backupWall));
  record("backup file (custom format, compressed)", mib(backup.sizeBytes));
  started = performance.now();
  await timeToReady("big-copy", { restoreFrom: { backup: "big-1" } });
  record("restore: created → Ready (checksum, pg_restore)", seconds(performance.now() - started));
  const copied = await world.pg.psql("select count(*) from rows", { database: "big_copy" });
  if (copied !== "800000") throw new Error(`the restored database has ${copied} rows, not 800000`);

  // 3. Memory: the operator as its own process, idle, then with 200 PgDatabases.
  await world.stopOperator();
  const metricsPort = 18_000 + Math.floor(Math.random() * 2000);
  operator = spawn(process.execPath, [join(root, "src/main.ts")], {
    env: {
      ...process.env,
      KUBECONFIG: world.plane.kubeconfigPath,
      BACKUP_DIR: world.backupDir,
      PG_BIN: world.pg.binDir,
      METRICS_PORT: String(metricsPort),
      PROBE_PORT: "0",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  await until(
    async () => Number.isFinite(await scrape(metricsPort, "process_resident_memory_bytes")),
    60_000,
    "metrics",
  );
  await until(() => ready("big-copy"), 60_000, "the existing databases seen");
  await new Promise((resolve) => setTimeout(resolve, 5_000)); // settle: pools idle, GC
  const idle = await scrape(metricsPort, "process_resident_memory_bytes");
  const idleHeap = await scrape(metricsPort, "nodejs_heap_size_used_bytes");
  record("operator RSS with 12 PgDatabases", mib(idle));
  record("operator heap used with 12 PgDatabases", mib(idleHeap));
  started = performance.now();
  const items = Array.from({ length: 200 }, (_, i) => ({
    apiVersion: "db.example.com/v1alpha1",
    kind: "PgDatabase",
    metadata: { name: `many-${i}`, namespace: ns },
    spec: { server: { secretName: "pg-admin" } },
  }));
  // A stream of objects, not a List: kubectl validates a List's items against the published v2
  // schema, where defaulted fields still read as required.
  await world.k(["apply", "-f", "-"], items.map((item) => JSON.stringify(item)).join("\n"));
  await until(
    async () => {
      const out = await world.jsonpath(
        ["-n", ns, "get", "pgdatabase"],
        '{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
      );
      return out.split("\n").filter((s) => s === "True").length >= 212;
    },
    900_000,
    "212 PgDatabases Ready",
  );
  record("200 more PgDatabases: apply → all Ready", seconds(performance.now() - started));
  await new Promise((resolve) => setTimeout(resolve, 5_000)); // settle: pools idle, GC
  const loaded = await scrape(metricsPort, "process_resident_memory_bytes");
  const heap = await scrape(metricsPort, "nodejs_heap_size_used_bytes");
  record("operator RSS with 212 PgDatabases Ready", mib(loaded));
  record("operator heap used with 212 PgDatabases", mib(heap));
  record("RSS per PgDatabase (212 − 12 = 200)", `${((loaded - idle) / 200 / 1024).toFixed(1)} KiB`);
  record("heap per PgDatabase", `${((heap - idleHeap) / 200 / 1024).toFixed(1)} KiB`);
} finally {
  operator?.kill("SIGKILL");
  await world.stop();
}

console.log("\n| PgDatabase (PostgreSQL %s, 2 cores) | |\n|---|---|", world.pg.version);
for (const [what, value] of rows) console.log(`| ${what} | ${value} |`);
