import { RetryableError } from "kubeloop";
import { latestCompletedBackup } from "./backups.ts";
import { credentials } from "./credentials.ts";
import { checkChecksum, restore } from "./dumps.ts";
import type { Pass, Status } from "./names.ts";
import * as sql from "./postgres.ts";
import { PgDatabaseBackup } from "./resources.ts";

type Source = { backup: string; reason: "Requested" | "Recovery" };

/**
 * Step 1 of a live PgDatabase: the owner role, the credentials, and the database — adopted when it
 * exists unmarked, created, restored from a backup (`spec.restoreFrom`), or recovered from the
 * latest backup when it vanished from the server after this object created it.
 */
export async function ensureDatabase(pass: Pass): Promise<{ status: Status; existed: boolean }> {
  const { db, ctx, names, admin, server } = pass;
  const uid = db.metadata.uid ?? "";
  const found = await admin(async (client) => {
    const found = await sql.readDatabase(client, names.databaseName);
    if (found.exists && found.markedBy && found.markedBy !== uid)
      throw new RetryableError(
        `Database "${names.databaseName}" on ${server.host}:${server.port} is managed by another PgDatabase (uid ${found.markedBy}); choose another databaseName`,
        { reason: "AlreadyManaged" },
      );
    await sql.ensureOwnerRole(client, names.owner);
    return found;
  });
  let status = db.status ?? {};
  const rotation = await credentials(pass);
  if (rotation !== undefined) status = (await ctx.status({ passwordRotation: rotation })).status ?? {};
  const existed = found.exists;
  if (existed && status.restore?.phase !== "Running") {
    if (!found.markedBy) {
      await admin((client) => sql.markDatabase(client, names.databaseName, uid));
      const message = `Database "${names.databaseName}" existed; it is now managed by this PgDatabase`;
      ctx.event("Normal", "Adopted", message);
    }
    return { status, existed };
  }
  const source = sourceOf(pass, status);
  if (source) return { status: await restoreFrom(pass, source), existed };
  status = (await ctx.status({ phase: "Creating" })).status ?? {};
  await admin((client) =>
    sql.createDatabase(client, names.databaseName, names.owner, db.spec.connectionLimit, uid),
  );
  ctx.event("Normal", "Created", `Created database "${names.databaseName}" owned by "${names.owner}"`);
  return { status, existed };
}

/** The backup to restore: a restore under way, a recovery of a database gone missing, or the one asked for. */
function sourceOf({ db, ctx, names }: Pass, status: Status): Source | undefined {
  if (status.restore?.phase === "Running") {
    const reason = status.restore.reason === "Recovery" ? "Recovery" : "Requested";
    return status.restore.backup ? { backup: status.restore.backup, reason } : undefined;
  }
  if (status.created === true) {
    const backup = latestCompletedBackup(db, ctx)?.metadata.name;
    const how = backup ? ` from backup ${backup}` : " empty (no completed backup)";
    ctx.event(
      "Warning",
      "DatabaseMissing",
      `Database "${names.databaseName}" is gone from the server; recreating it${how}`,
    );
    return backup ? { backup, reason: "Recovery" } : undefined;
  }
  const requested = db.spec.restoreFrom?.backup;
  return requested ? { backup: requested, reason: "Requested" } : undefined;
}

/** Restores a backup into a fresh database: dropped first if a previous attempt left one half-done. */
async function restoreFrom({ shared, db, ctx, names, admin, server }: Pass, source: Source): Promise<Status> {
  const backup = ctx.cache.get({ type: PgDatabaseBackup, namespace: ctx.namespace, name: source.backup });
  const path = backup?.status?.phase === "Completed" ? backup.status.path : undefined;
  if (!backup || !path)
    throw new RetryableError(
      `Backup "${source.backup}" is not a completed PgDatabaseBackup in this namespace`,
      {
        reason: "BackupNotReady",
      },
    );
  const phase = source.reason === "Recovery" ? "Recovering" : "Restoring";
  // State first: a restart in the middle finds "Running" and starts the restore over.
  const running = { ...source, phase: "Running", startedAt: ctx.now().toISOString() };
  await ctx.status(
    { phase, restore: running },
    { ready: { status: false, reason: phase, message: `Restoring backup ${source.backup}` } },
  );
  await checkChecksum(backup);
  await admin(async (client) => {
    await sql.dropDatabase(client, names.databaseName);
    await sql.createDatabase(
      client,
      names.databaseName,
      names.owner,
      db.spec.connectionLimit,
      db.metadata.uid ?? "",
    );
  });
  await restore(shared.tools, server, names.databaseName, names.owner, path);
  const event = source.reason === "Recovery" ? "Recovered" : "Restored";
  ctx.event("Normal", event, `Restored from backup ${source.backup}`);
  return (await ctx.status({ restore: { ...source, phase: "Completed" } })).status ?? {};
}
