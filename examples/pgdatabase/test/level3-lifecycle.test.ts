import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cronSchedule } from "kubeloop/controller";
import { JumpClock, startOperator } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backupPath } from "../src/dumps.ts";
import { until, World } from "./harness.ts";

// Level 3, full lifecycle: backups (on demand and scheduled, with retention), restore into a new
// PgDatabase, deletion by policy behind a finalizer, and an operator stopped in the middle of a
// backup or a deletion that finishes after its restart, losing nothing.

const world = new World();
const clock = new JumpClock();
const ns = "l3";

beforeAll(async () => {
  await world.start();
  await world.startOperator({ clock });
  await world.namespace(ns);
});
afterAll(() => world.stop());

const phase = (kind: string, name: string) =>
  world.jsonpath(["-n", ns, "get", kind, name], "{.status.phase}");
const ready = async (name: string) => (await world.condition(ns, name, "Ready")).status === "True";
const databaseExists = async (name: string) =>
  (await world.pg.psql(`select count(*) from pg_database where datname = '${name}'`)) === "1";
const backupObject = (name: string, database: string) => ({
  apiVersion: "db.example.com/v1alpha1",
  kind: "PgDatabaseBackup",
  metadata: { name, namespace: ns },
  spec: { database },
});
const rowsOf = (name: string) =>
  world.asApp(
    ns,
    name,
    async (client) => (await client.query("select id, name from items order by id")).rows,
  );

