import { appendFileSync } from "node:fs";
import { cronSchedule } from "kubeloop/controller";
import { JumpClock } from "kubeloop/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backupPath } from "../src/dumps.ts";
import { until, World } from "./harness.ts";

// Level 5, autopilot: a database dropped out of band comes back from its latest backup; scheduled
// verification restores the latest backup into a scratch database and reports a corrupt one; the
// connection limit follows the observed peak within the user's bounds.

const world = new World();
const clock = new JumpClock();
const ns = "l5";
/** Past the operator's resync interval (30 s): every Ready database is looked at again. */
const RESYNC_JUMP_MS = 31_000;

beforeAll(async () => {
  await world.start();
  await world.startOperator({ clock });
  await world.namespace(ns);
});
afterAll(() => world.stop());

const ready = async (name: string) => (await world.condition(ns, name, "Ready")).status === "True";
const backup = async (name: string, database: string) => {
  await world.apply({
    apiVersion: "db.example.com/v1alpha1",
    kind: "PgDatabaseBackup",
    metadata: { name, namespace: ns },
    spec: { database },
  });
  await until(
    async () =>
      (await world.jsonpath(["-n", ns, "get", "pgdatabasebackup", name], "{.status.phase}")) === "Completed",
    60_000,
    `backup ${name}`,
  );
};
const connectionLimit = async (database: string) =>
  Number(await world.pg.psql(`select datconnlimit from pg_database where datname = '${database}'`));

