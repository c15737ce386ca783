import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until, World } from "./harness.ts";

// Level 2, seamless upgrades: spec changes applied in place (connection limit, extensions, owner),
// and password rotation with no moment when the credentials Secret holds a login that fails.

const world = new World();
const ns = "l2";

beforeAll(async () => {
  await world.start();
  await world.startOperator();
  await world.namespace(ns);
  await world.pgDatabase(ns, "inventory", { connectionLimit: 20 });
  await until(
    async () => (await world.condition(ns, "inventory", "Ready")).status === "True",
    60_000,
    "Ready",
  );
  await world.asApp(ns, "inventory", async (client) => {
    await client.query("create table stock (sku text primary key, count int)");
    await client.query("insert into stock values ('a', 1), ('b', 2)");
  });
});
afterAll(() => world.stop());

const patch = (spec: Record<string, unknown>) =>
  world.k(["-n", ns, "patch", "pgdatabase", "inventory", "--type=merge", "-p", JSON.stringify({ spec })]);
const sql = (query: string, database = "postgres") => world.pg.psql(query, { database });
const canLogin = async (username: string, password: string) => {
  const client = new pg.Client({
    host: world.pg.host,
    port: world.pg.port,
    user: username,
    password,
    database: "inventory",
  });
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
};

describe("Level 2: seamless upgrades", () => {
  it("changes the connection limit in place", async () => {
    expect(await sql("select datconnlimit from pg_database where datname = 'inventory'")).toBe("20");
    await patch({ connectionLimit: 5 });
    await until(
      async () => (await sql("select datconnlimit from pg_database where datname = 'inventory'")) === "5",
      30_000,
      "limit 5",
    );
    await until(
      async () =>
        (await world.jsonpath(
          ["-n", ns, "get", "pgdatabase", "inventory"],
          "{.status.observedGeneration}",
        )) === (await world.jsonpath(["-n", ns, "get", "pgdatabase", "inventory"], "{.metadata.generation}")),
      30_000,
      "observedGeneration to catch up",
    );
  });

  it("installs added extensions", async () => {
    await patch({ extensions: ["hstore", "pgcrypto"] });
    await until(
      async () =>
        (await sql(
          "select string_agg(extname, ',' order by extname) from pg_extension where extname <> 'plpgsql'",
          "inventory",
        )) === "hstore,pgcrypto",
      30_000,
      "hstore and pgcrypto",
    );
    await until(
      async () =>
        (await world.jsonpath(["-n", ns, "get", "pgdatabase", "inventory"], "{.status.extensions}")) ===
        '["hstore","pgcrypto"]',
      30_000,
      "extensions in status",
    );
  });

  it("changes the owner: the database and its tables move to the new role, the app's credentials follow", async () => {
    await patch({ owner: "stock_keeper" });
    await until(
      async () =>
        (await sql("select pg_get_userbyid(datdba) from pg_database where datname = 'inventory'")) ===
        "stock_keeper",
      30_000,
      "the new owner",
    );
    expect(await sql("select tableowner from pg_tables where tablename = 'stock'", "inventory")).toBe(
      "stock_keeper",
    );
    await until(
      async () => (await world.credentials(ns, "inventory")).username === "stock_keeper_a",
      30_000,
      "new login",
    );
    const rows = await world.asApp(
      ns,
      "inventory",
      async (c) => (await c.query("select count(*)::int as n from stock")).rows[0].n,
    );
    expect(rows).toBe(2);
    await until(
      async () => (await sql("select count(*) from pg_roles where rolname like 'inventory_owner%'")) === "0",
      30_000,
      "old roles dropped",
    );
  });

  it("rotates the password with no moment when the Secret's login fails: the new login first, then the Secret", async () => {
    const before = await world.credentials(ns, "inventory");
    // Someone reading the Secret over and over during the rotation must always be able to log in.
    let failures = 0;
    let reads = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const now = await world.credentials(ns, "inventory");
        reads++;
        if (!(await canLogin(now.username ?? "", now.password ?? ""))) failures++;
      }
    })();
    await patch({ passwordRotation: "2030-01-01T00:00:00Z" });
    await until(
      async () => (await world.credentials(ns, "inventory")).password !== before.password,
      30_000,
      "rotation",
    );
    const atSwitch = reads;
    await until(() => reads >= atSwitch + 2, 30_000, "two more reads after the switch");
    watching = false;
    await watcher;
    expect(reads).toBeGreaterThanOrEqual(2);
    expect(failures).toBe(0);
    const after = await world.credentials(ns, "inventory");
    expect(after.username).toBe("stock_keeper_b");
    expect(await canLogin(after.username ?? "", after.password ?? "")).toBe(true);
    // An app still holding the previous credentials keeps working until the next rotation.
    expect(await canLogin(before.username ?? "", before.password ?? "")).toBe(true);
    expect(
      await world.jsonpath(["-n", ns, "get", "pgdatabase", "inventory"], "{.status.passwordRotation}"),
    ).toBe("2030-01-01T00:00:00Z");
    expect((await world.events(ns, "inventory")).some((e) => e.startsWith("Normal PasswordRotated"))).toBe(
      true,
    );
    // No password in any event.
    expect((await world.events(ns, "inventory")).join("\n")).not.toContain(after.password ?? "-");
    // The next rotation goes back to the first login, now with a new password: the oldest one stops working.
    await patch({ passwordRotation: "2030-02-01T00:00:00Z" });
    await until(
      async () => (await world.credentials(ns, "inventory")).username === "stock_keeper_a",
      30_000,
      "second rotation",
    );
    expect(await canLogin(before.username ?? "", before.password ?? "")).toBe(false);
  });
});
