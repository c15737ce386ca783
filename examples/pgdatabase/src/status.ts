import { type Condition, setCondition } from "kubeloop";
import type { ConditionInput } from "kubeloop/resources";
import type { runSchedules } from "./backups.ts";
import type { applyChanges } from "./changes.ts";
import type { Pass } from "./names.ts";

type Changes = Awaited<ReturnType<typeof applyChanges>>;
type Backups = Awaited<ReturnType<typeof runSchedules>>;

/**
 * Step 4 of a live PgDatabase: what it found, in status and metrics. Ready says the database
 * serves; Degraded and BackupHealthy say whether the backups it would be recovered from are sound.
 */
export async function reportReady({ shared, db, ctx, names }: Pass, changes: Changes, backups: Backups) {
  const { stats, peak, limit, extensions } = changes;
  const { last, lastScheduledBackup, lastVerification } = backups;
  const verificationFailed =
    lastVerification?.result === "Failed" && lastVerification.backup === last?.metadata.name;
  const health = backupHealth(db.spec.backup?.schedule !== undefined, backups, verificationFailed);
  const degraded = health.status === "False";
  const generation = db.metadata.generation;
  const ready = `Database "${names.databaseName}" is ready; credentials in Secret ${names.credentialsSecret}`;
  const conditions = (
    [
      { type: "Ready", status: "True", reason: "Ready", message: ready },
      {
        type: "Degraded",
        status: degraded ? "True" : "False",
        reason: degraded ? health.reason : "AsExpected",
        message: degraded ? "The latest backup cannot be relied on; see BackupHealthy" : "",
      },
      { type: "BackupHealthy", ...health },
    ] as ConditionInput[]
  ).reduce<Condition[]>(
    (all, c) => setCondition(all, { ...c, observedGeneration: generation }),
    db.status?.conditions ?? [],
  );
  const labels = { namespace: ctx.namespace ?? "", name: ctx.name };
  const completed = last?.status?.completedAt ? last.status : undefined;
  const metrics = shared.metrics;
  metrics?.sizeBytes.set(labels, stats.sizeBytes);
  metrics?.connections.set(labels, stats.connections);
  metrics?.connectionLimit.set(labels, limit);
  metrics?.verificationFailed.set(labels, verificationFailed ? 1 : 0);
  if (completed?.completedAt) {
    metrics?.lastBackupTimestamp.set(labels, Date.parse(completed.completedAt) / 1000);
    metrics?.lastBackupDuration.set(labels, completed.durationSeconds ?? 0);
    metrics?.lastBackupSize.set(labels, completed.sizeBytes ?? 0);
  }
  const wasReady = db.status?.phase === "Ready";
  await ctx.status({
    phase: "Ready",
    databaseName: names.databaseName,
    owner: names.owner,
    credentialsSecret: names.credentialsSecret,
    created: true,
    sizeBytes: stats.sizeBytes,
    connections: stats.connections,
    ...peak,
    connectionLimit: limit,
    extensions,
    ...(lastVerification ? { lastVerification } : {}),
    ...(lastScheduledBackup ? { lastScheduledBackup } : {}),
    ...(last && completed?.completedAt
      ? {
          lastBackup: {
            name: last.metadata.name ?? "",
            completedAt: completed.completedAt,
            ...(completed.sizeBytes !== undefined ? { sizeBytes: completed.sizeBytes } : {}),
            ...(completed.durationSeconds !== undefined
              ? { durationSeconds: completed.durationSeconds }
              : {}),
          },
        }
      : {}),
    conditions,
  });
  if (!wasReady) ctx.event("Normal", "Ready", `Database "${names.databaseName}" is ready`);
}

/** BackupHealthy: False when the latest backup failed or its verification did; Unknown before the first one. */
function backupHealth(
  scheduled: boolean,
  { last, lastAttempt, lastVerification }: Backups,
  verificationFailed: boolean,
) {
  if (lastAttempt?.status?.phase === "Failed")
    return {
      status: "False",
      reason: "BackupFailed",
      message: `Backup ${lastAttempt.metadata.name} failed: ${lastAttempt.status.message ?? ""}`,
    };
  if (verificationFailed)
    return {
      status: "False",
      reason: "VerificationFailed",
      message: `Backup ${lastVerification?.backup} failed its verification: ${lastVerification?.message ?? ""}`,
    };
  if (last)
    return {
      status: "True",
      reason: "BackupCompleted",
      message: `Last backup ${last.metadata.name} at ${last.status?.completedAt}`,
    };
  return scheduled
    ? { status: "Unknown", reason: "NoBackupYet", message: "" }
    : { status: "True", reason: "NotScheduled", message: "" };
}
