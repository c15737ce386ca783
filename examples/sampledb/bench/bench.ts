// SampleDB figures on real pods (`npm run bench:sampledb` from the repository root, as root: the
// `node` profile runs real kubelets, containerd and runc):
//   1. backup and restore of a 100 MB database (a scheduled backup Job's pg_dump, then a new
//      SampleDB restored from it);
//   2. failover, `--runs` times (default 5): a synchronous two-instance SampleDB under a writer, its
//      primary's pod deleted → writes accepted again, and the acknowledged rows lost;
//   3. the operator's memory (RSS, heap used) as SampleDBs of one instance each are added in
//      batches of 10 up to `--count` (default 50), each batch Ready before the next.
// The operator runs as its own process (src/main.ts, as `npm start` runs it, not in a pod), so the
// RSS and heap it reports on /metrics are its own. Writes the table to bench/RESULTS.md.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { pollUntil } from "kubeloop/testing";
import { World, writeOutage } from "../test/world.ts";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, count: { type: "string", default: "50" } },
});
const runs = Number(values.runs);
const count = Number(values.count);
const root = join(import.meta.dirname, "..");
const world = new World();
const rows: [string, string][] = [];
const record = (what: string, value: string) => {
  rows.push([what, value]);
  console.error(`${what}: ${value}`); // as it comes, in case a later step fails
};
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(", ");
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const memAvailable = () =>
  Number(/MemAvailable:\s+(\d+) kB/.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0) * 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const sampleDB = (ns: string, name: string, spec: string) =>
  world.ok(
    ["-n", ns, "apply", "-f", "-"],
    `apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: ${name} }
spec: { image: ${world.postgres}, ${spec} }
`,
  );
const jsonpath = (ns: string, what: string[], path: string) =>
  world.ok(["-n", ns, "get", ...what, "-o", `jsonpath=${path}`]);

const setBackup = (ns: string, name: string, backup: Record<string, unknown>) =>
  world.ok(["-n", ns, "patch", "sampledb", name, "--type=merge", "-p", JSON.stringify({ spec: { backup } })]);