describe("Level 3: full lifecycle", () => {
  it("backs up on demand: a pg_dump file with its size, checksum, duration and the server's version in status", async () => {
    await world.pgDatabase(ns, "shop");
    await until(() => ready("shop"), 60_000, "shop Ready");
    await world.asApp(ns, "shop", async (client) => {
      await client.query("create table items (id int primary key, name text)");
      await client.query("insert into items select g, 'item ' || g from generate_series(1, 500) g");
    });
    await world.apply(backupObject("shop-manual", "shop"));
    await until(
      async () => (await phase("pgdatabasebackup", "shop-manual")) === "Completed",
      60_000,
      "Completed",
    );
    const status = JSON.parse(
      await world.k(["-n", ns, "get", "pgdatabasebackup", "shop-manual", "-o", "json"]),
    ).status;
    const path = backupPath(world.backupDir, ns, "shop-manual");
    expect(status.path).toBe(path);
    const file = readFileSync(path);
    expect(file.subarray(0, 5).toString()).toBe("PGDMP"); // pg_dump's custom format
    expect(status.sizeBytes).toBe(file.length);
    expect(status.sha256).toBe(createHash("sha256").update(file).digest("hex"));
    expect(status.postgresVersion).toBe(world.pg.version);
    expect(status.durationSeconds).toBeGreaterThanOrEqual(0);
    expect(status.databaseName).toBe("shop");
    await until(
      async () =>
        (await world.jsonpath(["-n", ns, "get", "pgdatabase", "shop"], "{.status.lastBackup.name}")) ===
        "shop-manual",
      30_000,
      "lastBackup in the PgDatabase's status",
    );
    expect((await world.condition(ns, "shop", "BackupHealthy")).status).toBe("True");
  });

  it("restores a backup into a new PgDatabase with the same rows, owned by the new owner", async () => {
    await world.pgDatabase(ns, "shop-copy", { restoreFrom: { backup: "shop-manual" } });
    await until(() => ready("shop-copy"), 60_000, "shop-copy Ready");
    expect(await rowsOf("shop-copy")).toEqual(await rowsOf("shop"));
    expect((await rowsOf("shop-copy")).length).toBe(500);
    expect(
      await world.pg.psql("select tableowner from pg_tables where tablename = 'items'", {
        database: "shop_copy",
      }),
    ).toBe("shop_copy_owner");
    expect(
      await world.jsonpath(["-n", ns, "get", "pgdatabase", "shop-copy"], "{.status.restore.phase}"),
    ).toBe("Completed");
  });

  it("takes scheduled backups at their slots (time moved by the test) and keeps only `keep` of them", async () => {
    const schedule = "0 3 * * *";
    await world.pgDatabase(ns, "daily", { backup: { schedule, keep: 2 } });
    await until(() => ready("daily"), 60_000, "daily Ready");
    const cron = cronSchedule(schedule);
    const names: string[] = [];
    for (let day = 0; day < 3; day++) {
      const slot = cron.next(new Date(clock.now()));
      clock.jump(slot.getTime() - clock.now() + 1_000);
      const name = `daily-${slot.toISOString().slice(0, 10).replace(/-/g, "")}-0300`;
      names.push(name);
      await until(
        async () => (await phase("pgdatabasebackup", name)) === "Completed",
        60_000,
        `backup ${name}`,
      );
      expect(
        await world.jsonpath(
          ["-n", ns, "get", "pgdatabasebackup", name],
          "{.metadata.labels.db\\.example\\.com/scheduled}",
        ),
      ).toBe("true");
    }
    // Retention: the oldest of three went, with its file.
    await until(
      async () => (await world.kubectl(["-n", ns, "get", "pgdatabasebackup", names[0] ?? ""])).code !== 0,
      30_000,
      "the oldest backup pruned",
    );
    expect(existsSync(backupPath(world.backupDir, ns, names[0] ?? ""))).toBe(false);
    for (const kept of names.slice(1)) expect(existsSync(backupPath(world.backupDir, ns, kept))).toBe(true);
    expect(
      await world.jsonpath(["-n", ns, "get", "pgdatabase", "daily"], "{.status.lastScheduledBackup}"),
    ).toMatch(/T03:00:00/);
    // No slot due between the slots: no extra backups.
    clock.jump(60 * 60_000);
    const listed = await world.k([
      "-n",
      ns,
      "get",
      "pgdatabasebackup",
      "-l",
      "db.example.com/database=daily",
      "-o",
      "name",
    ]);
    expect(listed.trim().split("\n").sort()).toEqual(
      names.slice(1).map((n) => `pgdatabasebackup.db.example.com/${n}`),
    );
  });

  it("finishes a backup that an operator stopped in the middle of (state in status: Running, a partial file)", async () => {
    await world.stopOperator();
    await world.apply(backupObject("shop-interrupted", "shop"));
    // What a dump cut short leaves: the backup marked Running with one attempt, a partial file.
    const path = backupPath(world.backupDir, ns, "shop-interrupted");
    await world.k([
      "-n",
      ns,
      "patch",
      "pgdatabasebackup",
      "shop-interrupted",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status: { phase: "Running", attempts: 1, path } }),
    ]);
    writeFileSync(`${path}.partial`, "PGDMP half a dump");
    await world.startOperator({ clock });
    await until(
      async () => (await phase("pgdatabasebackup", "shop-interrupted")) === "Completed",
      60_000,
      "Completed",
    );
    const status = JSON.parse(
      await world.k(["-n", ns, "get", "pgdatabasebackup", "shop-interrupted", "-o", "json"]),
    ).status;
    expect(status.attempts).toBe(2);
    expect(status.sha256).toBe(createHash("sha256").update(readFileSync(path)).digest("hex"));
    expect(existsSync(`${path}.partial`)).toBe(false);
  });

  it("deletes with Snapshot: a final backup first, then the database; the backup stays", async () => {
    expect(await databaseExists("shop_copy")).toBe(true);
    await world.k(["-n", ns, "delete", "pgdatabase", "shop-copy", "--wait=false"]);
    await until(
      async () => (await world.kubectl(["-n", ns, "get", "pgdatabase", "shop-copy"])).code !== 0,
      60_000,
      "gone",
    );
    expect(await databaseExists("shop_copy")).toBe(false);
    const finals = await world.k([
      "-n",
      ns,
      "get",
      "pgdatabasebackup",
      "-l",
      "db.example.com/database=shop-copy",
      "-o",
      "name",
    ]);
    const final = finals.trim().replace("pgdatabasebackup.db.example.com/", "");
    expect(final).toMatch(/^shop-copy-final-/);
    expect(await phase("pgdatabasebackup", final)).toBe("Completed");
    expect(existsSync(backupPath(world.backupDir, ns, final))).toBe(true);
    const events = await world.events(ns, "shop-copy");
    expect(events.findIndex((e) => e.includes("FinalBackup"))).toBeLessThan(
      events.findIndex((e) => e.includes("Dropped")),
    );
  });

  it("deletes with Retain: the database stays on the server", async () => {
    await world.pgDatabase(ns, "kept", { deletionPolicy: "Retain" });
    await until(() => ready("kept"), 60_000, "kept Ready");
    await world.k(["-n", ns, "delete", "pgdatabase", "kept"]);
    expect(await databaseExists("kept")).toBe(true);
  });

  it("deletes with Delete: the database goes, without a backup", async () => {
    await world.pgDatabase(ns, "scratch", { deletionPolicy: "Delete" });
    await until(() => ready("scratch"), 60_000, "scratch Ready");
    await world.k(["-n", ns, "delete", "pgdatabase", "scratch"]);
    expect(await databaseExists("scratch")).toBe(false);
    expect(
      await world.k([
        "-n",
        ns,
        "get",
        "pgdatabasebackup",
        "-l",
        "db.example.com/database=scratch",
        "-o",
        "name",
      ]),
    ).toBe("");
  });

  it("finishes a deletion that an operator stopped in the middle of: one final backup, then the drop", async () => {
    await world.pgDatabase(ns, "ending");
    await until(() => ready("ending"), 60_000, "ending Ready");
    // An operator whose backups do not run: the deletion gets as far as asking for the final backup.
    await world.startOperator({ clock, backups: false });
    await world.k(["-n", ns, "delete", "pgdatabase", "ending", "--wait=false"]);
    await until(
      async () =>
        (await world.jsonpath(["-n", ns, "get", "pgdatabase", "ending"], "{.status.deletion.step}")) ===
        "Snapshot",
      30_000,
      "the Snapshot step recorded",
    );
    expect(await databaseExists("ending")).toBe(true);
    await world.startOperator({ clock });
    await until(
      async () => (await world.kubectl(["-n", ns, "get", "pgdatabase", "ending"])).code !== 0,
      60_000,
      "gone",
    );
    expect(await databaseExists("ending")).toBe(false);
    const finals = await world.k([
      "-n",
      ns,
      "get",
      "pgdatabasebackup",
      "-l",
      "db.example.com/database=ending",
      "-o",
      "name",
    ]);
    expect(finals.trim().split("\n")).toHaveLength(1);
  });

  it("finishes a backup after the operator's process is killed (SIGKILL) in the middle of pg_dump", async () => {
    await world.stopOperator();
    await world.pgDatabase(ns, "large");
    // The operator as deployed: its own process (and process group, like a container), killed outright.
    const start = () =>
      startOperator(join(import.meta.dirname, "..", "src", "main.ts"), {
        env: {
          KUBECONFIG: world.plane.kubeconfigPath,
          BACKUP_DIR: world.backupDir,
          PG_BIN: world.pg.binDir,
          METRICS_PORT: "0",
          PROBE_PORT: "0",
          LOG_LEVEL: "error",
        },
        processGroup: true,
      });
    let operator = start();
    try {
      await until(() => ready("large"), 60_000, "large Ready");
      await world.asApp(ns, "large", (client) =>
        client.query(
          "create table blobs as select g as id, repeat(md5(g::text), 4) as body from generate_series(1, 300000) g",
        ),
      );
      await world.apply(backupObject("large-1", "large"));
      await until(
        async () => (await phase("pgdatabasebackup", "large-1")) === "Running",
        60_000,
        "the dump to start",
      );
      operator.kill("SIGKILL"); // the operator and its pg_dump (its process group), mid-dump
      await operator.exited;
      expect(await phase("pgdatabasebackup", "large-1")).toBe("Running");
      expect(existsSync(backupPath(world.backupDir, ns, "large-1"))).toBe(false);
      operator = start();
      await until(
        async () => (await phase("pgdatabasebackup", "large-1")) === "Completed",
        120_000,
        "Completed",
      );
    } finally {
      operator.kill("SIGKILL");
    }
    const status = JSON.parse(
      await world.k(["-n", ns, "get", "pgdatabasebackup", "large-1", "-o", "json"]),
    ).status;
    const path = backupPath(world.backupDir, ns, "large-1");
    expect(status.attempts).toBe(2);
    expect(status.sha256).toBe(createHash("sha256").update(readFileSync(path)).digest("hex"));
    expect(existsSync(`${path}.partial`)).toBe(false);
    // The dump is whole: restored, it has every row.
    await world.startOperator({ clock });
    await world.pgDatabase(ns, "large-copy", { restoreFrom: { backup: "large-1" } });
    await until(() => ready("large-copy"), 120_000, "large-copy Ready");
    expect(await world.pg.psql("select count(*) from blobs", { database: "large_copy" })).toBe("300000");
  });

  it("deleting a backup removes its file (finalizer)", async () => {
    const path = backupPath(world.backupDir, ns, "shop-manual");
    expect(existsSync(path)).toBe(true);
    await world.k(["-n", ns, "delete", "pgdatabasebackup", "shop-manual"]);
    expect(existsSync(path)).toBe(false);
  });
});
