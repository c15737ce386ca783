import { RetryableError } from "kubeloop";
import pg from "pg";

/**
 * What the operator does on a PostgreSQL server, in SQL. Every identifier and literal goes through
 * pg's escapeIdentifier/escapeLiteral (never string formatting of user input), and every failure
 * becomes a RetryableError whose reason says what kind it is (the Ready condition shows it) and
 * whose message names the server but never a password.
 */

export interface ServerAddress {
  host: string;
  port: number;
  username: string;
  password: string;
}

const { escapeIdentifier: ident, escapeLiteral: literal } = pg;

/** The database the operator connects to for server-wide work (PostgreSQL's default one). */
const MAINTENANCE_DATABASE = "postgres";
/** How long to wait for a server that does not answer before calling it unreachable. */
const CONNECT_TIMEOUT_MS = 5_000;
/** Connections kept per server: reconciles of many databases on one server share them. */
const POOL_SIZE = 4;
/** Idle connections close after this, so a server the operator stopped using is let go. */
const IDLE_TIMEOUT_MS = 10_000;
/** The comment that marks a database as this object's: no other PgDatabase may take or drop it. */
const MARKER_PREFIX = "pgdatabase:";

/**
 * A connection the server ends between two queries (a restart, `drop database … with (force)`)
 * emits "error" outside any query; unheard, Node would end the operator. The next query on it
 * fails and reports the error where the work can retry it.
 */
function ignoreIdleError(): void {}

/** Pools per server and admin role (a changed password gets a new pool; the old one is ended). */
export class Servers {
  private readonly pools = new Map<string, { pool: pg.Pool; password: string }>();

