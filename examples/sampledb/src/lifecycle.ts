import { after, done, NotFound, type ReconcileContext, type ReconcileResult } from "kubeloop";
import { Job, PersistentVolumeClaim, Pod } from "kubeloop/k8s";
import { finishedJobsToPrune, jobStatus } from "kubeloop/resources";
import { backupFile, backupJob, intervalMs } from "./backup.ts";
import { sampleDBChildren } from "./children.ts";
import { isReady } from "./failover.ts";
import { INSTANCE, labels, names, podLabels, type SampleDBObject } from "./objects.ts";

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
 * Snapshot's final backup: a Job started once the primary serves. Undefined once it completed;
 * else when to look again.
 */
async function finalBackup(db: SampleDBObject, ctx: Ctx): Promise<ReconcileResult | undefined> {
  const { name, namespace } = names(db);
  const jobName = `${name}-final-backup`;
  const state = jobStatus(ctx.cache.get({ type: Job, namespace, name: jobName })).state;
  if (state === "Complete") return undefined;
  if (state === "Running") return after("2s");
  if (state === "Failed") {
    ctx.event(
      "Warning",
      "FinalBackupFailed",
      `Job ${jobName} failed: the SampleDB stays until a backup succeeds (or deletionPolicy is changed)`,
    );
    return after("30s");
  }
  const primary = db.status?.primary ?? `${name}-0`;
  const pod = ctx.cache.get({ type: Pod, namespace, name: primary });
  if (!pod || !isReady(pod)) {
    ctx.event("Warning", "FinalBackupWaiting", "the primary is not ready: the final backup waits for it");
    return after("10s");
  }
  const file = backupFile(ctx.now());
  await ctx.apply(backupJob(db, jobName, file));
  ctx.event("Normal", "FinalBackupStarted", `Job ${jobName} writes ${file}`);
  return after("2s");
}

/**
 * Delete's last step: the backup Jobs (a pod that mounts the backup volume holds it, even once
 * completed) and the backup volume. Undefined once they are gone.
 */
async function deleteBackups(db: SampleDBObject, ctx: Ctx): Promise<ReconcileResult | undefined> {
  const { name, namespace, backups } = names(db);
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
  const claim = ctx.cache.get({ type: PersistentVolumeClaim, namespace, name: backups });
  if (!claim) return undefined;
  if (!claim.metadata?.deletionTimestamp)
    await ignoreNotFound(ctx.client.delete(PersistentVolumeClaim, backups, { namespace }));
  // It goes once no pod uses it (kubernetes.io/pvc-protection): wait for it.
  return after("2s");
}

/**
 * The finalizer's cleanup, per `spec.deletionPolicy`: Snapshot takes a final backup first; then
 * the children go in reverse order (the StatefulSet, then the data volumes, waited for until no
 * pod holds them; under Retain the volumes are kept, out of the set) and the instances' pods are
 * waited for; Delete removes the backups too. `done()` lets the finalizer go.
 */
export async function cleanUp(db: SampleDBObject, ctx: Ctx): Promise<ReconcileResult> {
  if (db.status?.phase !== "Deleting") await ctx.status({ phase: "Deleting" });
  const policy = db.spec.deletionPolicy;
  const waiting =
    (policy === "Snapshot" ? await finalBackup(db, ctx) : undefined) ??
    (await sampleDBChildren.cleanup(db, ctx)).result;
  if (waiting.kind !== "done") return waiting;
  // The StatefulSet went in the background: done once no instance runs (under Retain too, whose
  // volumes nothing holds back), so a SampleDB made again with the name never meets the old pods.
  if (ctx.cache.list(Pod, { namespace: names(db).namespace, labels: podLabels(db, "instance") }).length > 0)
    return after("2s");
  const backups = policy === "Delete" ? await deleteBackups(db, ctx) : undefined;
  if (backups) return backups;
  ctx.event("Normal", "Deleted", `deletionPolicy ${policy}: done`);
  return done();
}

async function ignoreNotFound(request: Promise<unknown>): Promise<void> {
  try {
    await request;
  } catch (error) {
    if (!(error instanceof NotFound)) throw error;
  }
}
