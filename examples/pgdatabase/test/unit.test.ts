import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Secret } from "kubeloop/k8s";
import { secretValues } from "kubeloop/resources";
import { MemoryApiServer, ReconcileHarness } from "kubeloop/testing";
import { PostgresServer } from "kubeloop/testing/servers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FINALIZER, pgDatabaseControllers, SCHEDULED_LABEL } from "../src/controllers.ts";
import { PgDatabase, PgDatabaseBackup, type PgDatabaseObject } from "../src/resources.ts";

// Unit tests of the PgDatabase reconciler, in milliseconds per case: the real controller against
// kubeloop's in-memory API server, one reconcile at a time with a fake clock, and one real
// PostgreSQL server for the file (the reconciler's other half is SQL; a mock of it would test
// nothing). The envtest suites (level1…level5, hardened) cover the rest: the backup controller's
// dumps, restores, kubectl's view and RBAC. The CRD's CEL rules (immutable databaseName) run here
// too: the in-memory server evaluates them as the API server does.

const NS = "default";
/** Where the harness's fake clock starts. */
const START = Date.parse("2030-01-01T00:00:00Z");
let pg: PostgresServer;
let backupDir: string;
let harness: ReconcileHarness<PgDatabaseObject> | undefined;
let closeServers: (() => Promise<void>) | undefined;

beforeAll(async () => {
  pg = await new PostgresServer().start();
  backupDir = mkdtempSync(join(tmpdir(), "pgdatabase-unit-"));
});
afterAll(async () => {
  await pg?.stop();
  if (backupDir) rmSync(backupDir, { recursive: true, force: true });
});
afterEach(async () => {
  await harness?.stop();
  await closeServers?.();
  harness = undefined;
  closeServers = undefined;
});

async function start(adminPassword = pg.password): Promise<ReconcileHarness<PgDatabaseObject>> {
  const operator = pgDatabaseControllers({ backupDir, tools: { binDir: pg.binDir } });
  closeServers = operator.close;
  // The server's timestamps (creationTimestamp: where a schedule starts) follow the harness's clock.
  let clock: ReconcileHarness<PgDatabaseObject>["clock"] | undefined;
  const server = new MemoryApiServer({
    resources: [PgDatabase, PgDatabaseBackup],
    now: () => new Date(clock?.now() ?? START),
  });
  harness = await ReconcileHarness.start(operator.pgDatabase, { server });
  clock = harness.clock;
  await harness.client.create(serverSecret(adminPassword));
  return harness;
}

function serverSecret(password: string) {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "pg-admin", namespace: NS },
    stringData: { host: pg.host, port: String(pg.port), username: pg.user, password },
  };
}

function pgDatabase(name: string, spec: Record<string, unknown> = {}): PgDatabaseObject {
  return {
    apiVersion: PgDatabase.apiVersion,
    kind: "PgDatabase",
    metadata: { name, namespace: NS },
    spec: { server: { secretName: "pg-admin" }, ...spec },
  } as PgDatabaseObject;
}

const get = (h: ReconcileHarness<PgDatabaseObject>, name: string) =>
  h.client.get({ type: PgDatabase, namespace: NS, name });
const condition = (object: PgDatabaseObject, type: string) =>
  object.status?.conditions?.find((c) => c.type === type);
const sql = (query: string) => pg.psql(query);
const reasons = (h: ReconcileHarness<PgDatabaseObject>) => h.events.map((e) => `${e.type} ${e.reason}`);

