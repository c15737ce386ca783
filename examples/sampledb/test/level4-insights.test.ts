import { pollUntil } from "kubeloop/testing";
import { type PrometheusAlert, PrometheusServer } from "kubeloop/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alertRules } from "../src/alerts.ts";
import { dashboardQueries } from "../src/dashboard.ts";
import { World } from "./world.ts";

// Level 4 on real pods: the operator exports each SampleDB's instances, roles, connections,
// replication lag, database size, last backup and failovers, read with SQL from the PostgreSQL
// pods; a real Prometheus scrapes it and evaluates the shipped alerting rules (their durations
// shortened for the test, the expressions the same); alerts fire when their condition is made
// true on the real pods, and resolve after. The rules file itself: level4-rules.test.ts.

const world = new World();
const ns = "insights";
const JOB = "sampledb-operator";
let metricsPort = 0;
let prometheus: PrometheusServer | undefined;

beforeAll(async () => {
  await world.start(1);
  metricsPort = (await world.startOperator({ metrics: true })) ?? 0;
  await world.ok(["create", "namespace", ns]);
  prometheus = await new PrometheusServer({
    scrapeConfigs: [{ job_name: JOB, static_configs: [{ targets: [`127.0.0.1:${metricsPort}`] }] }],
    ruleGroups: alertRules({
      instanceDownFor: "0s",
      notStreamingFor: "0s",
      backupTooOldFor: "0s",
      failoverWindowSeconds: 30,
    }),
  }).start();
});
afterAll(async () => {
  await prometheus?.stop();
  await world.stop();
});

const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
/** The value of one series in the operator's /metrics, e.g. `sampledb_instances{…}`. */
const sample = (text: string, metric: string, labels: Record<string, string> = {}) => {
  const all = { namespace: ns, name: "shop", ...labels };
  const line = text.split("\n").find((l) => {
    if (!l.startsWith(`${metric}{`)) return false;
    return Object.entries(all).every(([key, value]) => l.includes(`${key}="${value}"`));
  });
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
};
const until = (check: () => Promise<boolean>, message: string, timeoutMs = 90_000) =>
  pollUntil(check, { timeoutMs, intervalMs: 500, message });
const status = (path: string) => world.ok(["-n", ns, "get", "sampledb", "shop", "-o", `jsonpath=${path}`]);
const firing = async (alertname: string, labels: Record<string, string> = {}) =>
  ((await prometheus?.alerts()) ?? []).filter(
    (a: PrometheusAlert) =>
      a.state === "firing" &&
      a.labels.alertname === alertname &&
      a.labels.namespace === ns &&
      Object.entries(labels).every(([key, value]) => a.labels[key] === value),
  );
const elapsed = (since: number) => Math.round((Date.now() - since) / 100) / 10;

