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
  conditions?: Input[];
}

/** One reconcile's working state: what the rollout's branches read, and the status they build. */
interface Pass<T extends KubeObject> {
  app: AppView;
  ctx: ReconcileContext<T>;
  deps: Dependencies;
  now: string;
  wanted: string;
  healthy: string | undefined;
  running: string;
  failedBefore: boolean;
  rollout: ReturnType<typeof rolloutStatus>;
  next: AppStatus;
  history: RolloutRecord[];
  conditions: Condition[];
}

type Input = Omit<ConditionInput, "observedGeneration">;

/** Sets a condition on the status being built, at the MyApp's generation. */
function set<T extends KubeObject>(pass: Pass<T>, condition: Input): void {
  const generation = pass.app.metadata?.generation;
  pass.conditions = setCondition(pass.conditions, {
    ...condition,
    ...(generation ? { observedGeneration: generation } : {}),
  });
}

/** Records a rollout in the status's history (newest first, at most {@link HISTORY_LIMIT}). */
function record<T extends KubeObject>(pass: Pass<T>, rollout: RolloutRecord): void {
  pass.history = recordRollout(pass.history, rollout, HISTORY_LIMIT);
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
  const wanted = app.spec.version;
  const failedBefore = status.failedVersion === wanted;
  const healthy = status.currentVersion;
  const running = failedBefore && healthy ? healthy : wanted;

  await ctx.apply(serviceFor(app));
  const deployment = (await ctx.apply(deploymentFor(app, running, deps.env))) as apps.Deployment;
  const pass: Pass<T> = {
    ...{ app, ctx, deps, wanted, healthy, running, failedBefore },
    now: ctx
      .now()
      .toISOString()
      .replace(/\.\d+Z$/, "Z"),
    rollout: rolloutStatus(deployment),
    next: {
      readyReplicas: deployment.status?.readyReplicas ?? 0,
      ...(healthy ? { currentVersion: healthy } : {}),
      ...(status.previousVersion ? { previousVersion: status.previousVersion } : {}),
      ...(status.failedVersion ? { failedVersion: status.failedVersion } : {}),
    },
    history: status.history ?? [],
    conditions: status.conditions ?? [],
  };
  // A new version starts its rollout record.
  if (!failedBefore && wanted !== healthy && pass.history[0]?.version !== wanted)
    record(pass, { version: wanted, outcome: "Progressing", startedAt: pass.now });
  for (const c of deps.conditions ?? []) set(pass, c);
  const failed = pass.rollout.state === "Failed" && running === wanted;
  const result =
    failed && healthy && healthy !== wanted
      ? await rollBack(pass, healthy)
      : failed
        ? noFallback(pass)
        : pass.rollout.state === "Complete"
          ? complete(pass)
          : progressing(pass);
  const { next, history, conditions } = pass;
  const degraded = conditions.find((c) => c.type === "Degraded")?.status === "True";
  const ready = conditions.find((c) => c.type === "Ready")?.status === "True";
  next.phase = degraded ? "Degraded" : ready ? "Running" : "Progressing";
  await ctx.status({ ...next, history, conditions } as Record<string, unknown>);
  // Fields this status no longer has must go: a merge patch only removes what it sets to null.
  if (status.failedVersion && !next.failedVersion) await ctx.status({ failedVersion: null });
  return result;
}

