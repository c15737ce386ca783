import {
  after,
  controller,
  done,
  finalizer,
  ignoreNotFound,
  type ReconcileContext,
  type ReconcileResult,
  refTo,
} from "kubeloop";
import type { AppliedChildren } from "kubeloop/controller";
import {
  type batch,
  ConfigMap,
  type core,
  Job,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Service,
  StatefulSet,
} from "kubeloop/k8s";
import { generatePassword, jobStatus, registerSecret, secretValues } from "kubeloop/resources";
import { backupVolume } from "./backup.ts";
import { sampleDBChildren } from "./children.ts";
import { elect, isReady, restartFollowers } from "./failover.ts";
import { cleanUp, FINALIZER, scheduleBackups } from "./lifecycle.ts";
import { sampleDBMetrics } from "./metrics.ts";
import { INSTANCE, names, OPERATOR_NAME, podLabels, ROLE, type SampleDBObject } from "./objects.ts";
import { invalidNames, reloadHash, reservedNames } from "./parameters.ts";
import { type ReplicationStatus, replicate } from "./replication.ts";
import { SampleDB } from "./resources.ts";

type Ctx = ReconcileContext<SampleDBObject>;

/**
 * The credentials, made once: read from the cache, or the API server when the cache has not seen
 * them yet (a second password would lock out the database initdb made with the first).
 */
async function readPasswords(db: SampleDBObject, ctx: Ctx): Promise<{ app: string; superuser: string }> {
  const { secret, namespace } = names(db);
  let existing = ctx.cache.get({ type: Secret, namespace, name: secret });
  existing ??= await ctx.client
    .get(refTo(Secret, secret, namespace), { signal: ctx.signal })
    .catch(ignoreNotFound);
  const values = existing ? secretValues(existing) : {};
  return {
    app: registerSecret(values.password ?? generatePassword()),
    superuser: registerSecret(values["superuser-password"] ?? generatePassword()),
  };
}

/** Labels each pod primary or replica, which the Services select by. */
async function labelRoles(db: SampleDBObject, ctx: Ctx, pods: core.Pod[], primary: string): Promise<void> {
  for (const pod of pods) {
    const role = pod.metadata?.name === primary ? "primary" : "replica";
    if (pod.metadata?.labels?.[ROLE] === role) continue;
    await ctx.apply(
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: pod.metadata?.name ?? "",
          namespace: names(db).namespace,
          labels: { [ROLE]: role },
        },
      },
      { owned: false },
    );
  }
}

/** Warns of `spec.parameters` names that are ignored: not setting names, or set by the operator. */
function warnIgnoredParameters(db: SampleDBObject, ctx: Ctx): void {
  const invalid = invalidNames(db);
  if (invalid.length > 0)
    ctx.event("Warning", "InvalidParameters", `not setting names, ignored: ${invalid.join(", ")}`);
  const reserved = reservedNames(db);
  if (reserved.length > 0)
    ctx.event(
      "Warning",
      "ReservedParameters",
      `set by the operator, ignored: ${reserved.join(", ")} (synchronous replication: spec.replication)`,
    );
}

/** What the init and reload Jobs did in this pass: whether the database is initialised, and the settings the instances run with. */
function jobsOutcome(db: SampleDBObject, ctx: Ctx, applied: AppliedChildren) {
  let initialized = db.status?.initialized === true;
  const init = jobStatus(applied.one<batch.Job>("init")).state;
  if (!initialized && init === "Failed") ctx.event("Warning", "InitFailed", "the initialisation Job failed");
  if (!initialized && init === "Complete") {
    initialized = true;
    ctx.event("Normal", "Initialized", `role and database ${db.spec.database} created`);
  }
  let parametersApplied = db.status?.parametersApplied;
  const job = applied.one<batch.Job>("reload");
  const reload = jobStatus(job);
  if (job && !job.status?.startTime)
    ctx.event(
      "Normal",
      "Reloading",
      `settings applied with ALTER SYSTEM and a reload (Job ${job.metadata?.name})`,
    );
  if (reload.state === "Failed") ctx.event("Warning", "ReloadFailed", reload.message);
  if (reload.state === "Complete") {
    ctx.event("Normal", "Reloaded", "the instances run with the new settings");
    parametersApplied = reloadHash(db);
  }
  return { initialized, parametersApplied };
}

const replicationStatus = ({ synchronousStandbyNames, streaming, writes }: ReplicationStatus) => ({
  synchronousStandbyNames,
  streaming,
  writes,
});

/** The instance named primary after this pass: a new one when it does not serve and a replica does. */
async function failover(db: SampleDBObject, ctx: Ctx, pods: core.Pod[], superuser: string) {
  const primary = db.status?.primary ?? `${names(db).name}-0`;
  const elected = db.status?.initialized ? await elect(ctx, pods, primary, superuser) : undefined;
  if (!elected) return { primary, promotedAt: db.status?.promotedAt };
  // Recorded before anything acts on it: a restarted operator carries on with the same choice.
  const promotedAt = ctx.now().toISOString();
  ctx.event("Warning", "Failover", `${primary} does not serve: ${elected} becomes the primary`);
  await ctx.status({ primary: elected, promotedAt });
  sampleDBMetrics.failedOver(db);
  return { primary: elected, promotedAt };
}

/**
 * The pods' side: for ten minutes after a promotion, the promotion (idempotent) and the followers'
 * restarts; replication as spec.replication says; the role labels the Services select by.
 */