describe("PgDatabase reconciler (in memory, real PostgreSQL)", () => {
  it("creates the database, its owner and login roles, a credentials Secret it owns, and becomes Ready", async () => {
    const h = await start();
    await h.client.create(pgDatabase("orders", { connectionLimit: 7 }));
    const steps = await h.reconcileUntilIdle();
    expect(steps.map((s) => s.key)).toContain("default/orders");
    expect(steps.at(-1)?.result).toBe("requeue_after");
    expect(
      await sql("select pg_get_userbyid(datdba), datconnlimit from pg_database where datname = 'orders'"),
    ).toBe("orders_owner|7");
    expect(await sql("select rolcanlogin from pg_roles where rolname = 'orders_owner_a'")).toBe("t");
    const object = await get(h, "orders");
    expect(object.metadata.finalizers).toContain(FINALIZER);
    expect(condition(object, "Ready")).toMatchObject({
      status: "True",
      reason: "Ready",
      observedGeneration: 1,
    });
    const secret = await h.client.get({ type: Secret, namespace: NS, name: "orders-credentials" });
    expect(secret.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "PgDatabase",
      name: "orders",
      controller: true,
    });
    const credentials = secretValues(secret);
    expect(credentials).toMatchObject({
      database: "orders",
      username: "orders_owner_a",
      port: String(pg.port),
    });
    expect(credentials.password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(reasons(h)).toContain("Normal Created");
  });

  it("says why on Ready=False with an event when the server refuses its credentials, and heals once the Secret is fixed", async () => {
    const h = await start("not-the-password");
    await h.client.create(pgDatabase("billing"));
    const steps = await h.reconcileUntilIdle();
    expect(steps.at(-1)).toEqual({ key: "default/billing", result: "error" });
    const failed = condition(await get(h, "billing"), "Ready");
    expect(failed).toMatchObject({ status: "False", reason: "AuthenticationFailed" });
    expect(failed?.message).not.toContain("not-the-password");
    expect(h.events.find((e) => e.type === "Warning")).toMatchObject({
      regarding: { kind: "PgDatabase", name: "billing" },
      reason: "AuthenticationFailed",
    });
    expect(await sql("select count(*) from pg_database where datname = 'billing'")).toBe("0");
    // The Secret's change wakes the PgDatabases that use it, without waiting for the backoff.
    await h.client.patch(Secret, "pg-admin", { stringData: { password: pg.password } }, { namespace: NS });
    await h.reconcileUntilIdle();
    expect(condition(await get(h, "billing"), "Ready")).toMatchObject({ status: "True", reason: "Ready" });
    expect(await sql("select count(*) from pg_database where datname = 'billing'")).toBe("1");
  });

  it("applies a new connection limit in place, and sets back a limit changed on the server", async () => {
    const h = await start();
    await h.client.create(pgDatabase("stock", { connectionLimit: 5 }));
    await h.reconcileUntilIdle();
    const oid = await sql("select oid from pg_database where datname = 'stock'");
    await h.client.patch(PgDatabase, "stock", { spec: { connectionLimit: 12 } }, { namespace: NS });
    await h.reconcileUntilIdle();
    expect(await sql("select oid, datconnlimit from pg_database where datname = 'stock'")).toBe(`${oid}|12`);
    const object = await get(h, "stock");
    expect(condition(object, "Ready")?.observedGeneration).toBe(2);
    expect(h.events.map((e) => e.note)).toContain('Owner "stock_owner", connection limit 12');
    // Drift: changed out of band, set back at the next resync.
    await sql("alter database stock connection limit 99");
    h.advance(30_000);
    await h.reconcileUntilIdle();
    expect(await sql("select datconnlimit from pg_database where datname = 'stock'")).toBe("12");
    expect(reasons(h)).toContain("Warning DriftCorrected");
    // The database's name, once set, is immutable (a transition rule of the CRD), as on a cluster.
    await h.client.patch(PgDatabase, "stock", { spec: { databaseName: "stock" } }, { namespace: NS });
    await expect(
      h.client.patch(PgDatabase, "stock", { spec: { databaseName: "other" } }, { namespace: NS }),
    ).rejects.toThrow('spec.databaseName: Invalid value: "other": databaseName is immutable');
  });

  it("deletionPolicy Delete drops the database and roles, then lets the object go", async () => {
    const h = await start();
    await h.client.create(pgDatabase("scratch", { deletionPolicy: "Delete" }));
    await h.reconcileUntilIdle();
    await h.client.delete(PgDatabase, "scratch", { namespace: NS });
    await h.reconcileUntilIdle();
    expect(await sql("select count(*) from pg_database where datname = 'scratch'")).toBe("0");
    expect(await sql("select count(*) from pg_roles where rolname like 'scratch_owner%'")).toBe("0");
    await expect(get(h, "scratch")).rejects.toMatchObject({ name: "NotFound" });
    expect(reasons(h)).toContain("Normal Dropped");
  });

  it("deletionPolicy Retain leaves the database on the server and removes only the finalizer", async () => {
    const h = await start();
    await h.client.create(pgDatabase("archive", { deletionPolicy: "Retain" }));
    await h.reconcileUntilIdle();
    await h.client.delete(PgDatabase, "archive", { namespace: NS });
    await h.reconcileUntilIdle();
    await expect(get(h, "archive")).rejects.toMatchObject({ name: "NotFound" });
    expect(await sql("select count(*) from pg_database where datname = 'archive'")).toBe("1");
    expect(reasons(h)).not.toContain("Normal Dropped");
  });

  it("takes a scheduled backup when the fake clock reaches the cron slot, and waits for the next one", async () => {
    const h = await start();
    // The harness's clock starts at 2030-01-01T00:00:00Z; the slot is 03:00 every day.
    await h.client.create(pgDatabase("ledger", { backup: { schedule: "0 3 * * *" } }));
    await h.reconcileUntilIdle();
    const backups = async () =>
      (await h.client.list(PgDatabaseBackup, { namespace: NS })).items.map((b) => b.metadata.name);
    expect(await backups()).toEqual([]);
    // The resync (30 s) comes first; the object stays Ready and takes no backup before the slot.
    h.advance(3 * 60 * 60_000 - 1);
    await h.reconcileUntilIdle();
    expect(await backups()).toEqual([]);
    h.advance(1);
    await h.reconcileUntilIdle();
    const created = await h.client.get({
      type: PgDatabaseBackup,
      namespace: NS,
      name: "ledger-20300101-0300",
    });
    expect(created.metadata.labels?.[SCHEDULED_LABEL]).toBe("true");
    expect(created.spec.database).toBe("ledger");
    expect((await get(h, "ledger")).status?.lastScheduledBackup).toBe("2030-01-01T03:00:00.000Z");
    expect(reasons(h)).toContain("Normal BackupScheduled");
    // One slot, one backup: later reconciles the same day take none.
    h.advance(60 * 60_000);
    await h.reconcileUntilIdle();
    expect(await backups()).toEqual(["ledger-20300101-0300"]);
  });
});