/** The new version did not become available in time: back to the last healthy one. */
async function rollBack<T extends KubeObject>(pass: Pass<T>, healthy: string): Promise<ReconcileResult> {
  const { app, ctx, deps, wanted, rollout, now } = pass;
  const message = `${wanted} did not become available within ${app.spec.rollout?.progressDeadlineSeconds ?? 600}s (${rollout.message}); rolled back to ${healthy}`;
  await ctx.apply(deploymentFor(app, healthy, deps.env));
  const startedAt = pass.history[0]?.startedAt ?? now;
  record(pass, { version: wanted, outcome: "RolledBack", startedAt, finishedAt: now, message });
  pass.next.failedVersion = wanted;
  set(pass, { type: "RolledBack", status: true, reason: "ProgressDeadlineExceeded", message });
  set(pass, { type: "Degraded", status: true, reason: "RolledBack", message });
  set(pass, {
    type: "Progressing",
    status: true,
    reason: "RollingBack",
    message: `rolling back to ${healthy}`,
  });
  set(pass, { type: "Ready", status: false, reason: "RollingBack", message });
  ctx.event("Warning", "RolledBack", message);
  ctx.log.warn({ version: wanted, rolledBackTo: healthy }, "rollout failed; rolled back");
  return after(ROLLOUT_POLL);
}

/** Nothing healthy to go back to (the first version failed): say so and wait for a new spec. */
function noFallback<T extends KubeObject>(pass: Pass<T>): ReconcileResult {
  const { ctx, wanted, rollout, now } = pass;
  const message = `${wanted} did not become available: ${rollout.message}`;
  const first = pass.history[0];
  const firstTime = first?.version === wanted && first.outcome === "Progressing";
  if (firstTime && first)
    record(pass, {
      version: wanted,
      outcome: "Failed",
      startedAt: first.startedAt,
      finishedAt: now,
      message,
    });
  set(pass, { type: "Degraded", status: true, reason: "ProgressDeadlineExceeded", message });
  set(pass, { type: "Progressing", status: false, reason: "ProgressDeadlineExceeded", message });
  set(pass, { type: "Ready", status: false, reason: "ProgressDeadlineExceeded", message });
  if (firstTime) ctx.event("Warning", "RolloutFailed", message);
  return done();
}

/** The rollout is complete: a new healthy version becomes current, and clears a rollback before it. */
function complete<T extends KubeObject>(pass: Pass<T>): ReconcileResult {
  const { ctx, deps, wanted, healthy, running, failedBefore, rollout, next, now } = pass;
  if (running === wanted && wanted !== healthy) {
    if (healthy) next.previousVersion = healthy;
    next.currentVersion = wanted;
    delete next.failedVersion;
    const startedAt = pass.history[0]?.startedAt ?? now;
    record(pass, { version: wanted, outcome: "Succeeded", startedAt, finishedAt: now });
    ctx.event("Normal", "RolledOut", `${wanted} is available on ${rollout.available} pods`);
  }
  if (next.failedVersion && running !== next.failedVersion && !failedBefore) delete next.failedVersion;
  const rolledBack = Boolean(next.failedVersion);
  set(pass, { type: "Progressing", status: false, reason: "RolloutComplete", message: rollout.message });
  set(
    pass,
    rolledBack
      ? {
          type: "Degraded",
          status: true,
          reason: "RolledBack",
          message: `${next.failedVersion} was rolled back; running ${running}`,
        }
      : { type: "Degraded", status: false, reason: "AsExpected", message: "" },
  );
  if (!rolledBack && pass.conditions.some((c) => c.type === "RolledBack"))
    set(pass, {
      type: "RolledBack",
      status: false,
      reason: "NewVersionAvailable",
      message: `${running} rolled out`,
    });
  const available = { reason: "Available", message: `${running} on ${rollout.available} pods` };
  set(pass, {
    type: "Ready",
    ...(deps.notReady ? { status: false, ...deps.notReady } : { status: true, ...available }),
  });
  return done();
}

/** Still rolling out: the Deployment's own updates wake the reconcile; the poll only guards against a missed one. */
function progressing<T extends KubeObject>(pass: Pass<T>): ReconcileResult {
  const { rollout, deps } = pass;
  set(pass, { type: "Progressing", status: true, reason: rollout.reason, message: rollout.message });
  set(pass, {
    type: "Ready",
    status: false,
    reason: deps.notReady?.reason ?? "RollingOut",
    message: deps.notReady?.message ?? rollout.message,
  });
  return after(ROLLOUT_POLL);
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