async function scrape(port: number, metric: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${metric} `));
  return Number(line?.split(" ")[1] ?? Number.NaN);
}

/** 1. A 100 MB database: the scheduled backup Job's pg_dump, then a new SampleDB restored from it. */
async function backupAndRestore(ns: string): Promise<void> {
  await sampleDB(ns, "big", "storage: 2Gi, deletionPolicy: Delete");
  await world.waitForPhase(ns, "big", "Ready", 300_000);
  const size = await world.sqlPod(
    ns,
    "big",
    "fill",
    `psql -v ON_ERROR_STOP=1 -Atq <<'SQL'
create table rows (id int primary key, body text);
insert into rows select g, repeat(md5(g::text), 2) from generate_series(1, 800000) g;
select pg_database_size(current_database());
SQL`,
    "host",
    600_000,
  );
  record("database size (800,000 rows)", mib(Number(size.trim())));
  // The first backup is due at once: the schedule's interval has passed since the creation.
  const started = performance.now();
  await setBackup(ns, "big", { schedule: "10s", retention: 1, storage: "1Gi" });
  const file = await world.waitFor(ns, "big", "{.status.lastBackupFile}", Boolean, "the backup", 600_000);
  const wall = performance.now() - started;
  await setBackup(ns, "big", { schedule: "24h" });
  const [start = "", end = ""] =
    (
      await jsonpath(
        ns,
        ["jobs"],
        '{range .items[?(@.metadata.annotations.seed\\.example\\.com/backup-file)]}{.status.startTime} {.status.completionTime}{"\\n"}{end}',
      )
    )
      .trim()
      .split("\n")[0]
      ?.split(" ") ?? [];
  record(
    "backup Job, start → completion (pg_dump -Fc, Job status times)",
    seconds(Date.parse(end) - Date.parse(start)),
  );
  record("backup: schedule set → status.lastBackupFile", seconds(wall));
  const bytes = await world.backupPod(ns, "big", "size", `wc -c < /backups/${file}`);
  record("backup file (custom format, compressed)", mib(Number(bytes.trim())));

  const restoreStarted = performance.now();
  await sampleDB(ns, "big-copy", "storage: 2Gi, deletionPolicy: Delete, restore: { from: big }");
  await world.waitForPhase(ns, "big-copy", "Ready", 600_000);
  record(
    "restore: new SampleDB from the backup, created → Ready",
    seconds(performance.now() - restoreStarted),
  );
  const copied = (
    await world.sqlPod(ns, "big-copy", "count", `psql -Atc "select count(*) from rows"`)
  ).trim();
  if (copied !== "800000") throw new Error(`the restored database has ${copied} rows, not 800000`);
  // Their pods go before the next figures (with this bench's pods: one that mounted the backup
  // volume holds it even once completed).
  await world.ok(["-n", ns, "delete", "pod", "fill", "size", "count", "--wait=false"]);
  await world.ok(["-n", ns, "delete", "sampledb", "big", "big-copy", "--wait=false"]);
  await pollUntil(async () => (await world.ok(["-n", ns, "get", "sampledb", "-o", "name"])) === "", {
    timeoutMs: 300_000,
    intervalMs: 1_000,
    message: "big and big-copy deleted",
  });
}

/** 2. Failover `runs` times on one synchronous two-instance SampleDB, each run deleting the primary. */
async function failovers(ns: string): Promise<void> {
  await sampleDB(ns, "ha", "instances: 2, storage: 256Mi");
  await world.waitForPhase(ns, "ha", "Ready", 300_000);
  const resumed: number[] = [];
  const pauses: number[] = [];
  let acknowledged = 0;
  let lost = 0;
  for (let run = 1; run <= runs; run++) {
    // A synchronous standby streams (after a failover: the old primary rejoined) before each run:
    // the operator names it in synchronous_standby_names (the default replication, preferred).
    await pollUntil(
      async () => (await jsonpath(ns, ["sampledb", "ha"], "{.status.replication.writes}")) === "Synchronous",
      { timeoutMs: 240_000, intervalMs: 1_000, message: "a synchronous standby" },
    );
    await world.sqlPod(
      ns,
      "ha",
      `sync-${run}`,
      `psql -qc "create table if not exists t (id serial primary key)"`,
    );
    const primary = await jsonpath(ns, ["sampledb", "ha"], "{.status.primary}");
    await world.startWriter(ns, "ha", `writer-${run}`, 45);
    await pollUntil(
      async () => (await world.writerRows(ns, `writer-${run}`).catch(() => ({ rows: [] }))).rows.length > 20,
      {
        timeoutMs: 120_000,
        intervalMs: 500,
        message: "the writer to write",
      },
    );
    const deleted = Date.now();
    await world.ok(["-n", ns, "delete", "pod", primary, "--wait=false"]);
    await pollUntil(
      async () => ![primary, ""].includes(await jsonpath(ns, ["sampledb", "ha"], "{.status.primary}")),
      {
        timeoutMs: 120_000,
        intervalMs: 200,
        message: `the operator to name a primary other than ${primary}`,
      },
    );
    const named = Date.now() - deleted;
    await pollUntil(
      async () => (await jsonpath(ns, ["pod", `writer-${run}`], "{.status.phase}")) === "Succeeded",
      {
        timeoutMs: 120_000,
        intervalMs: 1_000,
        message: "the writer to finish",
      },
    );
    const written = await world.writerRows(ns, `writer-${run}`);
    if (written.other.length > 0) console.error(`writer's other output:\n${written.other.join("\n")}`);
    if (!written.rows.some(([at]) => at > deleted))
      throw new Error(`run ${run}: no write accepted within 45 s`);
    const outage = writeOutage(written.rows, deleted);
    const ids = await world.sqlPod(ns, "ha", `check-${run}`, `psql -Atc "select id from t"`);
    const present = new Set(ids.trim().split("\n").map(Number));
    const missing = written.rows.filter(([, id]) => !present.has(id)).length;
    console.error(
      `run ${run}: ${primary} deleted; new primary named after ${seconds(named)}; writes accepted again after ${seconds(outage.resumedMs)} (longest pause ${seconds(outage.pauseMs)}); ${written.rows.length} rows acknowledged, ${missing} lost`,
    );
    resumed.push(outage.resumedMs);
    pauses.push(outage.pauseMs);
    acknowledged += written.rows.length;
    lost += missing;
  }
  const sorted = [...resumed].sort((a, b) => a - b);
  record(
    `failover: primary's pod deleted → writes accepted again (${runs} runs)`,
    `${resumed.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s (median ${seconds(sorted[Math.floor(runs / 2)] ?? 0)}, max ${seconds(sorted.at(-1) ?? 0)})`,
  );
  record(
    "failover: longest pause in acknowledged writes per run",
    `${pauses.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s`,
  );
  record("rows lost with synchronous replication", `${lost} of ${acknowledged} acknowledged`);
}