describe("SampleDB level 4: metrics from the real pods, alerts that fire and resolve", () => {
  it("exports roles, connections, replication, size and backups, read with SQL from each instance", async () => {
    await world.ok(
      ["-n", ns, "apply", "-f", "-"],
      `apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: shop }
spec: { instances: 2, storage: 256Mi, database: shop, image: ${world.postgres}, backup: { schedule: 20s, retention: 2 } }
`,
    );
    await world.waitForPhase(ns, "shop", "Ready", 240_000);
    let text = "";
    await until(async () => {
      text = await scrape();
      // Each instance is read on its own schedule: wait for one reading where both are up.
      return (
        sample(text, "sampledb_streaming_replicas") === 1 &&
        sample(text, "sampledb_instance_up", { pod: "shop-1", role: "replica" }) === 1 &&
        sample(text, "sampledb_instance_in_recovery", { pod: "shop-1" }) === 1
      );
    }, "the primary to report its replica streaming, and the replica up in recovery");
    expect(sample(text, "sampledb_instances")).toBe(2);
    expect(sample(text, "sampledb_ready_instances")).toBe(2);
    expect(sample(text, "sampledb_instance_up", { pod: "shop-0", role: "primary" })).toBe(1);
    expect(sample(text, "sampledb_instance_up", { pod: "shop-1", role: "replica" })).toBe(1);
    expect(sample(text, "sampledb_instance_in_recovery", { pod: "shop-0" })).toBe(0);
    expect(sample(text, "sampledb_instance_in_recovery", { pod: "shop-1" })).toBe(1);
    expect(sample(text, "sampledb_max_connections", { pod: "shop-1" })).toBe(100);
    expect(sample(text, "sampledb_replication_lag_seconds", { pod: "shop-1" })).toBeLessThan(30);
    expect(sample(text, "sampledb_replication_lag_bytes", { pod: "shop-1" })).toBeGreaterThanOrEqual(0);
    expect(sample(text, "sampledb_failovers_total")).toBe(0);
    const emptySize = sample(text, "sampledb_database_size_bytes") ?? 0;
    expect(emptySize).toBeGreaterThan(1_000_000); // an empty database is about 7 MB

    // Three connections held by an application pod are counted on the primary.
    const holding = world.sqlPod(
      ns,
      "shop",
      "holder",
      "for i in 1 2 3; do psql -Atc 'select pg_sleep(12)' & done; wait",
    );
    await until(
      async () => (sample(await scrape(), "sampledb_connections", { pod: "shop-0" }) ?? 0) >= 3,
      "the held connections to be counted",
      60_000,
    );
    await holding;
    // 20 000 rows written through the Service grow the database's size on the primary.
    await world.sqlPod(
      ns,
      "shop",
      "writer",
      "psql -v ON_ERROR_STOP=1 -qc 'create table t as select n, md5(n::text) as memo from generate_series(1, 20000) n'",
    );
    await until(
      async () => (sample(await scrape(), "sampledb_database_size_bytes") ?? 0) > emptySize + 1_000_000,
      "the size to grow by the new table",
      30_000,
    );

    const lastBackup = await world.waitFor(ns, "shop", "{.status.lastBackup}", Boolean, "a backup", 90_000);
    await until(
      async () =>
        sample(await scrape(), "sampledb_last_backup_timestamp_seconds") === Date.parse(lastBackup) / 1000,
      "the last backup's time on /metrics",
      30_000,
    );
    expect(sample(await scrape(), "sampledb_backup_interval_seconds")).toBe(20);

    // Prometheus scrapes it all, and once both instances stream no SampleDB alert is left.
    const server = prometheus as PrometheusServer;
    await until(
      async () =>
        (await server.query(`sampledb_instance_up{job="${JOB}",namespace="${ns}"} == 1`)).length === 2,
      "Prometheus to scrape both instances up",
    );
    await until(
      async () =>
        (await server.alerts()).filter((a) => a.labels.alertname?.startsWith("SampleDB")).length === 0,
      "no SampleDB alert once the SampleDB is Ready and backed up",
      30_000,
    );
  }, 360_000); // Ready alone can take minutes on a loaded machine

  it("SampleDBBackupTooOld fires when backup pods cannot run, and resolves once a backup completes", async () => {
    // The only node cordoned: the next backup Job's pod stays Pending, the database runs on.
    await world.ok(["cordon", "node-0"]);
    const cordoned = Date.now();
    let fired = 0;
    let stalled = "";
    try {
      await until(async () => (await firing("SampleDBBackupTooOld")).length === 1, "SampleDBBackupTooOld");
      fired = elapsed(cordoned);
      stalled = await status("{.status.lastBackup}");
      const [alert] = await firing("SampleDBBackupTooOld");
      expect(Number(alert?.value)).toBeGreaterThan(40); // two 20 s intervals
      expect(Date.now() - Date.parse(stalled)).toBeGreaterThan(40_000);
      expect(alert?.annotations.summary).toMatch(/^SampleDB insights\/shop: the last backup is [\d.]+s old$/);
    } finally {
      await world.ok(["uncordon", "node-0"]);
    }
    const uncordoned = Date.now();
    await until(
      async () => (await firing("SampleDBBackupTooOld")).length === 0,
      "SampleDBBackupTooOld to resolve",
    );
    const resolved = elapsed(uncordoned);
    expect(Date.parse(await status("{.status.lastBackup}"))).toBeGreaterThan(Date.parse(stalled));
    console.log(
      `SampleDBBackupTooOld: firing ${fired} s after the cordon, resolved ${resolved} s after the uncordon`,
    );
  }, 240_000);

  it("SampleDBInstanceDown and SampleDBFailover fire when the primary's pod goes, and resolve after", async () => {
    // A settled start: every alert resolved (on a loaded machine a slow readiness probe can
    // already have made the operator fail over, whose alert lasts 30 s here).
    await until(
      async () =>
        ((await prometheus?.alerts()) ?? []).every((a) => !a.labels.alertname?.startsWith("SampleDB")),
      "no SampleDB alert before the primary is deleted",
    );
    const primary = await status("{.status.primary}");
    const replica = primary === "shop-0" ? "shop-1" : "shop-0";
    const failoversBefore = sample(await scrape(), "sampledb_failovers_total") ?? 0;
    await world.ok(["-n", ns, "delete", "pod", primary, "--wait=false"]);
    const deleted = Date.now();
    // Watched together: each is noted the first time it fires.
    const seen: { failover?: number; down?: number } = {};
    await until(async () => {
      seen.failover ??= (await firing("SampleDBFailover")).length === 1 ? elapsed(deleted) : undefined;
      seen.down ??=
        (await firing("SampleDBInstanceDown", { pod: primary })).length === 1 ? elapsed(deleted) : undefined;
      return seen.failover !== undefined && seen.down !== undefined;
    }, `SampleDBFailover and SampleDBInstanceDown for ${primary}`);
    expect(await status("{.status.primary}")).toBe(replica);
    expect(sample(await scrape(), "sampledb_failovers_total")).toBeGreaterThan(failoversBefore);

    // The old primary copies the new one and rejoins as a streaming replica.
    await until(
      async () => (await firing("SampleDBInstanceDown")).length === 0,
      "SampleDBInstanceDown to resolve",
      180_000,
    );
    const rejoined = elapsed(deleted);
    const text = await scrape();
    expect(sample(text, "sampledb_instance_up", { pod: primary, role: "replica" })).toBe(1);
    expect(sample(text, "sampledb_instance_in_recovery", { pod: primary })).toBe(1);
    expect(sample(text, "sampledb_instance_in_recovery", { pod: replica })).toBe(0);
    // The failover alert lasts its window (30 s here) from the promotion, then resolves.
    await until(async () => (await firing("SampleDBFailover")).length === 0, "SampleDBFailover to resolve");
    // Every scrape succeeded meanwhile: a hanging instance does not make /metrics time out.
    const server = prometheus as PrometheusServer;
    expect(await server.query(`min_over_time(up{job="${JOB}"}[5m]) < 1`)).toEqual([]);
    // Every panel of the dashboard has data for this SampleDB (a failover included).
    for (const query of dashboardQueries()) {
      const expr = query.replaceAll("$namespace", ns).replaceAll("$name", "shop");
      expect((await server.query(expr)).length, expr).toBeGreaterThan(0);
    }
    console.log(
      `primary deleted: SampleDBFailover firing after ${seen.failover} s, SampleDBInstanceDown after ${seen.down} s, ` +
        `resolved after ${rejoined} s; SampleDBFailover resolved after ${elapsed(deleted)} s`,
    );
  }, 300_000);
});
