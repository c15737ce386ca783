import { after, type ReconcileResult } from "kubeloop";
import type { Client } from "kubeloop/client";
import { cronSchedule, nextRun } from "kubeloop/controller";
import pg from "pg";
import { checkChecksum, restore } from "./dumps.ts";
import { type Ctx, DATABASE_LABEL, type Pass, SCHEDULED_LABEL, type Status } from "./names.ts";
import { dropDatabase } from "./postgres.ts";
import { PgDatabaseBackup, type PgDatabaseBackupObject, type PgDatabaseObject } from "./resources.ts";

/**
 * Step 3 of a live PgDatabase: its backups. The schedule's due slot becomes a PgDatabaseBackup
 * named after it (so a slot is taken once), retention keeps the newest `keep` scheduled ones, and
 * the verification schedule restores the latest into a scratch database. Backups are not owned:
 * they outlive the PgDatabase, so they are not its dependents either. Returns when to look again.
 */
export async function runSchedules(pass: Pass, status: Status) {
  const { shared, db, ctx } = pass;
  const now = ctx.now();
  const since = db.metadata.creationTimestamp ?? now.toISOString();
  const backups = backupsOf(db, ctx);
  const last = latestCompletedBackup(db, ctx);
  let { lastScheduledBackup, lastVerification } = status;
  let wait: ReconcileResult = after(shared.resyncMs);
  const schedule = db.spec.backup?.schedule;
  if (schedule) {
    const state = nextRun(cronSchedule(schedule), { since, last: lastScheduledBackup, now });
    if (state.due) {
      const name = `${ctx.name}-${compactTime(state.due)}`;
      await createBackup(ctx.client, db, name, true);
      ctx.event("Normal", "BackupScheduled", `Backup ${name} for the ${state.due.toISOString()} slot`);
      lastScheduledBackup = state.due.toISOString();
    }
    wait = earlier(wait, state.wait);
    await prune(ctx, db, backups);
  }
  const verifySchedule = db.spec.backup?.verifySchedule;
  if (verifySchedule) {
    const state = nextRun(cronSchedule(verifySchedule), { since, last: lastVerification?.slot, now });
    if (state.due && last) lastVerification = await verify(pass, last, state.due);
    wait = earlier(wait, state.wait);
  }
  return { last, lastAttempt: backups.at(-1), lastScheduledBackup, lastVerification, wait };
}

/**
 * Verifies a backup the only way that proves it: its checksum, then a restore into a scratch
 * database (dropped afterwards, whatever happened). The result goes to status and, when it
 * fails, a Warning event; the BackupHealthy condition shows it.
 */
async function verify({ shared, db, ctx, admin, server }: Pass, backup: PgDatabaseBackupObject, slot: Date) {
  const scratch = `pgdatabase_verify_${(db.metadata.uid ?? "").replace(/-/g, "").slice(0, 12)}`;
  const name = backup.metadata.name ?? "";
  let message = "";
  try {
    await checkChecksum(backup);
    await admin(async (client) => {
      await dropDatabase(client, scratch);
      await client.query(`create database ${pg.escapeIdentifier(scratch)}`);
    });
    await restore(shared.tools, server, scratch, server.username, backup.status?.path ?? "");
  } catch (error) {
    message = (error as Error).message;
  } finally {
    await admin((client) => dropDatabase(client, scratch)).catch(() => {});
  }
  if (message) ctx.event("Warning", "VerificationFailed", `Backup ${name}: ${message}`);
  else ctx.event("Normal", "Verified", `Backup ${name} restores cleanly`);
  return { backup: name, slot: slot.toISOString(), result: message ? "Failed" : "Passed", message };
}

/** A PgDatabase's backups not being deleted, oldest first. */
function backupsOf(db: PgDatabaseObject, ctx: Ctx): PgDatabaseBackupObject[] {
  return ctx.cache
    .list(PgDatabaseBackup, { namespace: ctx.namespace ?? "" })
    .filter((backup) => backup.spec.database === db.metadata.name && !backup.metadata.deletionTimestamp)
    .sort(
      (a, b) =>
        (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
        (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
    );
}

export function latestCompletedBackup(db: PgDatabaseObject, ctx: Ctx) {
  return backupsOf(db, ctx)
    .filter((backup) => backup.status?.phase === "Completed")
    .sort((a, b) => (a.status?.completedAt ?? "").localeCompare(b.status?.completedAt ?? ""))
    .at(-1);
}

/** Keeps the newest `keep` completed scheduled backups; deletes the older ones (their files go too). */
async function prune(ctx: Ctx, db: PgDatabaseObject, backups: PgDatabaseBackupObject[]) {
  const keep = db.spec.backup?.keep ?? 7;
  const scheduled = backups.filter(
    (backup) => backup.metadata.labels?.[SCHEDULED_LABEL] === "true" && backup.status?.phase === "Completed",
  );
  for (const old of scheduled.slice(0, Math.max(0, scheduled.length - keep))) {
    const name = old.metadata.name ?? "";
    await ctx.client.delete(PgDatabaseBackup, name, { namespace: ctx.namespace ?? "" }).catch(() => {});
    ctx.event("Normal", "BackupPruned", `Deleted backup ${name} (keeping ${keep})`);
  }
}

/** Creates a PgDatabaseBackup (idempotent: an existing one of that name is left as it is). */
export async function createBackup(client: Client, db: PgDatabaseObject, name: string, scheduled: boolean) {
  const labels = {
    [DATABASE_LABEL]: db.metadata.name ?? "",
    ...(scheduled ? { [SCHEDULED_LABEL]: "true" } : {}),
  };
  try {
    await client.create({
      apiVersion: PgDatabaseBackup.apiVersion,
      kind: PgDatabaseBackup.kind,
      metadata: { name, namespace: db.metadata.namespace ?? "", labels },
      spec: { database: db.metadata.name ?? "" },
    } as PgDatabaseBackupObject);
  } catch (error) {
    if ((error as { name?: string }).name !== "AlreadyExists") throw error;
  }
}

/** `2030-01-01T03:00:00Z` → `20300101-0300`: backup names sort by their slot. */
function compactTime(time: Date): string {
  const iso = time.toISOString();
  return `${iso.slice(0, 10).replace(/-/g, "")}-${iso.slice(11, 16).replace(":", "")}`;
}

function earlier(a: ReconcileResult, b: ReconcileResult): ReconcileResult {
  const ms = (r: ReconcileResult) => (r.kind === "after" ? r.delayMs : Number.POSITIVE_INFINITY);
  return ms(a) <= ms(b) ? a : b;
}
