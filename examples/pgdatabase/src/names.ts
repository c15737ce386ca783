import { type ReconcileContext, RetryableError } from "kubeloop";
import type { CacheReader } from "kubeloop/controller";
import { Secret } from "kubeloop/k8s";
import { registerSecret, secretValues } from "kubeloop/resources";
import type pg from "pg";
import type { Tools } from "./dumps.ts";
import type { PgDatabaseMetrics } from "./metrics.ts";
import type { ServerAddress, Servers } from "./postgres.ts";
import type { PgDatabaseObject } from "./resources.ts";

/** What both controllers share, and the names one PgDatabase stands for. */

export const OPERATOR_NAME = "pgdatabase-operator";
/** Held by every PgDatabase and PgDatabaseBackup until its cleanup outside the cluster is done. */
export const FINALIZER = "db.example.com/finalizer";
/** On backups: the PgDatabase they belong to (backups outlive it: they are not owned by it). */
export const DATABASE_LABEL = "db.example.com/database";
/** On backups the schedule created: only these are pruned by retention. */
export const SCHEDULED_LABEL = "db.example.com/scheduled";
/** While a database waits on something the operator itself does (a backup), it looks every so often. */
export const WAIT_POLL = "1s";

/** The server connections, the dump tools, the metrics, and which PgDatabases use which server Secret. */
export interface Shared {
  servers: Servers;
  tools: Tools;
  backupDir: string;
  resyncMs: number;
  metrics: PgDatabaseMetrics | undefined;
  /** Server Secret (namespace/name) → the PgDatabases that use it: a change of the Secret reconciles them. */
  users: Map<string, Set<string>>;
}

/** One reconcile of a PgDatabase: the object, its names, its server, and work on the server's maintenance database. */
export interface Pass {
  shared: Shared;
  db: PgDatabaseObject;
  ctx: Ctx;
  names: Names;
  server: ServerAddress;
  admin: <R>(work: (client: pg.ClientBase) => Promise<R>) => Promise<R>;
}

export function passOf(shared: Shared, db: PgDatabaseObject, ctx: Ctx): Pass {
  const server = serverOf(ctx.cache, ctx.namespace, db.spec.server.secretName);
  const admin: Pass["admin"] = (work) => shared.servers.with(server, "postgres", work);
  return { shared, db, ctx, names: namesOf(db), server, admin };
}

export type Names = ReturnType<typeof namesOf>;
export type Status = NonNullable<PgDatabaseObject["status"]>;
export type Ctx = ReconcileContext<PgDatabaseObject>;

/** The names a PgDatabase stands for. */
export function namesOf(db: PgDatabaseObject) {
  const name = db.metadata.name ?? "";
  const databaseName = db.spec.databaseName ?? name.replace(/-/g, "_");
  const owner = (db.spec.owner ?? `${databaseName}_owner`).slice(0, 63);
  return {
    databaseName,
    owner,
    /** The two login roles the app's credentials alternate between (see credentials.ts). */
    logins: [`${owner.slice(0, 61)}_a`, `${owner.slice(0, 61)}_b`] as const,
    credentialsSecret: `${name}-credentials`,
  };
}

/** The server a PgDatabase names, from its Secret (cached); a clear error when it is missing or incomplete. */
export function serverOf(cache: CacheReader, namespace: string | undefined, name: string): ServerAddress {
  const secret = cache.get({ type: Secret, namespace, name });
  if (!secret)
    throw new RetryableError(`Server Secret "${name}" does not exist`, { reason: "ServerSecretMissing" });
  const data = secretValues(secret);
  const missing = ["host", "username", "password"].filter((key) => !data[key]);
  if (missing.length)
    throw new RetryableError(`Server Secret "${name}" lacks ${missing.join(", ")}`, {
      reason: "ServerSecretInvalid",
    });
  const port = Number(data.port ?? "5432");
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new RetryableError(`Server Secret "${name}" has port "${data.port}", not a port number`, {
      reason: "ServerSecretInvalid",
    });
  // The admin password never reaches a log line, an event or a condition.
  const password = registerSecret(data.password ?? "");
  return { host: data.host ?? "", port, username: data.username ?? "", password };
}
