import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { quoteLog } from "../errors.js";
import { freePorts } from "../ports.js";
import { ProcessGroup, tempDir } from "../process.js";

/** How a {@link PostgresServer} is set up; every field has a default. */
export interface PostgresServerOptions {
  /** The folder with `postgres`, `initdb`, `pg_dump`, `pg_restore` and `psql`. Default: see {@link locatePostgres}. */
  binDir?: string;
  /** The admin role's name. Default `postgres`. */
  user?: string;
  /** The admin role's password. Default: 24 random characters. */
  password?: string;
  /** `max_connections`. Default 100 (PostgreSQL's). */
  maxConnections?: number;
  /** More server settings, as `-c name=value`. */
  settings?: Record<string, string | number>;
  /** Time allowed for initdb and the first accepted connection. Default 60 s. */
  startTimeoutMs?: number;
  /** Stop the server on SIGINT/SIGTERM/SIGHUP before the process goes (default true). */
  handleSignals?: boolean;
}

/** The binaries a database operator's tests need: the server's and the clients' of one version. */
export const POSTGRES_BINARIES = ["postgres", "initdb", "pg_dump", "pg_restore", "psql"] as const;
/** Where a folder of PostgreSQL binaries can be given explicitly. */
export const POSTGRES_BIN_ENV = "KUBELOOP_POSTGRES_BIN";
/** initdb and a cold start take 1–3 s on an idle machine; a busy 2-core one with other tests needs more. */
export const DEFAULT_POSTGRES_START_TIMEOUT_MS = 60_000;
/** A port taken between our check and the bind makes the start fail; fresh ports fix that. */
const START_ATTEMPTS = 3;
const HOST = "127.0.0.1";
const READY_LINE = /database system is ready to accept connections/;

/** PostgreSQL binaries are missing, or the server could not start or stopped while it ran. */
export class PostgresServerError extends Error {
  override readonly name = "PostgresServerError";
}

/**
 * Finds a folder holding every binary of {@link POSTGRES_BINARIES}: `binDir`, then
 * `$KUBELOOP_POSTGRES_BIN`, then the newest `/usr/lib/postgresql/<major>/bin` (Debian, Ubuntu),
 * then `/usr/pgsql-<major>/bin` (RHEL). Throws a {@link PostgresServerError} that says how to
 * install them when none does.
 */
export function locatePostgres(binDir?: string): string {
  const complete = (dir: string) => POSTGRES_BINARIES.every((name) => existsSync(join(dir, name)));
  const explicit = binDir ?? process.env[POSTGRES_BIN_ENV];
  if (explicit) {
    if (complete(explicit)) return explicit;
    const missing = POSTGRES_BINARIES.filter((name) => !existsSync(join(explicit, name)));
    throw new PostgresServerError(
      `${explicit} (${binDir ? "binDir" : `$${POSTGRES_BIN_ENV}`}) lacks ${missing.join(", ")}: ` +
        `give a folder with all of ${POSTGRES_BINARIES.join(", ")} of one PostgreSQL version.`,
    );
  }
  const candidates = [
    ...versionedDirs("/usr/lib/postgresql", (v) => join("/usr/lib/postgresql", v, "bin")),
    ...versionedDirs("/usr", (v) => join("/usr", v, "bin"), /^pgsql-(\d+)$/),
  ];
  const found = candidates.find(complete);
  if (found) return found;
  throw new PostgresServerError(
    `PostgreSQL's binaries (${POSTGRES_BINARIES.join(", ")}) were not found in /usr/lib/postgresql/*/bin ` +
      `or /usr/pgsql-*/bin. Install them: \`apt-get install postgresql postgresql-client\` on Debian or ` +
      `Ubuntu (\`npm test\` does this itself when it runs as root), or set ${POSTGRES_BIN_ENV} to a folder ` +
      "that holds them.",
  );
}

/** Subfolders of `parent` named by a major version, newest first. */
function versionedDirs(parent: string, path: (name: string) => string, pattern = /^(\d+)$/): string[] {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return [];
  }
  return names
    .map((name) => ({ name, major: Number(pattern.exec(name)?.[1] ?? Number.NaN) }))
    .filter((entry) => Number.isFinite(entry.major))
    .sort((a, b) => b.major - a.major)
    .map((entry) => path(entry.name));
}