async function roles(
  db: SampleDBObject,
  ctx: Ctx,
  pods: core.Pod[],
  primary: string,
  password: string,
  promotedAt: string | undefined,
) {
  const promoting = promotedAt !== undefined && ctx.now().getTime() - Date.parse(promotedAt) < 600_000;
  // Before the labels move the Services: a client reaches the new primary once it takes writes.
  const replication = await replicate(db, ctx, pods, primary, { password, promoting }).catch(
    (error: Error) => {
      ctx.event("Warning", "ReplicationUnknown", `${primary}: ${error.message}`);
      return undefined;
    },
  );
  const promoted = !promoting || replication !== undefined;
  if (promoted) await labelRoles(db, ctx, pods, primary);
  if (promoting && promotedAt) await restartFollowers(db, ctx, pods, primary, promotedAt);
  return { replication, promoted };
}

/** A live SampleDB: its children, then its pods' roles and replication, its backups, its status. */
async function reconcileLive(db: SampleDBObject, ctx: Ctx): Promise<ReconcileResult> {
  const { name, namespace } = names(db);
  const pods = ctx.cache.list(Pod, { namespace, labels: podLabels(db, "instance") });
  const passwords = await readPasswords(db, ctx);
  const { primary, promotedAt } = await failover(db, ctx, pods, passwords.superuser);
  const primaryReady = pods.some((pod) => pod.metadata?.name === primary && isReady(pod));
  const { applied, waitingFor } = await sampleDBChildren.reconcile(db, ctx, {
    passwords,
    primary,
    primaryReady,
    statefulSet: ctx.cache.get({ type: StatefulSet, namespace, name }),
    initJobExists: ctx.cache.get({ type: Job, namespace, name: names(db).init }) !== undefined,
  });
  if (waitingFor) ctx.event("Normal", "WaitingForDependent", waitingFor.message);
  // Not a child: the backups outlive the SampleDB (restore, deletionPolicy Snapshot).
  await ctx.apply(backupVolume(db), { owned: false });

  const { replication, promoted } = await roles(db, ctx, pods, primary, passwords.superuser, promotedAt);

  const { initialized, parametersApplied } = jobsOutcome(db, ctx, applied);
  if (initialized && primaryReady) warnIgnoredParameters(db, ctx);
  const backups = db.spec.backup && initialized && primaryReady ? await scheduleBackups(db, ctx) : undefined;
  const readyInstances = pods.filter(isReady).length;
  const waiting = replication?.writes === "Waiting";
  const ready = initialized && readyInstances === db.spec.instances && !waiting;
  const phase = ready ? "Ready" : initialized ? "Degraded" : primaryReady ? "Initializing" : "Creating";
  const lastBackup = backups?.lastBackup ?? db.status?.lastBackup;
  sampleDBMetrics.observe(db, {
    primary,
    readyInstances,
    pods,
    superuserPassword: passwords.superuser,
    lastBackup,
    promotedAt,
  });
  if (phase !== db.status?.phase) ctx.event("Normal", phase, `${readyInstances}/${db.spec.instances} ready`);
  await ctx.status(
    {
      phase,
      primary,
      readyInstances,
      ready: `${readyInstances}/${db.spec.instances}`,
      version: db.spec.image.split(":").pop()?.split(".")[0] ?? "",
      initialized,
      ...(parametersApplied ? { parametersApplied } : {}),
      ...(replication ? { replication: replicationStatus(replication) } : {}),
      ...(backups?.lastBackup
        ? { lastBackup: backups.lastBackup, lastBackupFile: backups.lastBackupFile }
        : {}),
    },
    {
      ready: ready
        ? true
        : waiting
          ? { status: false, reason: "WritesWait", message: replication?.message ?? "" }
          : // What holds it up: the instances, and the first child not ready (the dependents' order).
            {
              status: false,
              reason: phase,
              message: [`${readyInstances} of ${db.spec.instances} instances ready`, waitingFor?.message]
                .filter(Boolean)
                .join("; "),
            },
    },
  );
  // Pods, the StatefulSet and the Jobs wake us; the rest is the backup schedule and a safety net.
  if (!ready || !promoted) return after("15s");
  // A standby streams a moment after its pod is Ready: look again until every one is named.
  if (replication && replication.streaming.length < db.spec.instances - 1) return after("5s");
  return backups ? after(`${Math.ceil(backups.nextInMs / 1000)}s`) : done();
}

/**
 * SampleDB → its Secret, ConfigMap, Services, data volumes, StatefulSet and, once the primary
 * serves, the initialisation Job (children.ts); Ready when every instance is. On deletion, the
 * finalizer's cleanup does what deletionPolicy says (lifecycle.ts).
 */
export const sampleDBController = controller(SampleDB)
  .named(OPERATOR_NAME)
  .owns(StatefulSet)
  .owns(Service)
  .owns(Secret)
  .owns(ConfigMap)
  .owns(Job)
  .owns(PersistentVolumeClaim)
  .watches(
    Pod,
    (pod) => ({ namespace: pod.metadata?.namespace, name: pod.metadata?.labels?.[INSTANCE] ?? "" }),
    { labelSelector: `app.kubernetes.io/managed-by=${OPERATOR_NAME}` },
  )
  // Pods: the role label the Services select by, and followers restarted after a failover.
  .permits({ apiGroups: [""], resources: ["pods"], verbs: ["patch", "delete"] })
  .reconcile((db, ctx) => {
    if (ctx.gone) sampleDBMetrics.forget(names(db).namespace, names(db).name);
    return finalizer(db, ctx, FINALIZER, (event) =>
      event.type === "cleanup" ? cleanUp(db, ctx) : reconcileLive(db, ctx),
    );
  });