/** 3. The operator's memory as one-instance SampleDBs are added, 10 at a time, up to `count`. */
async function memory(ns: string, metricsPort: number): Promise<void> {
  const reading = async (label: string) => {
    await sleep(10_000); // settle: the metrics' SQL readings done, GC
    await scrape(metricsPort, "process_resident_memory_bytes"); // starts fresh SQL readings
    await sleep(5_000);
    const rss = await scrape(metricsPort, "process_resident_memory_bytes");
    const heap = await scrape(metricsPort, "nodejs_heap_size_used_bytes");
    record(
      `operator RSS / heap used, ${label}`,
      `${mib(rss)} / ${mib(heap)} (machine MemAvailable ${mib(memAvailable())}, load ${load()})`,
    );
    return { rss, heap };
  };
  const base = await reading("1 SampleDB (2 instances)");
  let ready = 0;
  let last = base;
  for (let from = 0; from < count; from += 10) {
    const to = Math.min(from + 10, count);
    const started = performance.now();
    for (let i = from; i < to; i++) await sampleDB(ns, `m-${i}`, "storage: 64Mi");
    try {
      await pollUntil(
        async () => {
          const phases = await jsonpath(ns, ["sampledb"], '{range .items[*]}{.status.phase}{"\\n"}{end}');
          return phases.split("\n").filter((p) => p === "Ready").length >= to;
        },
        { timeoutMs: 600_000, intervalMs: 2_000, message: `${to} SampleDBs Ready` },
      );
    } catch (error) {
      record(`SampleDBs ${from + 1}–${to}`, `not all Ready in 10 min: ${(error as Error).message}`);
      console.error(await world.ok(["-n", ns, "get", "pods", "-o", "wide"]).catch(() => ""));
      break;
    }
    ready = to;
    record(`SampleDBs ${from + 1}–${to}: applied → Ready`, seconds(performance.now() - started));
    last = await reading(`${ready + 1} SampleDBs (${ready} of 1 instance)`);
  }
  if (ready > 0) {
    record(
      `per one-instance SampleDB (${ready} added)`,
      `RSS ${((last.rss - base.rss) / ready / 1024).toFixed(0)} KiB, heap ${((last.heap - base.heap) / ready / 1024).toFixed(0)} KiB`,
    );
  }
}

const machine = `${cpus().length} × ${cpus()[0]?.model ?? "?"}, ${mib(totalmem())} RAM, Node ${process.version}`;
const startedAt = new Date().toISOString();
const loadAtStart = load();
let operator: ChildProcess | undefined;
try {
  await world.start(2);
  const metricsPort = 18_000 + Math.floor(Math.random() * 2000);
  operator = spawn(process.execPath, [join(root, "src/main.ts")], {
    env: {
      ...process.env,
      KUBECONFIG: world.plane.kubeconfigPath,
      METRICS_PORT: String(metricsPort),
      METRICS_SECURE: "false",
      PROBE_PORT: "0",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  await pollUntil(
    async () =>
      Number.isFinite(await scrape(metricsPort, "process_resident_memory_bytes").catch(() => Number.NaN)),
    {
      timeoutMs: 60_000,
      intervalMs: 500,
      message: "the operator's /metrics",
    },
  );
  for (const ns of ["backup", "failover", "memory"]) await world.ok(["create", "namespace", ns]);
  console.error(`load average before backup and restore: ${load()}`);
  await backupAndRestore("backup");
  console.error(`load average before failovers: ${load()}`);
  await failovers("failover");
  await memory("memory", metricsPort);
} finally {
  operator?.kill("SIGTERM");
  await world.stop();
}

const table = [
  "| SampleDB on real pods (PostgreSQL 15, `node` profile, 2 nodes) | |",
  "|---|---|",
  ...rows.map(([what, value]) => `| ${what} | ${value} |`),
].join("\n");
const results = `# SampleDB figures

\`npm run bench:sampledb\` (as root), ${startedAt} → ${new Date().toISOString()}.
Machine: ${machine}, shared with other engineers' builds and tests. Load average (1, 5, 15 min):
${loadAtStart} at the start, ${load()} at the end. The operator ran as its own process
(\`node examples/sampledb/src/main.ts\`), not as a pod; the databases as real pods.

${table}
`;
writeFileSync(join(root, "bench", "RESULTS.md"), results);
console.log(`\n${table}`);