/**
 * A real PostgreSQL server on loopback, for tests of operators that manage databases: `initdb` in a
 * temporary folder, a free port on 127.0.0.1, password (SCRAM) authentication for an admin role,
 * and the same guarantees as the control plane: `stop()` ends it and removes its files, and so do
 * an exception, `process.exit()`, a signal, and (through a watchdog) a SIGKILL of the owner.
 *
 * The binaries are the machine's PostgreSQL (Debian's `postgresql` and `postgresql-client`
 * packages, which `npm test` installs when they are missing), not an npm package: the npm builds
 * ship only the server (`postgres`, `initdb`, `pg_ctl`), and an operator that backs databases up
 * needs `pg_dump` and `pg_restore` of the same major version, which Debian ships beside it.
 *
 * @example
 * ```ts
 * import { PostgresServer } from "kubeloop/testing/servers";
 *
 * const pg = await new PostgresServer().start();
 * try {
 *   const version = await pg.psql("select version()"); // your code connects to pg.url()
 * } finally {
 *   await pg.stop();
 * }
 * ```
 */
export class PostgresServer {
  /** The admin role (a superuser): {@link PostgresServerOptions.user}. */
  readonly user: string;
  /** The admin role's password: {@link PostgresServerOptions.password}, or a random one. */
  readonly password: string;
  private readonly options: PostgresServerOptions;
  private bin: string | undefined;
  private dirPath: string | undefined;
  private portNumber: number | undefined;
  private serverVersion: string | undefined;
  private group: ProcessGroup | undefined;
  private runAs: { uid: number; gid: number } | undefined;
  private started = false;

  constructor(options: PostgresServerOptions = {}) {
    this.options = options;
    this.user = options.user ?? "postgres";
    this.password = options.password ?? randomBytes(18).toString("base64url");
  }

  /** The folder of the binaries this server runs (pass it on to code that runs `pg_dump`). */
  get binDir(): string {
    return this.require(this.bin, "binDir");
  }

  /** `127.0.0.1`: the server listens on loopback only. */
  get host(): string {
    return HOST;
  }

  /** The free port it was started on. */
  get port(): number {
    return this.require(this.portNumber, "port");
  }

  /** The server's version, e.g. `15.18`. */
  get version(): string {
    return this.require(this.serverVersion, "version");
  }

  /** The server's folder (data, socket, log). */
  get dir(): string {
    return this.require(this.dirPath, "dir");
  }

  /** The server's log file. */
  get logPath(): string {
    return join(this.dir, "postgres.log");
  }

  /** `postgresql://user:password@127.0.0.1:port/database` for the admin role. */
  url(database = "postgres"): string {
    return `postgresql://${encodeURIComponent(this.user)}:${encodeURIComponent(this.password)}@${HOST}:${this.port}/${encodeURIComponent(database)}`;
  }

  /** Runs `initdb` and the server, and resolves once it accepts connections. */
  async start(): Promise<this> {
    if (this.started) throw new PostgresServerError("This PostgreSQL server was already started");
    this.started = true;
    this.bin = locatePostgres(this.options.binDir);
    this.runAs = unprivilegedUser();
    const dir = tempDir("kubeloop-pg-");
    this.dirPath = dir;
    // The pid file sits beside the folder, which belongs to the server's user.
    const group = new ProcessGroup({
      pidFile: `${dir}.pids`,
      removeOnOrphan: [dir],
      handleSignals: this.options.handleSignals ?? true,
      removeFiles: () => rmSync(dir, { recursive: true, force: true }),
    });
    this.group = group;
    try {
      this.own(dir);
      await this.initdb();
      await group.startRetryingPortClashes(START_ATTEMPTS, () => this.startOnce(group));
      this.serverVersion = (await this.psql("show server_version")).split(" ")[0];
    } catch (error) {
      await this.stop();
      throw error;
    }
    return this;
  }

  /**
   * Runs SQL with `psql` as the admin role and returns what it printed, unaligned and without
   * headers (`-At`): one row a line, columns separated by `|`. Throws with psql's message on error.
   */
  async psql(sql: string, options: { database?: string } = {}): Promise<string> {
    const args = ["-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", HOST, "-p", String(this.port)];
    args.push("-U", this.user, "-d", options.database ?? "postgres", "-c", sql);
    const { stdout } = await run(join(this.binDir, "psql"), args, { PGPASSWORD: this.password });
    return stdout.replace(/\n$/, "");
  }

