import { rm } from "node:fs/promises";
import { after, controller, done, finalizer, type ReconcileContext } from "kubeloop";
import { type FinalizerEvent, runOperation } from "kubeloop/controller";
import { Secret } from "kubeloop/k8s";
import type { Clock } from "kubeloop/queue";
import { backupPath, dump } from "./dumps.ts";
import { FINALIZER, namesOf, OPERATOR_NAME, type Shared, serverOf, WAIT_POLL } from "./names.ts";
import { serverVersion } from "./postgres.ts";
import { PgDatabase, PgDatabaseBackup, type PgDatabaseBackupObject } from "./resources.ts";

type Backup = PgDatabaseBackupObject;

/** Dumps tried before a backup is marked Failed (each attempt starts over: dumps are not resumable). */
const BACKUP_ATTEMPTS = 3;

/** The PgDatabaseBackup controller: a backup's dump taken once; deleted, its files go with it. */
export function backupController(shared: Shared, clock: Clock | undefined) {
  const builder = controller(PgDatabaseBackup)
    .named(`${OPERATOR_NAME}-backup`)
    .watches(PgDatabase, () => undefined)
    .watches(Secret, () => undefined);
  if (clock) builder.clock(clock);
  return builder.reconcile((backup, ctx) =>
    finalizer(backup, ctx, FINALIZER, (event) => reconcileBackup(shared, event, ctx), {
      fieldManager: OPERATOR_NAME,
    }),
  );
}

/** A backup's dump, recorded as an operation: attempted up to {@link BACKUP_ATTEMPTS} times, then Failed. */
async function reconcileBackup(shared: Shared, event: FinalizerEvent<Backup>, ctx: ReconcileContext<Backup>) {
  const path = backupPath(shared.backupDir, ctx.namespace ?? "", ctx.name);
  if (event.type === "cleanup") {
    await rm(path, { force: true });
    await rm(`${path}.partial`, { force: true });
    return done();
  }
  const live = event.object;
  const phase = live.status?.phase;
  if (phase === "Completed" || phase === "Failed") return done();
  const db = ctx.cache.get({ type: PgDatabase, namespace: ctx.namespace, name: live.spec.database });
  if (!db) {
    const message = `PgDatabase "${live.spec.database}" does not exist`;
    await ctx.status({ phase: "Failed", message });
    ctx.event("Warning", "BackupFailed", message);
    return done();
  }
  if (!db.status?.created || db.status.restore?.phase === "Running") {
    if (phase !== "Pending")
      await ctx.status({ phase: "Pending", message: "Waiting for the database to be ready" });
    return after(WAIT_POLL);
  }
  const { databaseName } = namesOf(db);
  const server = serverOf(ctx.cache, ctx.namespace, db.spec.server.secretName);
  const labels = { namespace: ctx.namespace ?? "", name: live.spec.database };
  let completed = "";
  // The attempt is recorded Running before the dump; a restart dumps again (to a fresh .partial).
  const outcome = await runOperation({
    record: live.status,
    maxAttempts: BACKUP_ATTEMPTS,
    now: () => ctx.now(),
    save: (status) => ctx.status(status),
    starting: { path, databaseName },
    run: async () => {
      try {
        const version = await shared.servers.with(server, "postgres", serverVersion);
        const begun = performance.now();
        const { sizeBytes, sha256 } = await dump(shared.tools, server, databaseName, path);
        const durationSeconds = Math.round((performance.now() - begun) / 10) / 100;
        completed = `${sizeBytes} bytes in ${durationSeconds}s, sha256 ${sha256.slice(0, 12)}…`;
        return { sizeBytes, sha256, durationSeconds, postgresVersion: version };
      } catch (error) {
        shared.metrics?.backupFailures.inc(labels);
        throw error;
      }
    },
  });
  if (outcome === "completed") ctx.event("Normal", "BackupCompleted", completed);
  if (outcome === "failed")
    ctx.event(
      "Warning",
      "BackupFailed",
      `Gave up after ${BACKUP_ATTEMPTS} attempts: ${live.status?.message ?? ""}`,
    );
  return done();
}
