import type { Deployment } from "kubernetes-types/apps/v1.js";

/**
 * Where a Deployment's rollout stands, read from the Deployment controller's own signals, the way
 * `kubectl rollout status` reads them (kubectl's DeploymentStatusViewer):
 *
 * - nothing is trusted until `status.observedGeneration` has caught up with `metadata.generation`:
 *   before that, the conditions describe the previous template (`Pending`);
 * - `Progressing=False` with reason `ProgressDeadlineExceeded` is a failed rollout (`Failed`); the
 *   Deployment controller never rolls back by itself, so the caller decides what to do;
 * - otherwise the rollout is `Progressing` until every desired replica is updated, the old ones are
 *   gone, and every updated replica is available (`Complete`).
 *
 * @example
 * ```ts
 * import { rolloutStatus } from "kubeloop/resources";
 *
 * const rollout = rolloutStatus(ctx.cache.get({ type: Deployment, namespace, name }));
 * if (rollout.state === "Failed") {
 *   // apply the last template that was healthy, record it, warn
 * }
 * ```
 */

export type RolloutState = "Pending" | "Progressing" | "Complete" | "Failed";

/** How a rollout stands, with a reason and message ready for a condition. */
export interface RolloutStatus {
  state: RolloutState;
  /** CamelCase, for a condition's reason: `ObservedGenerationBehind`, `ReplicasUpdating`, `ProgressDeadlineExceeded`, … */
  reason: string;
  /** For people: what the rollout is waiting for, or why it failed. */
  message: string;
  desired: number;
  updated: number;
  available: number;
}

/** The Deployment controller's reason when `progressDeadlineSeconds` passed without progress. */
export const PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded";

/** Reads a Deployment's rollout (see the module comment). Pure. */
export function rolloutStatus(deployment: Deployment | undefined): RolloutStatus {
  const spec = deployment?.spec;
  const status = deployment?.status ?? {};
  const desired = spec?.replicas ?? 1;
  const updated = status.updatedReplicas ?? 0;
  const available = status.availableReplicas ?? 0;
  const total = status.replicas ?? 0;
  const counts = { desired, updated, available };
  if (!deployment)
    return {
      state: "Pending",
      reason: "NotCreated",
      message: "the Deployment does not exist yet",
      ...counts,
    };
  const generation = deployment.metadata?.generation ?? 0;
  const observed = status.observedGeneration ?? 0;
  if (observed < generation)
    return {
      state: "Pending",
      reason: "ObservedGenerationBehind",
      message: `waiting for the Deployment controller to observe generation ${generation} (at ${observed})`,
      ...counts,
    };
  const progressing = status.conditions?.find((c) => c.type === "Progressing");
  if (progressing?.reason === PROGRESS_DEADLINE_EXCEEDED)
    return {
      state: "Failed",
      reason: PROGRESS_DEADLINE_EXCEEDED,
      message:
        progressing.message ?? `the rollout made no progress within ${spec?.progressDeadlineSeconds ?? 600}s`,
      ...counts,
    };
  if (updated < desired)
    return {
      state: "Progressing",
      reason: "ReplicasUpdating",
      message: `${updated} of ${desired} replicas updated`,
      ...counts,
    };
  if (total > updated)
    return {
      state: "Progressing",
      reason: "OldReplicasTerminating",
      message: `${total - updated} old replicas pending termination`,
      ...counts,
    };
  if (available < updated)
    return {
      state: "Progressing",
      reason: "ReplicasBecomingAvailable",
      message: `${available} of ${updated} updated replicas available`,
      ...counts,
    };
  return {
    state: "Complete",
    reason: "RolloutComplete",
    message: `${available} of ${desired} replicas available`,
    ...counts,
  };
}

/** One rollout, as an operator keeps it in its status. */
export interface RolloutRecord {
  /** What was rolled out: an image tag, a template hash. */
  version: string;
  outcome: "Progressing" | "Succeeded" | "Failed" | "RolledBack";
  /** RFC 3339. */
  startedAt: string;
  finishedAt?: string;
  message?: string;
}

/** Deployments keep 10 old ReplicaSets (`revisionHistoryLimit`); a status history of rollouts as many. */
export const DEFAULT_ROLLOUT_HISTORY = 10;

/**
 * The history with `record` added, newest first: a record of the same version that is still
 * `Progressing` is replaced (the rollout ended), and at most `limit` records are kept. Pure.
 */
export function recordRollout<R extends RolloutRecord>(
  history: readonly R[] | undefined,
  record: R,
  limit = DEFAULT_ROLLOUT_HISTORY,
): R[] {
  const [latest, ...rest] = history ?? [];
  const older =
    latest && !(latest.version === record.version && latest.outcome === "Progressing")
      ? [latest, ...rest]
      : rest;
  return [record, ...older].slice(0, Math.max(1, limit));
}