  /** Ends the server (fast shutdown: open sessions are cut) and removes its files. Safe to call twice. */
  async stop(): Promise<void> {
    await this.group?.close();
  }

  /** `stop()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private async initdb(): Promise<void> {
    const pwfile = join(this.dir, "pwfile");
    writeFileSync(pwfile, `${this.password}\n`, { mode: 0o600 });
    this.own(pwfile);
    const args = [
      "-D",
      join(this.dir, "data"),
      "-U",
      this.user,
      `--pwfile=${pwfile}`,
      "--auth=scram-sha-256",
    ];
    // The C locale and UTF-8: the same on every machine, whatever its LANG.
    args.push("--no-locale", "--encoding=UTF8", "--no-sync");
    try {
      await run(join(this.binDir, "initdb"), args, {}, this.runAs, this.options.startTimeoutMs);
    } finally {
      rmSync(pwfile, { force: true });
    }
  }

  private async startOnce(group: ProcessGroup): Promise<void> {
    const [port] = (await freePorts(1)) as [number];
    this.portNumber = port;
    const socketDir = join(this.dir, "socket");
    mkdirSync(socketDir, { recursive: true });
    this.own(socketDir);
    const settings: Record<string, string | number> = {
      listen_addresses: HOST,
      port,
      unix_socket_directories: socketDir,
      max_connections: this.options.maxConnections ?? 100,
      // Test data is disposable: skipping fsync makes every write several times faster.
      fsync: "off",
      synchronous_commit: "off",
      full_page_writes: "off",
      ...this.options.settings,
    };
    const args = ["-D", join(this.dir, "data")];
    for (const [name, value] of Object.entries(settings)) args.push("-c", `${name}=${value}`);
    const logPath = this.logPath;
    if (existsSync(logPath)) rmSync(logPath);
    const server = group.spawn({
      name: "postgres",
      binary: join(this.binDir, "postgres"),
      args,
      logPath,
      cwd: this.dir,
      // SIGTERM would wait for every client to disconnect; SIGINT ends their sessions.
      stopSignal: "SIGINT",
      ...(this.runAs ?? {}),
    });
    await group.waitUntil("PostgreSQL to accept connections", async () => READY_LINE.test(server.tail(60)), {
      timeoutMs: this.options.startTimeoutMs ?? DEFAULT_POSTGRES_START_TIMEOUT_MS,
      failure: (dead) => new PostgresServerError(dead.describeFailure("starting")),
    });
  }

  /** PostgreSQL refuses to run as root: the files go to the unprivileged user it runs as. */
  private own(path: string): void {
    if (this.runAs) chownSync(path, this.runAs.uid, this.runAs.gid);
  }

  private require<V>(value: V | undefined, what: string): V {
    if (value === undefined) throw new PostgresServerError(`${what} is known once start() has resolved`);
    return value;
  }
}

/**
 * When we are root, the user PostgreSQL runs as: `postgres` (Debian's package creates it), else
 * `nobody`. Undefined when we are not root (the server runs as us).
 */
function unprivilegedUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  let passwd = "";
  try {
    passwd = readFileSync("/etc/passwd", "utf8");
  } catch {
    // No passwd file: fall through to nobody's conventional ids.
  }
  const entries = passwd.split("\n").map((line) => line.split(":"));
  const entry = entries.find((e) => e[0] === "postgres") ?? entries.find((e) => e[0] === "nobody");
  return entry ? { uid: Number(entry[2]), gid: Number(entry[3]) } : { uid: 65534, gid: 65534 };
}

/** Runs a PostgreSQL tool to its end; throws with its output when it fails. */
function run(
  binary: string,
  args: string[],
  env: Record<string, string>,
  runAs?: { uid: number; gid: number },
  timeoutMs = DEFAULT_POSTGRES_START_TIMEOUT_MS,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      binary,
      args,
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, ...(runAs ?? {}) },
      (error, stdout, stderr) => {
        if (!error) return resolve({ stdout, stderr });
        const output = `${stderr}${stdout}`.trim();
        reject(
          new PostgresServerError(
            `${binary} ${args[0] ?? ""}… failed (${error.code ?? error.signal ?? error.message})` +
              (output ? `:\n${quoteLog(output)}` : ""),
          ),
        );
      },
    );
  });
}
