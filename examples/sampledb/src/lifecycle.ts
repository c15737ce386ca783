import { NotFound, type ReconcileContext } from "kubeloop";
import { Job, PersistentVolumeClaim, StatefulSet } from "kubeloop/k8s";
import { finishedJobsToPrune, jobStatus, removeFinalizer } from "kubeloop/resources";
import { backupFile, backupJob, intervalMs } from "./backup.ts";
import { INSTANCE, labels, names, type SampleDBObject } from "./objects.ts";

type Ctx = ReconcileContext<SampleDBObject>;

/** Held until the deletion policy's work (final backup, volumes removed) is done. */
export const FINALIZER = "seed.example.com/final-backup";
/** On a backup Job: the file it writes. */
const BACKUP_FILE = "seed.example.com/backup-file";

export interface BackupState {
  lastBackup?: string;
  lastBackupFile?: string;
  /** When the next backup is due, from now. */
  nextInMs: number;
}

/**
 * Starts a backup Job when one is due (the schedule's interval after the last one, or after the
 * SampleDB's creation) and none runs; reports the newest completed one.
 */
export async function scheduleBackups(db: SampleDBObject, ctx: Ctx): Promise<BackupState> {
  const { name, namespace } = names(db);
  const every = intervalMs(db.spec.backup?.schedule ?? "24h");
  const jobs = ctx.cache
    .list(Job, { namespace, labels: labels(db) })
    .filter((job) => job.metadata?.annotations?.[BACKUP_FILE]);
  let lastBackup = db.status?.lastBackup;
  let lastBackupFile = db.status?.lastBackupFile;
  for (const job of jobs) {
    const completed = job.status?.completionTime;
    if (jobStatus(job).state !== "Complete" || !completed) continue;
    if (lastBackup && Date.parse(completed) <= Date.parse(lastBackup)) continue;
    lastBackup = completed;
    lastBackupFile = job.metadata?.annotations?.[BACKUP_FILE];
    ctx.event("Normal", "BackupCompleted", `${lastBackupFile} in ${names(db).backups}`);
  }
  // Events are aggregated: a Job that stays failed is one event with a count.
  for (const job of jobs)
    if (jobStatus(job).state === "Failed") ctx.event("Warning", "BackupFailed", jobStatus(job).message);
  const now = ctx.now();
  const since = Date.parse(lastBackup ?? db.metadata?.creationTimestamp ?? now.toISOString());
  let nextInMs = since + every - now.getTime();
  const running = jobs.some((job) => jobStatus(job).state === "Running");
  // Finished backup Jobs (and their pods' logs) are kept as many as the backups.
  for (const job of finishedJobsToPrune(jobs, db.spec.backup?.retention ?? 7))
    await ignoreNotFound(
      ctx.client.delete(Job, job.metadata?.name ?? "", { namespace, propagationPolicy: "Background" }),
    );
  if (nextInMs <= 0 && !running) {
    const file = backupFile(now);
    const jobName = `${name}-backup-${file.replace(".dump", "").toLowerCase()}`;
    await ctx.apply(backupJob(db, jobName, file));
    ctx.event("Normal", "BackupStarted", `Job ${jobName} writes ${file}`);
    nextInMs = every;
  }
  return {
    ...(lastBackup ? { lastBackup } : {}),
    ...(lastBackupFile ? { lastBackupFile } : {}),
    nextInMs: Math.max(nextInMs, 1_000),
  };
}

/**
 * Deletion, per `spec.deletionPolicy`: Snapshot runs a final backup Job and waits for it, then
 * (as Delete) removes the StatefulSet and the data volumes (Delete: the backups too); Retain
 * removes the StatefulSet only. Returns the milliseconds to look again, or 0 once done (the
 * finalizer removed).
 */
export async function finalize(db: SampleDBObject, ctx: Ctx, primaryReady: boolean): Promise<number> {
  const { name, namespace } = names(db);
  const policy = db.spec.deletionPolicy;
  if (policy === "Snapshot") {
    const jobName = `${name}-final-backup`;
    const state = jobStatus(ctx.cache.get(Job, jobName, namespace)).state;
    if (state === "Absent") {
      if (!primaryReady) {
        ctx.event("Warning", "FinalBackupWaiting", "the primary is not ready: the final backup waits for it");
        return 10_000;
      }
      const file = backupFile(ctx.now());
      await ctx.apply(backupJob(db, jobName, file));
      ctx.event("Normal", "FinalBackupStarted", `Job ${jobName} writes ${file}`);
      return 2_000;
    }
    if (state === "Failed") {
      ctx.event(
        "Warning",
        "FinalBackupFailed",
        `Job ${jobName} failed: the SampleDB stays until a backup succeeds (or deletionPolicy is changed)`,
      );
      return 30_000;
    }
    if (state === "Running") return 2_000;
  }
  // Foreground: the StatefulSet goes after its pods, so no instance still runs when we are done.
  if (ctx.cache.get(StatefulSet, name, namespace)) {
    await ignoreNotFound(
      ctx.client.delete(StatefulSet, name, { namespace, propagationPolicy: "Foreground" }),
    );
    return 2_000;
  }
  if (policy === "Delete") {
    // A pod that mounts the backup volume holds it (kubernetes.io/pvc-protection) even once
    // completed, and finished backup Jobs keep theirs for a day: the Jobs and their pods go first.
    const jobs = await ctx.client.list(Job, {
      namespace,
      labelSelector: `${INSTANCE}=${name}`,
      signal: ctx.signal,
    });
    for (const job of jobs.items)
      if (!job.metadata?.deletionTimestamp)
        await ignoreNotFound(
          ctx.client.delete(Job, job.metadata?.name ?? "", { namespace, propagationPolicy: "Background" }),
        );
  }
  if (policy !== "Retain") {
    const claims = await ctx.client.list(PersistentVolumeClaim, {
      namespace,
      labelSelector: `app.kubernetes.io/instance=${name}`,
      signal: ctx.signal,
    });
    const doomed = claims.items.filter(
      (claim) =>
        claim.metadata?.name?.startsWith(`data-${name}-`) ||
        (policy === "Delete" && claim.metadata?.name === names(db).backups),
    );
    for (const claim of doomed)
      if (!claim.metadata?.deletionTimestamp)
        await ignoreNotFound(
          ctx.client.delete(PersistentVolumeClaim, claim.metadata?.name ?? "", { namespace }),
        );
    // A claim goes once no pod uses it (kubernetes.io/pvc-protection): wait for it.
    if (doomed.length > 0) return 2_000;
  }
  ctx.event("Normal", "Deleted", `deletionPolicy ${policy}: done`);
  await removeFinalizer(ctx.client, db, FINALIZER);
  return 0;
}

async function ignoreNotFound(request: Promise<unknown>): Promise<void> {
  try {
    await request;
  } catch (error) {
    if (!(error instanceof NotFound)) throw error;
  }
}