  /** Runs `work` with an admin connection to `database` on the server. */
  async with<R>(
    server: ServerAddress,
    database: string,
    work: (client: pg.ClientBase) => Promise<R>,
  ): Promise<R> {
    // Pooled: the maintenance database, where nearly all the work happens. A database's own
    // connection (extensions, ownership) is opened for the job and closed: pools per database
    // would hold a connection per PgDatabase and exhaust the server's max_connections.
    if (database !== MAINTENANCE_DATABASE) return this.once(server, database, work);
    const pool = this.pool(server, database);
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw classify(error, server);
    }
    client.on("error", ignoreIdleError);
    let broken: unknown;
    try {
      return await work(client);
    } catch (error) {
      broken = error;
      throw classify(error, server);
    } finally {
      client.removeListener("error", ignoreIdleError);
      client.release(broken instanceof Error ? broken : undefined); // a failed connection is not reused
    }
  }

  private async once<R>(
    server: ServerAddress,
    database: string,
    work: (client: pg.ClientBase) => Promise<R>,
  ) {
    const client = new pg.Client({
      host: server.host,
      port: server.port,
      user: server.username,
      password: server.password,
      database,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    client.on("error", ignoreIdleError);
    try {
      await client.connect();
      return await work(client);
    } catch (error) {
      throw classify(error, server);
    } finally {
      await client.end().catch(() => {});
    }
  }

  /** Whether `username`/`password` can log in to `database` (a fresh connection, not pooled). */
  async canLogin(
    server: ServerAddress,
    database: string,
    username: string,
    password: string,
  ): Promise<boolean> {
    const client = new pg.Client({
      host: server.host,
      port: server.port,
      user: username,
      password,
      database,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    client.on("error", ignoreIdleError);
    try {
      await client.connect();
      await client.query("select 1");
      return true;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "28P01" || code === "28000" || code === "3D000") return false; // bad password, no role, no database
      throw classify(error, server);
    } finally {
      await client.end().catch(() => {});
    }
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map(({ pool }) => pool.end().catch(() => {})));
  }

  private pool(server: ServerAddress, database: string): pg.Pool {
    const key = `${server.username}@${server.host}:${server.port}/${database}`;
    const known = this.pools.get(key);
    if (known && known.password === server.password) return known.pool;
    if (known) void known.pool.end().catch(() => {});
    const pool = new pg.Pool({
      host: server.host,
      port: server.port,
      user: server.username,
      password: server.password,
      database,
      max: POOL_SIZE,
      idleTimeoutMillis: IDLE_TIMEOUT_MS,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    // A server restart breaks idle connections; the next checkout gets a fresh one.
    pool.on("error", ignoreIdleError);
    this.pools.set(key, { pool, password: server.password });
    return pool;
  }
}

/** Turns a pg or network error into a RetryableError with a reason; the message has no secret. */
export function classify(error: unknown, server: ServerAddress): Error {
  if (error instanceof RetryableError) return error;
  const e = error as { code?: string; message?: string };
  const where = `${server.host}:${server.port}`;
  const message = e.message ?? String(error);
  switch (e.code) {
    case "28P01":
    case "28000":
      return new RetryableError(
        `The server ${where} refused the admin credentials of user "${server.username}": fix the server Secret`,
        { reason: "AuthenticationFailed", cause: error },
      );
    case "ECONNREFUSED":
    case "ENOTFOUND":
    case "EHOSTUNREACH":
    case "ETIMEDOUT":
    case "EAI_AGAIN":
      return new RetryableError(`The server ${where} is unreachable (${e.code}): ${message}`, {
        reason: "ServerUnreachable",
        cause: error,
      });
    case "42939": // reserved_name, e.g. a role named pg_*
    case "42602": // invalid_name
    case "42622": // name_too_long
      return new RetryableError(`PostgreSQL on ${where} rejects a name: ${message}`, {
        reason: "InvalidName",
        cause: error,
      });
    case "42501":
      return new RetryableError(`The admin role lacks a privilege on ${where}: ${message}`, {
        reason: "InsufficientPrivilege",
        cause: error,
      });
    default:
      if (/timeout|terminated unexpectedly|Connection terminated/i.test(message))
        return new RetryableError(`The server ${where} did not answer: ${message}`, {
          reason: "ServerUnreachable",
          cause: error,
        });
      return new RetryableError(`PostgreSQL on ${where}: ${message}`, {
        reason: "DatabaseError",
        cause: error,
      });
  }
}

export interface DatabaseState {
  exists: boolean;
  /** The marker comment's owner uid, when the database carries one. */
  markedBy: string | undefined;
  owner: string | undefined;
  connectionLimit: number | undefined;
}

export async function readDatabase(client: pg.ClientBase, name: string): Promise<DatabaseState> {
  const result = await client.query<{ owner: string; datconnlimit: number; comment: string | null }>(
    `select pg_get_userbyid(datdba) as owner, datconnlimit, shobj_description(oid, 'pg_database') as comment
       from pg_database where datname = $1`,
    [name],
  );
  const row = result.rows[0];
  if (!row) return { exists: false, markedBy: undefined, owner: undefined, connectionLimit: undefined };
  const marker = row.comment?.startsWith(MARKER_PREFIX) ? row.comment.slice(MARKER_PREFIX.length) : undefined;
  return { exists: true, markedBy: marker, owner: row.owner, connectionLimit: row.datconnlimit };
}

export async function roleExists(client: pg.ClientBase, role: string): Promise<boolean> {
  const result = await client.query("select 1 from pg_roles where rolname = $1", [role]);
  return result.rowCount === 1;
}

/** The owner role: it owns the database and its objects, and nobody logs in as it. */
export async function ensureOwnerRole(client: pg.ClientBase, owner: string): Promise<void> {
  if (!(await roleExists(client, owner))) await client.query(`create role ${ident(owner)} nologin`);
}

/**
 * A login role of the owner: a member of it, whose sessions act as it (`set role`), so what the
 * app creates is owned by the owner whichever login it used. Sets its password.
 */
export async function ensureLoginRole(
  client: pg.ClientBase,
  login: string,
  owner: string,
  password: string,
): Promise<"created" | "updated"> {
  const exists = await roleExists(client, login);
  await client.query(
    `${exists ? "alter" : "create"} role ${ident(login)} with login password ${literal(password)}`,
  );
  await client.query(`grant ${ident(owner)} to ${ident(login)}`);
  await client.query(`alter role ${ident(login)} set role = ${literal(owner)}`);
  return exists ? "updated" : "created";
}

/** Gives everything `from` owns in the connected database to `to`. */
export async function reassignOwned(client: pg.ClientBase, from: string, to: string): Promise<void> {
  if (await roleExists(client, from)) await client.query(`reassign owned by ${ident(from)} to ${ident(to)}`);
}

/** Creates the database, owned by `owner`, marked as managed by `uid`. */
export async function createDatabase(
  client: pg.ClientBase,
  name: string,
  owner: string,
  connectionLimit: number,
  uid: string,
): Promise<void> {
  await client.query(
    `create database ${ident(name)} with owner ${ident(owner)} connection limit ${Math.trunc(connectionLimit)}`,
  );
  await markDatabase(client, name, uid);
}

export async function markDatabase(client: pg.ClientBase, name: string, uid: string): Promise<void> {
  await client.query(`comment on database ${ident(name)} is ${literal(MARKER_PREFIX + uid)}`);
}

export async function alterDatabase(
  client: pg.ClientBase,
  name: string,
  changes: { owner?: string; connectionLimit?: number },
): Promise<void> {
  if (changes.owner !== undefined)
    await client.query(`alter database ${ident(name)} owner to ${ident(changes.owner)}`);
  if (changes.connectionLimit !== undefined)
    await client.query(
      `alter database ${ident(name)} with connection limit ${Math.trunc(changes.connectionLimit)}`,
    );
}

/** Drops the database, ending its sessions first (PostgreSQL 13+: WITH (FORCE)). */
export async function dropDatabase(client: pg.ClientBase, name: string): Promise<void> {
  await client.query(`drop database if exists ${ident(name)} with (force)`);
}

export async function dropRole(client: pg.ClientBase, role: string): Promise<void> {
  await client.query(`drop role if exists ${ident(role)}`);
}

/** Extensions installed in the connected database (plpgsql, which every database has, left out). */
export async function installedExtensions(client: pg.ClientBase): Promise<string[]> {
  const result = await client.query<{ extname: string }>(
    "select extname from pg_extension where extname <> 'plpgsql' order by extname",
  );
  return result.rows.map((row) => row.extname);
}

export async function createExtension(client: pg.ClientBase, name: string): Promise<void> {
  await client.query(`create extension if not exists ${ident(name)}`);
}

export async function databaseStats(
  client: pg.ClientBase,
  name: string,
): Promise<{ sizeBytes: number; connections: number }> {
  const result = await client.query<{ size: string; connections: string }>(
    `select pg_database_size($1) as size,
            (select count(*) from pg_stat_activity where datname = $1 and usename <> current_user) as connections`,
    [name],
  );
  const row = result.rows[0];
  return { sizeBytes: Number(row?.size ?? 0), connections: Number(row?.connections ?? 0) };
}

export async function serverVersion(client: pg.ClientBase): Promise<string> {
  const result = await client.query<{ server_version: string }>("show server_version");
  return (result.rows[0]?.server_version ?? "").split(" ")[0] ?? "";
}
