import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../../test/processes.js";
import { isProcessAlive } from "../assets/internal.js";
import { locatePostgres, POSTGRES_BINARIES, PostgresServer, PostgresServerError } from "./postgres.js";

let pg: PostgresServer;

beforeAll(async () => {
  pg = await new PostgresServer().start();
});
afterAll(async () => {
  await pg?.stop();
});

describe("PostgresServer", () => {
  it("accepts the admin role's password on loopback and runs SQL", async () => {
    expect(pg.host).toBe("127.0.0.1");
    expect(pg.port).toBeGreaterThan(0);
    expect(pg.version).toMatch(/^\d+\.\d+/);
    expect(await pg.psql("select 40 + 2")).toBe("42");
    await pg.psql("create database sample");
    await pg.psql("create table t (v int); insert into t values (1), (2)", { database: "sample" });
    expect(await pg.psql("select sum(v) from t", { database: "sample" })).toBe("3");
  });

  it("refuses a wrong password (password authentication, not trust)", () => {
    const result = spawnSync(
      join(pg.binDir, "psql"),
      ["-X", "-At", "-h", pg.host, "-p", String(pg.port), "-U", pg.user, "-d", "postgres", "-c", "select 1"],
      { env: { ...process.env, PGPASSWORD: "wrong" }, encoding: "utf8" },
    );
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("password authentication failed");
  });

  it("ships the clients of its own version (pg_dump, pg_restore) beside the server", () => {
    for (const name of POSTGRES_BINARIES) expect(existsSync(join(pg.binDir, name))).toBe(true);
    const dump = spawnSync(join(pg.binDir, "pg_dump"), ["--version"], { encoding: "utf8" });
    expect(dump.stdout).toContain(pg.version.split(".")[0]);
  });

  it("names what is missing and how to install it when the binaries are not there", () => {
    expect(() => locatePostgres("/nonexistent")).toThrow(PostgresServerError);
    expect(() => locatePostgres("/nonexistent")).toThrow(/lacks postgres, initdb, pg_dump, pg_restore, psql/);
  });

  it("stops its process and removes its folder; a second stop is harmless", async () => {
    const other = await new PostgresServer({ user: "admin", password: "s3cret" }).start();
    const dir = other.dir;
    // The postmaster's pid is the first line of postmaster.pid.
    const pid = Number(readFileSync(join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
    expect(pid).toBeGreaterThan(0);
    expect(other.url("db")).toBe(`postgresql://admin:s3cret@127.0.0.1:${other.port}/db`);
    await other.stop();
    await other.stop();
    expect(existsSync(dir)).toBe(false);
    expect(isProcessAlive(pid)).toBe(false);
  });
});

/** A separate Node process that owns a server; resolves once it is up. */
async function holdServer(mode: "throw" | "wait") {
  const holder = join(import.meta.dirname, "../../../test/scripts/hold-postgres.mjs");
  const child = spawn(process.execPath, [holder, mode], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", () => reject(new Error(`the server's owner exited early:\n${stderr}`)));
  });
  return { child, exited, ...(JSON.parse(first) as { dir: string; pid: number }) };
}

describe("PostgresServer cleanup", () => {
  it("stops the server of a process that dies of an uncaught exception", async () => {
    const held = await holdServer("throw");
    expect(await held.exited).toBe(1);
    expect(await eventually(() => !isProcessAlive(held.pid))).toBe(true);
    expect(existsSync(held.dir)).toBe(false);
  });

  it("stops the server of a process killed with SIGKILL (the watchdog)", async () => {
    const held = await holdServer("wait");
    expect(isProcessAlive(held.pid)).toBe(true);
    held.child.kill("SIGKILL");
    await held.exited;
    expect(await eventually(() => !isProcessAlive(held.pid) && !existsSync(held.dir), 20_000)).toBe(true);
  });
});