describe("Level 5: autopilot", () => {
  it("recreates a database dropped out of band from its latest backup, with a Warning event", async () => {
    await world.pgDatabase(ns, "app");
    await until(() => ready("app"), 60_000, "app Ready");
    await world.asApp(ns, "app", async (client) => {
      await client.query("create table notes (id int primary key, body text)");
      await client.query("insert into notes select g, md5(g::text) from generate_series(1, 100) g");
    });
    const before = await world.asApp(
      ns,
      "app",
      async (c) => (await c.query("select * from notes order by id")).rows,
    );
    await backup("app-nightly", "app");
    await world.pg.psql("drop database app with (force)");
    clock.jump(RESYNC_JUMP_MS);
    await until(
      async () =>
        (await world.jsonpath(["-n", ns, "get", "pgdatabase", "app"], "{.status.restore.phase}")) ===
        "Completed",
      60_000,
      "the recovery",
    );
    await until(() => ready("app"), 60_000, "app Ready again");
    const after = await world.asApp(
      ns,
      "app",
      async (c) => (await c.query("select * from notes order by id")).rows,
    );
    expect(after).toEqual(before);
    expect(await world.jsonpath(["-n", ns, "get", "pgdatabase", "app"], "{.status.restore.reason}")).toBe(
      "Recovery",
    );
    const events = await world.events(ns, "app");
    expect(events).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^Warning DatabaseMissing: Database "app" is gone from the server; recreating it from backup app-nightly/,
        ),
        expect.stringMatching(/^Normal Recovered: Restored from backup app-nightly/),
      ]),
    );
  });

  it("puts back what was changed out of band: a dropped login role, another connection limit", async () => {
    await world.pgDatabase(ns, "steady", { connectionLimit: 40 });
    await until(() => ready("steady"), 60_000, "steady Ready");
    const { username } = await world.credentials(ns, "steady");
    await world.pg.psql(`drop role ${username}`);
    await world.pg.psql("alter database steady connection limit 3");
    clock.jump(RESYNC_JUMP_MS);
    await until(async () => (await connectionLimit("steady")) === 40, 30_000, "the limit set back");
    await until(
      async () =>
        (await world.pg.psql(`select count(*) from pg_roles where rolname = '${username}'`)) === "1",
      30_000,
      "the login role recreated",
    );
    expect(await world.asApp(ns, "steady", async (c) => (await c.query("select 1 as one")).rows[0].one)).toBe(
      1,
    );
    const drift = (await world.events(ns, "steady")).filter((e) => e.startsWith("Warning DriftCorrected"));
    expect(drift).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`Login role "${username}" was missing on the server; recreated`),
        expect.stringContaining("connection limit 3; set back to"),
      ]),
    );
  });

  it("verifies the latest backup on its schedule, and reports one that fails its checksum", async () => {
    const verifySchedule = "30 4 * * *";
    await world.pgDatabase(ns, "audited", { backup: { verifySchedule, keep: 3 } });
    await until(() => ready("audited"), 60_000, "audited Ready");
    await world.asApp(ns, "audited", (c) => c.query("create table t as select generate_series(1, 10) as n"));
    await backup("audited-1", "audited");
    const cron = cronSchedule(verifySchedule);
    const jumpToSlot = () => {
      const slot = cron.next(new Date(clock.now()));
      clock.jump(slot.getTime() - clock.now() + 1_000);
      return slot.toISOString();
    };
    const verification = () =>
      world.jsonpath(["-n", ns, "get", "pgdatabase", "audited"], "{.status.lastVerification}");

    const first = jumpToSlot();
    await until(async () => (await verification()).includes(first), 60_000, "the first verification");
    expect(JSON.parse(await verification())).toMatchObject({ backup: "audited-1", result: "Passed" });
    expect((await world.condition(ns, "audited", "BackupHealthy")).status).toBe("True");
    // The scratch database is gone again.
    expect(
      await world.pg.psql("select count(*) from pg_database where datname like 'pgdatabase_verify_%'"),
    ).toBe("0");

    appendFileSync(backupPath(world.backupDir, ns, "audited-1"), "bit rot");
    const second = jumpToSlot();
    await until(async () => (await verification()).includes(second), 60_000, "the second verification");
    expect(JSON.parse(await verification())).toMatchObject({ backup: "audited-1", result: "Failed" });
    expect(JSON.parse(await verification()).message).toMatch(/fails its checksum/);
    expect(await world.condition(ns, "audited", "BackupHealthy")).toEqual({
      status: "False",
      reason: "VerificationFailed",
    });
    expect(await world.condition(ns, "audited", "Degraded")).toEqual({
      status: "True",
      reason: "VerificationFailed",
    });
    const events = await world.events(ns, "audited");
    expect(
      events.some((e) => /^Warning VerificationFailed: Backup audited-1: .*fails its checksum/.test(e)),
    ).toBe(true);
  });

  it("sets the connection limit from the observed peak, within the bounds, down again in a quiet hour", async () => {
    await world.pgDatabase(ns, "busy", { autoConnectionLimit: { min: 8, max: 15, headroom: 2 } });
    await until(() => ready("busy"), 60_000, "busy Ready");
    expect(await connectionLimit("busy")).toBe(8); // no connections yet: the lower bound
    const { uri } = await world.credentials(ns, "busy");
    const open: pg.Client[] = [];
    const connect = async (count: number) => {
      for (let i = 0; i < count; i++) {
        const client = new pg.Client({ connectionString: uri });
        await client.connect();
        open.push(client);
      }
    };
    try {
      await connect(6);
      clock.jump(RESYNC_JUMP_MS);
      await until(async () => (await connectionLimit("busy")) === 12, 30_000, "limit 12 (peak 6 × 2)");
      await connect(3);
      clock.jump(RESYNC_JUMP_MS);
      await until(
        async () => (await connectionLimit("busy")) === 15,
        30_000,
        "limit 15 (peak 9 × 2, capped)",
      );
      expect(await world.jsonpath(["-n", ns, "get", "pgdatabase", "busy"], "{.status.peakConnections}")).toBe(
        "9",
      );
    } finally {
      await Promise.all(open.map((client) => client.end()));
    }
    clock.jump(61 * 60_000); // a new window, with nobody connected
    await until(async () => (await connectionLimit("busy")) === 8, 30_000, "limit back to 8");
  });
});
