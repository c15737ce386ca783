import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { JumpClock } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until, World } from "./harness.ts";

// Level 4, deep insights: per-database metrics on the manager's /metrics, events for the lifecycle
// steps, and alerting rules shipped with the example, unit-tested with Prometheus' own evaluator.

const root = join(import.meta.dirname, "..");
const rulesDir = join(root, "config", "prometheus");
const world = new World();
const clock = new JumpClock();
let metricsPort = 0;

beforeAll(async () => {
  await world.start();
  const manager = await world.startOperator({ clock, metrics: true });
  metricsPort = manager.ports.metrics ?? 0;
  await world.namespace("l4");
  await world.namespace("l4-fragile");
});
afterAll(() => world.stop());

const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
/** The value of a series, e.g. `pgdatabase_up{namespace="l4",name="metered"}`. */
const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const backup = (namespace: string, name: string, database: string) =>
  world.apply({
    apiVersion: "db.example.com/v1alpha1",
    kind: "PgDatabaseBackup",
    metadata: { name, namespace },
    spec: { database },
  });

/** promtool from $PROMTOOL or PATH; the message says how to get it. */
function promtool(args: string[]) {
  const binary = process.env.PROMTOOL ?? "promtool";
  const result = spawnSync(binary, args, { cwd: rulesDir, encoding: "utf8" });
  if (result.error)
    throw new Error(
      `promtool could not be run (${binary}: ${result.error.message}). Install Prometheus' tools: ` +
        "`apt-get install --no-install-recommends prometheus` on Debian (npm test does this itself as root), or set PROMTOOL.",
    );
  return result;
}

describe("Level 4: deep insights", () => {
  it("exports each database's size, connections, limit and reachability on /metrics", async () => {
    await world.pgDatabase("l4", "metered", { connectionLimit: 30 });
    await until(
      async () => (await world.condition("l4", "metered", "Ready")).status === "True",
      60_000,
      "Ready",
    );
    const sizeSeries = 'pgdatabase_database_size_bytes{namespace="l4",name="metered"}';
    await until(async () => sample(await scrape(), sizeSeries) !== undefined, 30_000, "the size metric");
    const empty = sample(await scrape(), sizeSeries) ?? 0;
    expect(empty).toBeGreaterThan(0);
    await world.asApp("l4", "metered", (c) =>
      c.query("create table t as select generate_series(1, 100000) as n"),
    );
    clock.jump(31_000); // the next look at the database
    await until(
      async () => (sample(await scrape(), sizeSeries) ?? 0) > empty + 2_000_000,
      30_000,
      "the size metric to grow by the new table",
    );
    const text = await scrape();
    expect(sample(text, 'pgdatabase_up{namespace="l4",name="metered"}')).toBe(1);
    expect(sample(text, 'pgdatabase_connection_limit{namespace="l4",name="metered"}')).toBe(30);
    expect(sample(text, 'pgdatabase_connections{namespace="l4",name="metered"}')).toBe(0);
    // controller-runtime's own metrics are beside them, on the same endpoint.
    expect(text).toContain('controller_runtime_reconcile_total{controller="pgdatabase-operator"');
  });

  it("exports the last backup's time, duration and size, and counts failed backups", async () => {
    await backup("l4", "metered-1", "metered");
    await until(
      async () =>
        (await world.jsonpath(["-n", "l4", "get", "pgdatabase", "metered"], "{.status.lastBackup.name}")) ===
        "metered-1",
      60_000,
      "the backup",
    );
    const completedAt = Date.parse(
      await world.jsonpath(["-n", "l4", "get", "pgdatabasebackup", "metered-1"], "{.status.completedAt}"),
    );
    const size = Number(
      await world.jsonpath(["-n", "l4", "get", "pgdatabasebackup", "metered-1"], "{.status.sizeBytes}"),
    );
    const text = await scrape();
    expect(sample(text, 'pgdatabase_last_backup_timestamp_seconds{namespace="l4",name="metered"}')).toBe(
      completedAt / 1000,
    );
    expect(sample(text, 'pgdatabase_last_backup_size_bytes{namespace="l4",name="metered"}')).toBe(size);
    expect(
      sample(text, 'pgdatabase_last_backup_duration_seconds{namespace="l4",name="metered"}'),
    ).toBeGreaterThanOrEqual(0);
    expect((await world.events("l4", "metered-1")).some((e) => e.startsWith("Normal BackupCompleted:"))).toBe(
      true,
    );

    // A server that starts refusing the admin: the backup fails (counted) and the database is down.
    await world.pgDatabase("l4-fragile", "fragile");
    await until(
      async () => (await world.condition("l4-fragile", "fragile", "Ready")).status === "True",
      60_000,
      "Ready",
    );
    await world.serverSecret("l4-fragile", { password: "rotated-elsewhere" });
    await backup("l4-fragile", "fragile-1", "fragile");
    await until(
      async () =>
        (sample(await scrape(), 'pgdatabase_backup_failures_total{namespace="l4-fragile",name="fragile"}') ??
          0) >= 1,
      60_000,
      "a counted backup failure",
    );
    clock.jump(31_000);
    await until(
      async () => sample(await scrape(), 'pgdatabase_up{namespace="l4-fragile",name="fragile"}') === 0,
      30_000,
      "pgdatabase_up 0",
    );
    expect(sample(await scrape(), 'pgdatabase_up{namespace="l4",name="metered"}')).toBe(1);
  });

  it("records an event for each lifecycle step", async () => {
    const reasons = (await world.events("l4", "metered")).map((e) => e.split(":")[0]);
    expect(reasons).toEqual(expect.arrayContaining(["Normal Created", "Normal Ready"]));
    await world.k(["-n", "l4", "delete", "pgdatabase", "metered"]);
    const events = await world.events("l4", "metered");
    for (const step of ["FinalBackup", "Dropped"]) expect(events.some((e) => e.includes(step))).toBe(true);
    // A deleted database's series are gone.
    expect(sample(await scrape(), 'pgdatabase_up{namespace="l4",name="metered"}')).toBeUndefined();
  });

  it("ships alerting rules that pass promtool's checks and unit tests", () => {
    const check = promtool(["check", "rules", "pgdatabase-rules.yaml"]);
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain("SUCCESS: 4 rules found");
    const test = promtool(["test", "rules", "pgdatabase-rules.test.yaml"]);
    expect(test.status, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toContain("SUCCESS");
  });

  it("alerts only on metrics the operator exports", async () => {
    const rules = readFileSync(join(rulesDir, "pgdatabase-rules.yaml"), "utf8");
    const used = [...new Set(rules.match(/pgdatabase_[a-z_]+/g) ?? [])];
    expect(used.length).toBeGreaterThanOrEqual(4);
    const text = await scrape();
    for (const name of used) expect(text, name).toMatch(new RegExp(`^# TYPE ${name} `, "m"));
  });
});
