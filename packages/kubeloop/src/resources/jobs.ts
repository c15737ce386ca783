import type { batch } from "../k8s/index.js";

type Job = batch.Job;

/**
 * Where a Job stands, for operators that run one-shot work (an initialisation, a backup, a
 * migration) as Jobs and act on the result. It reads the Job controller's terminal conditions,
 * as `kubectl wait --for=condition=complete` does: `Complete` or `Failed` with status True; since
 * Kubernetes 1.31 the controller first sets `SuccessCriteriaMet` / `FailureTarget` while its pods
 * terminate, which count as still `Running` (the pods may still write).
 *
 * @example
 * ```ts
 * import { jobStatus } from "kubeloop/resources";
 *
 * const backup = jobStatus(ctx.cache.get({ type: Job, namespace, name: `${name}-backup` }));
 * if (backup.state === "Absent") await ctx.apply(backupJob(db));
 * if (backup.state === "Failed") ctx.event("Warning", "BackupFailed", backup.message);
 * ```
 */

export type JobState = "Absent" | "Running" | "Complete" | "Failed";

/** How a Job stands, with a message ready for an event or a condition. */
export interface JobStatus {
  state: JobState;
  /** The Job controller's reason when it failed (`BackoffLimitExceeded`, `DeadlineExceeded`, …). */
  reason: string;
  message: string;
  /** When it completed (RFC 3339), for `Complete`. */
  completionTime?: string;
}

/** Reads a Job's state (see the module comment). Pure. */
export function jobStatus(job: Job | undefined): JobStatus {
  if (!job) return { state: "Absent", reason: "NotCreated", message: "the Job does not exist yet" };
  const name = job.metadata?.name ?? "";
  const condition = (type: string) =>
    job.status?.conditions?.find((c) => c.type === type && c.status === "True");
  const complete = condition("Complete");
  if (complete)
    return {
      state: "Complete",
      reason: complete.reason || "Completed",
      message: `Job ${name} completed`,
      ...(job.status?.completionTime ? { completionTime: job.status.completionTime } : {}),
    };
  const failed = condition("Failed");
  if (failed)
    return {
      state: "Failed",
      reason: failed.reason || "Failed",
      message: `Job ${name} failed${failed.message ? `: ${failed.message}` : ""}`,
    };
  const active = job.status?.active ?? 0;
  const failures = job.status?.failed ?? 0;
  return {
    state: "Running",
    reason: active > 0 ? "PodsActive" : "PodsPending",
    message: `Job ${name}: ${active} pod(s) active, ${failures} failed attempt(s)`,
  };
}

/**
 * The finished Jobs beyond the newest `keep` (by completion or creation time), to delete: a
 * retention of finished work that stays readable (its pods' logs) for a while. Running Jobs are
 * never returned.
 */
export function finishedJobsToPrune(jobs: readonly Job[], keep: number): Job[] {
  const finished = jobs.filter((job) => {
    const state = jobStatus(job).state;
    return state === "Complete" || state === "Failed";
  });
  const when = (job: Job) =>
    Date.parse(job.status?.completionTime ?? job.metadata?.creationTimestamp ?? "") || 0;
  return finished.sort((a, b) => when(b) - when(a)).slice(Math.max(keep, 0));
}
