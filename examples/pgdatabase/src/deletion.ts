import { after, done, type ReconcileResult, RetryableError } from "kubeloop";
import { createBackup } from "./backups.ts";
import { type Ctx, namesOf, type Shared, serverOf, WAIT_POLL } from "./names.ts";
import { dropDatabase, dropRole, readDatabase } from "./postgres.ts";
import { PgDatabaseBackup, type PgDatabaseObject } from "./resources.ts";

/**
 * A PgDatabase's cleanup (its finalizer's), by `deletionPolicy`, one recorded step at a time so a
 * restart resumes: Snapshot (a final backup, waited for), then Drop (the database and its roles),
 * then Done. `after(…)` keeps the finalizer while a step waits; `done()` lets the object go. Only a
 * database this object created (or restored) is ever dropped: never one it was refused.
 */
export async function finalize(shared: Shared, db: PgDatabaseObject, ctx: Ctx): Promise<ReconcileResult> {
  const names = namesOf(db);
  const policy = db.spec.deletionPolicy;
  const owned = db.status?.created === true;
  let step =
    db.status?.deletion?.step ??
    (owned && policy !== "Retain" ? (policy === "Snapshot" ? "Snapshot" : "Drop") : "Done");
  if (step === "Snapshot") {
    const name = db.status?.deletion?.backup ?? `${ctx.name}-final-${(db.metadata.uid ?? "").slice(0, 8)}`;
    const backup = ctx.cache.get({ type: PgDatabaseBackup, namespace: ctx.namespace, name });
    if (!backup) {
      await ctx.status({ phase: "Deleting", deletion: { step, backup: name } });
      await createBackup(ctx.client, db, name, false);
      ctx.event("Normal", "FinalBackup", `Taking backup ${name} before dropping the database`);
      return after(WAIT_POLL);
    }
    if (backup.status?.phase === "Failed")
      throw new RetryableError(
        `The final backup ${name} failed (${backup.status.message ?? ""}); the database is kept. Delete the backup to try again, or set deletionPolicy: Delete`,
        { reason: "FinalBackupFailed" },
      );
    if (backup.status?.phase !== "Completed") return after(WAIT_POLL);
    step = "Drop";
    await ctx.status({ phase: "Deleting", deletion: { step, backup: name } });
  }
  if (step === "Drop") {
    const server = serverOf(ctx.cache, ctx.namespace, db.spec.server.secretName);
    await shared.servers.with(server, "postgres", async (client) => {
      const found = await readDatabase(client, names.databaseName);
      if (found.exists && found.markedBy && found.markedBy !== db.metadata.uid) return; // not ours (any more)
      await dropDatabase(client, names.databaseName);
      for (const role of [...names.logins, names.owner]) await dropRole(client, role);
    });
    ctx.event("Normal", "Dropped", `Dropped database "${names.databaseName}" and role "${names.owner}"`);
    const backup = db.status?.deletion?.backup;
    await ctx.status({ phase: "Deleting", deletion: { step: "Done", ...(backup ? { backup } : {}) } });
  }
  shared.metrics?.forget(ctx.namespace ?? "", ctx.name);
  shared.users.get(`${ctx.namespace}/${db.spec.server.secretName}`)?.delete(ctx.name);
  return done();
}
