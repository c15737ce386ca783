import { after, done, type KubeObject, type ReconcileContext, type ReconcileResult } from "kubeloop";
import type { apps } from "kubeloop/k8s";
import {
  type Condition,
  type ConditionInput,
  type RolloutRecord,
  recordRollout,
  rolloutStatus,
  setCondition,
} from "kubeloop/resources";

/**
 * What both releases reconcile: a MyApp's spec under v1's names (release 1 maps `size` onto
 * `replicas`), its status, and the rollout logic. Kept apart from the controllers so release 1 and
 * release 2 run the very same steps, which is what an upgrade test must be able to assume.
 */

export const OPERATOR_NAME = "myapp-operator";
const MANAGED_BY = "app.kubernetes.io/managed-by";
const INSTANCE = "app.kubernetes.io/instance";
/** The app serves HTTP here (an unprivileged port: its pods run as non-root). */
const HTTP_PORT = 8080;
/** Rollouts kept in status: as many as a Deployment keeps old ReplicaSets. */
export const HISTORY_LIMIT = 10;
/** While a rollout runs, look again this often even if the Deployment is quiet (a safety net). */
const ROLLOUT_POLL = "10s";

export interface AppSpec {
  replicas: number;
  version: string;
  image: string;
  database?: { enabled: boolean; storage: string; serverSecret?: string } | undefined;
  rollout?: { progressDeadlineSeconds: number; maxUnavailable: string } | undefined;
}

export interface AppStatus {
  phase?: string;
  currentVersion?: string;
  previousVersion?: string;
  failedVersion?: string;
  readyReplicas?: number;
  history?: RolloutRecord[];
  conditions?: Condition[];
}

export interface AppView extends KubeObject {
  spec: AppSpec;
  status?: AppStatus | undefined;
}

export function podLabels(name: string): Record<string, string> {
  return { "app.kubernetes.io/name": "myapp", [INSTANCE]: name, [MANAGED_BY]: OPERATOR_NAME };
}

/** "25%" stays a percentage; "1" is a count (a Deployment refuses a number in a string). */
function intOrPercent(value: string): number | string {
  return value.endsWith("%") ? value : Number(value);
}

export function deploymentFor(
  app: AppView,
  version: string,
  env: { name: string; valueFrom?: unknown }[] = [],
) {
  const name = app.metadata?.name ?? "";
  const labels = podLabels(name);
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: app.metadata?.namespace ?? "", labels },
    spec: {
      replicas: app.spec.replicas,
      progressDeadlineSeconds: app.spec.rollout?.progressDeadlineSeconds ?? 600,
      revisionHistoryLimit: HISTORY_LIMIT,
      selector: { matchLabels: labels },
      strategy: {
        type: "RollingUpdate",
        rollingUpdate: { maxUnavailable: intOrPercent(app.spec.rollout?.maxUnavailable ?? "0"), maxSurge: 1 },
      },
      template: {
        metadata: { labels },
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          containers: [
            {
              name: "app",
              image: `${app.spec.image}:${version}`,
              ports: [{ name: "http", containerPort: HTTP_PORT }],
              readinessProbe: { httpGet: { path: "/healthz", port: "http" } },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
              ...(env.length ? { env } : {}),
            },
          ],
        },
      },
    },
  };
}

export function serviceFor(app: AppView) {
  const name = app.metadata?.name ?? "";
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: app.metadata?.namespace ?? "", labels: podLabels(name) },
    spec: {
      selector: podLabels(name),
      ports: [{ name: "http", port: 80, targetPort: "http" }],
    },
  };
}

/** Extra inputs a reconcile may get (composition): env for the pods, and conditions to report. */
export interface Dependencies {
  env?: { name: string; valueFrom?: unknown }[];
  /** Set when something the app needs is not there yet: Ready stays False with this reason. */
  notReady?: { reason: string; message: string };
  /** Conditions of the app's dependencies (e.g. `DatabaseReady`), written with the rest. */
  conditions?: Omit<ConditionInput, "observedGeneration">[];
}

/**
 * One reconcile of a MyApp: the Deployment at the version to run, the Service, and the rollout
 * bookkeeping. The version to run is `spec.version` unless that version already failed and was
 * rolled back (`status.failedVersion`): then the last healthy one, until the spec names another.
 */
