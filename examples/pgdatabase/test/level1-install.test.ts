import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until, World } from "./harness.ts";

// Level 1, basic install: a PgDatabase becomes a database, an owner role with a generated password,
// and a credentials Secret the app connects with; failures show as Ready=False with a reason and
// an event, retried with backoff, and heal once fixed.

const world = new World();
beforeAll(async () => {
  await world.start();
  await world.startOperator();
});
afterAll(() => world.stop());

describe("Level 1: install", () => {
  it("creates the database, its owner role and a credentials Secret that connects; kubectl shows Ready", async () => {
    await world.namespace("l1");
    await world.pgDatabase("l1", "orders", { extensions: ["pgcrypto"] });
    await until(
      async () => (await world.condition("l1", "orders", "Ready")).status === "True",
      60_000,
      "Ready",
    );
    expect(await world.pg.psql("select datname from pg_database where datname = 'orders'")).toBe("orders");
    expect(
      await world.pg.psql("select pg_get_userbyid(datdba) from pg_database where datname = 'orders'"),
    ).toBe("orders_owner");
    // The owner role owns; the app logs in as one of its two login roles (see Level 2's rotation).
    expect(await world.pg.psql("select rolcanlogin from pg_roles where rolname = 'orders_owner'")).toBe("f");
    expect(
      await world.pg.psql(
        "select r.rolcanlogin from pg_roles r join pg_auth_members m on m.member = r.oid where r.rolname = 'orders_owner_a' and m.roleid = 'orders_owner'::regrole",
      ),
    ).toBe("t");
    const credentials = await world.credentials("l1", "orders");
    expect(credentials).toMatchObject({
      host: "127.0.0.1",
      port: String(world.pg.port),
      database: "orders",
      username: "orders_owner_a",
    });
    expect(credentials.password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const rows = await world.asApp("l1", "orders", async (client) => {
      await client.query("create table items (id serial primary key, name text)");
      // What the app creates belongs to the owner, whichever login it used.
      expect((await client.query("select current_user")).rows[0].current_user).toBe("orders_owner");
      await client.query("insert into items (name) values ('a'), ('b')");
      return (await client.query("select gen_random_uuid() is not null as ok, count(*) from items")).rows[0];
    });
    expect(rows).toEqual({ ok: true, count: "2" });
    expect(
      await world.jsonpath(
        ["-n", "l1", "get", "secret", "orders-credentials"],
        "{.metadata.ownerReferences[0].kind}",
      ),
    ).toBe("PgDatabase");
    const table = await world.k(["-n", "l1", "get", "pgdatabase"]);
    expect(table).toMatch(
      /NAME\s+DATABASE\s+PHASE\s+READY\s+LAST BACKUP\s+AGE\norders\s+orders\s+Ready\s+True/,
    );
    expect(await world.events("l1", "orders")).toEqual(
      expect.arrayContaining([expect.stringMatching(/^Normal Created: Created database "orders"/)]),
    );
  });

  it("keeps the password across reconciles and operator restarts", async () => {
    const before = (await world.credentials("l1", "orders")).password;
    await world.startOperator();
    await world.k(["-n", "l1", "annotate", "pgdatabase", "orders", "touch=1", "--overwrite"]);
    await until(
      async () =>
        (await world.asApp("l1", "orders", async (c) => (await c.query("select 1 as one")).rows[0].one)) ===
        1,
      30_000,
      "the app to connect after a restart",
    );
    expect((await world.credentials("l1", "orders")).password).toBe(before);
  });

  it("reports bad server credentials as Ready=False AuthenticationFailed with an event, and heals when the Secret is fixed", async () => {
    await world.namespace("l1-auth", { password: "wrong" });
    await world.pgDatabase("l1-auth", "billing");
    await until(
      async () => (await world.condition("l1-auth", "billing", "Ready")).reason === "AuthenticationFailed",
      60_000,
      "AuthenticationFailed",
    );
    expect((await world.condition("l1-auth", "billing", "Ready")).status).toBe("False");
    const events = await world.events("l1-auth", "billing");
    expect(events.some((e) => e.startsWith("Warning AuthenticationFailed: The server 127.0.0.1"))).toBe(true);
    // The admin password never reaches events or conditions.
    expect(events.join("\n")).not.toContain(world.pg.password);
    expect(await world.pg.psql("select count(*) from pg_database where datname = 'billing'")).toBe("0");
    await world.serverSecret("l1-auth");
    await until(
      async () => (await world.condition("l1-auth", "billing", "Ready")).status === "True",
      60_000,
      "healed",
    );
    expect(await world.pg.psql("select count(*) from pg_database where datname = 'billing'")).toBe("1");
  });

  it("reports an unreachable server as Ready=False ServerUnreachable", async () => {
    await world.namespace("l1-down", { port: 1 });
    await world.pgDatabase("l1-down", "ledger");
    await until(
      async () => (await world.condition("l1-down", "ledger", "Ready")).reason === "ServerUnreachable",
      60_000,
      "ServerUnreachable",
    );
    const events = await world.events("l1-down", "ledger");
    expect(
      events.some((e) => e.startsWith("Warning ServerUnreachable: The server 127.0.0.1:1 is unreachable")),
    ).toBe(true);
    await world.serverSecret("l1-down");
    await until(
      async () => (await world.condition("l1-down", "ledger", "Ready")).status === "True",
      60_000,
      "healed",
    );
  });

  it("refuses a database another PgDatabase manages, and deleting the refused one drops nothing", async () => {
    await world.pgDatabase("l1", "orders-again", { databaseName: "orders" });
    await until(
      async () => (await world.condition("l1", "orders-again", "Ready")).reason === "AlreadyManaged",
      60_000,
      "AlreadyManaged",
    );
    await world.k(["-n", "l1", "delete", "pgdatabase", "orders-again"]);
    expect(await world.pg.psql("select count(*) from pg_database where datname = 'orders'")).toBe("1");
    expect(await world.pg.psql("select count(*) from pg_roles where rolname = 'orders_owner'")).toBe("1");
    expect((await world.condition("l1", "orders", "Ready")).status).toBe("True");
    expect(await world.k(["-n", "l1", "get", "pgdatabasebackup", "-o", "name"])).toBe("");
  });

  it("refuses names: the API server rejects what is not an identifier, PostgreSQL what it reserves", async () => {
    const bad = await world.kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "db.example.com/v1alpha1",
        kind: "PgDatabase",
        metadata: { name: "bad", namespace: "l1" },
        spec: { server: { secretName: "pg-admin" }, databaseName: "Robert'); DROP TABLE students;--" },
      }),
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("spec.databaseName in body should match");
    await world.pgDatabase("l1", "reserved", { owner: "pg_app" });
    await until(
      async () => (await world.condition("l1", "reserved", "Ready")).reason === "InvalidName",
      60_000,
      "InvalidName",
    );
    expect(await world.pg.psql("select count(*) from pg_database where datname = 'reserved'")).toBe("0");
  });
});

describe("generated manifests", () => {
  it("config/ is what `kubeloop generate` writes from the resources and controllers (not stale)", () => {
    const cli = join(import.meta.dirname, "..", "..", "..", "packages", "kubeloop", "dist", "cli", "main.js");
    const result = spawnSync(process.execPath, [cli, "generate", "--check"], {
      cwd: join(import.meta.dirname, ".."),
      encoding: "utf8",
    });
    expect(result.status, result.stdout + result.stderr).toBe(0);
  });

  it("pass kubeloop check: every CRD field described, spec and status apart, no wildcard RBAC", () => {
    const cli = join(import.meta.dirname, "..", "..", "..", "packages", "kubeloop", "dist", "cli", "main.js");
    const result = spawnSync(process.execPath, [cli, "check"], {
      cwd: join(import.meta.dirname, ".."),
      encoding: "utf8",
    });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain("pass  crd-descriptions");
  });
});