export async function reconcileApp<T extends KubeObject>(
  app: AppView,
  ctx: ReconcileContext<T>,
  deps: Dependencies = {},
): Promise<ReconcileResult> {
  const status = app.status ?? {};
  const now = ctx
    .now()
    .toISOString()
    .replace(/\.\d+Z$/, "Z");
  const generation = app.metadata?.generation;
  const wanted = app.spec.version;
  const failedBefore = status.failedVersion === wanted;
  const healthy = status.currentVersion;
  const running = failedBefore && healthy ? healthy : wanted;

  await ctx.apply(serviceFor(app));
  const deployment = (await ctx.apply(deploymentFor(app, running, deps.env))) as apps.Deployment;
  const rollout = rolloutStatus(deployment);

  let history = status.history ?? [];
  let conditions = status.conditions ?? [];
  const set = (c: Omit<ConditionInput, "observedGeneration">) => {
    conditions = setCondition(conditions, {
      ...c,
      ...(generation ? { observedGeneration: generation } : {}),
    });
  };
  const next: AppStatus = {
    readyReplicas: deployment.status?.readyReplicas ?? 0,
    ...(healthy ? { currentVersion: healthy } : {}),
    ...(status.previousVersion ? { previousVersion: status.previousVersion } : {}),
    ...(status.failedVersion ? { failedVersion: status.failedVersion } : {}),
  };
  // A new version starts its rollout record.
  if (!failedBefore && wanted !== healthy && history[0]?.version !== wanted)
    history = recordRollout(
      history,
      { version: wanted, outcome: "Progressing", startedAt: now },
      HISTORY_LIMIT,
    );

  for (const c of deps.conditions ?? []) set(c);
  let result: ReconcileResult = done();
  if (rollout.state === "Failed" && running === wanted && healthy && healthy !== wanted) {
    // The new version did not become available in time: back to the last healthy one.
    const message = `${wanted} did not become available within ${app.spec.rollout?.progressDeadlineSeconds ?? 600}s (${rollout.message}); rolled back to ${healthy}`;
    await ctx.apply(deploymentFor(app, healthy, deps.env));
    history = recordRollout(
      history,
      {
        version: wanted,
        outcome: "RolledBack",
        startedAt: history[0]?.startedAt ?? now,
        finishedAt: now,
        message,
      },
      HISTORY_LIMIT,
    );
    next.failedVersion = wanted;
    set({ type: "RolledBack", status: true, reason: "ProgressDeadlineExceeded", message });
    set({ type: "Degraded", status: true, reason: "RolledBack", message });
    set({ type: "Progressing", status: true, reason: "RollingBack", message: `rolling back to ${healthy}` });
    set({ type: "Ready", status: false, reason: "RollingBack", message });
    ctx.event("Warning", "RolledBack", message);
    ctx.log.warn({ version: wanted, rolledBackTo: healthy }, "rollout failed; rolled back");
    result = after(ROLLOUT_POLL);
  } else if (rollout.state === "Failed" && running === wanted) {
    // Nothing healthy to go back to (the first version failed): say so and wait for a new spec.
    const message = `${wanted} did not become available: ${rollout.message}`;
    const firstTime = history[0]?.version === wanted && history[0].outcome === "Progressing";
    if (firstTime && history[0])
      history = recordRollout(
        history,
        { version: wanted, outcome: "Failed", startedAt: history[0].startedAt, finishedAt: now, message },
        HISTORY_LIMIT,
      );
    set({ type: "Degraded", status: true, reason: "ProgressDeadlineExceeded", message });
    set({ type: "Progressing", status: false, reason: "ProgressDeadlineExceeded", message });
    set({ type: "Ready", status: false, reason: "ProgressDeadlineExceeded", message });
    if (firstTime) ctx.event("Warning", "RolloutFailed", message);
  } else if (rollout.state === "Complete") {
    if (running === wanted && wanted !== healthy) {
      // A new version is healthy: it is current now, and clears a rollback before it.
      if (healthy) next.previousVersion = healthy;
      next.currentVersion = wanted;
      delete next.failedVersion;
      history = recordRollout(
        history,
        { version: wanted, outcome: "Succeeded", startedAt: history[0]?.startedAt ?? now, finishedAt: now },
        HISTORY_LIMIT,
      );
      ctx.event("Normal", "RolledOut", `${wanted} is available on ${rollout.available} pods`);
    }
    if (next.failedVersion && running !== next.failedVersion && !failedBefore) delete next.failedVersion;
    const rolledBack = Boolean(next.failedVersion);
    set({ type: "Progressing", status: false, reason: "RolloutComplete", message: rollout.message });
    set(
      rolledBack
        ? {
            type: "Degraded",
            status: true,
            reason: "RolledBack",
            message: `${next.failedVersion} was rolled back; running ${running}`,
          }
        : { type: "Degraded", status: false, reason: "AsExpected", message: "" },
    );
    if (!rolledBack && conditions.some((c) => c.type === "RolledBack"))
      set({
        type: "RolledBack",
        status: false,
        reason: "NewVersionAvailable",
        message: `${running} rolled out`,
      });
    if (deps.notReady) set({ type: "Ready", status: false, ...deps.notReady });
    else
      set({
        type: "Ready",
        status: true,
        reason: "Available",
        message: `${running} on ${rollout.available} pods`,
      });
  } else {
    set({ type: "Progressing", status: true, reason: rollout.reason, message: rollout.message });
    set({
      type: "Ready",
      status: false,
      reason: deps.notReady?.reason ?? "RollingOut",
      message: deps.notReady?.message ?? rollout.message,
    });
    // The Deployment's own updates wake us; this only guards against a missed one.
    result = after(ROLLOUT_POLL);
  }
  const degraded = conditions.find((c) => c.type === "Degraded")?.status === "True";
  const ready = conditions.find((c) => c.type === "Ready")?.status === "True";
  next.phase = degraded ? "Degraded" : ready ? "Running" : "Progressing";
  await ctx.status({ ...next, history, conditions } as Record<string, unknown>);
  // Fields this status no longer has must go: a merge patch only removes what it sets to null.
  if (status.failedVersion && !next.failedVersion) await ctx.status({ failedVersion: null });
  return result;
}

/**
 * The app cannot roll out yet because a dependency is missing or not ready: no Deployment change
 * (pods that cannot reach their database would only crash-loop), the dependency's condition, Ready
 * False with the same reason, phase Pending. The caller requeues; nothing here throws.
 */
export async function reportWaiting<T extends KubeObject>(
  app: AppView,
  ctx: ReconcileContext<T>,
  dependency: { type: string; reason: string; message: string },
): Promise<void> {
  const generation = app.metadata?.generation;
  const observed = generation ? { observedGeneration: generation } : {};
  let conditions = app.status?.conditions ?? [];
  conditions = setCondition(conditions, { ...dependency, status: false, ...observed });
  conditions = setCondition(conditions, {
    type: "Ready",
    status: false,
    reason: dependency.reason,
    message: dependency.message,
    ...observed,
  });
  await ctx.apply(serviceFor(app));
  await ctx.status({ phase: "Pending", conditions });
}
