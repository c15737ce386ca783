import { after, controller, done, NotFound, type ReconcileContext } from "kubeloop";
import type { ControllerBuilder } from "kubeloop/controller";
import { ConfigMap, type core, Job, Pod, Secret, Service, StatefulSet } from "kubeloop/k8s";
import {
  addFinalizer,
  generatePassword,
  isDeleting,
  jobStatus,
  registerSecret,
  secretValues,
} from "kubeloop/resources";
import { backupVolume, restoreStep } from "./backup.ts";
import { elect, isReady, restartFollowers } from "./failover.ts";
import { type BackupState, FINALIZER, finalize, scheduleBackups } from "./lifecycle.ts";
import { sampleDBMetrics } from "./metrics.ts";
import {
  connectionConfigMap,
  credentialsSecret,
  headlessService,
  INSTANCE,
  initJob,
  names,
  OPERATOR_NAME,
  podLabels,
  ROLE,
  roleService,
  type SampleDBObject,
  statefulSet,
} from "./objects.ts";
import { invalidNames, reloadHash, reloadJob, reservedNames, restartArguments } from "./parameters.ts";
import { type ReplicationStatus, replicate } from "./replication.ts";
import { SampleDB } from "./resources.ts";

type Ctx = ReconcileContext<SampleDBObject>;

/**
 * The credentials, made once: read from the cache, or the API server when the cache has not seen
 * them yet (a second password would lock out the database initdb made with the first).
 */
async function passwords(db: SampleDBObject, ctx: Ctx): Promise<{ app: string; superuser: string }> {
  const { secret, namespace } = names(db);
  let existing = ctx.cache.get(Secret, secret, namespace);
  if (!existing) {
    try {
      existing = await ctx.client.get(Secret, secret, { namespace, signal: ctx.signal });
    } catch (error) {
      if (!(error instanceof NotFound)) throw error;
    }
  }
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

/**
 * Runs the reload Job for the reloadable settings when they changed; returns the hash of those the
 * instances run with.
 */
async function reloadParameters(db: SampleDBObject, ctx: Ctx): Promise<string | undefined> {
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
  const hash = reloadHash(db);
  if (db.status?.parametersApplied === hash) return hash;
  const job = reloadJob(db);
  const state = jobStatus(ctx.cache.get(Job, job.metadata?.name ?? "", names(db).namespace));
  if (state.state === "Absent") {
    await ctx.apply(job);
    ctx.event(
      "Normal",
      "Reloading",
      `settings applied with ALTER SYSTEM and a reload (Job ${job.metadata?.name})`,
    );
  }
  if (state.state === "Failed") ctx.event("Warning", "ReloadFailed", state.message);
  if (state.state !== "Complete") return db.status?.parametersApplied;
  ctx.event("Normal", "Reloaded", "the instances run with the new settings");
  return hash;
}

const replicationStatus = ({ synchronousStandbyNames, streaming, writes }: ReplicationStatus) => ({
  synchronousStandbyNames,
  streaming,
  writes,
});

/**
 * SampleDB → its Secret, ConfigMap, Services, StatefulSet (with a PersistentVolumeClaim per
 * instance) and, once the primary serves, the initialisation Job; Ready when every instance is.
 */
export const sampleDBController = controller(SampleDB)
  .named(OPERATOR_NAME)
  .owns(StatefulSet)
  .owns(Service)
  .owns(Secret)
  .owns(ConfigMap)
  .owns(Job)
  .watches(
    Pod,
    (pod) => ({ namespace: pod.metadata?.namespace, name: pod.metadata?.labels?.[INSTANCE] ?? "" }),
    { labelSelector: `app.kubernetes.io/managed-by=${OPERATOR_NAME}` },
  )
  // Pods: the role label the Services select by, and followers restarted after a failover.
  .permits({ apiGroups: [""], resources: ["pods"], verbs: ["patch", "delete"] })
  // The backup volume (not owned: it outlives the SampleDB) and, on deletion, the data volumes.
  .permits({
    apiGroups: [""],
    resources: ["persistentvolumeclaims"],
    verbs: ["get", "list", "create", "patch", "delete"],
  })
  .reconcile(async (db, ctx) => {
    if (ctx.deleted) {
      sampleDBMetrics.forget(names(db).namespace, names(db).name);
      return done(); // owned objects go with it (garbage collection)
    }
    const { name, namespace } = names(db);
    let primary = db.status?.primary ?? `${name}-0`;
    const pods = ctx.cache.list(Pod, { namespace, labels: podLabels(db, "instance") });
    const credentials = await passwords(db, ctx);
    const elected =
      db.status?.initialized && !isDeleting(db)
        ? await elect(ctx, pods, primary, credentials.superuser)
        : undefined;
    let promotedAt = db.status?.promotedAt;
    if (elected) {
      // Recorded before anything acts on it: a restarted operator carries on with the same choice.
      promotedAt = ctx.now().toISOString();
      ctx.event("Warning", "Failover", `${primary} does not serve: ${elected} becomes the primary`);
      await ctx.status({ primary: elected, promotedAt });
      sampleDBMetrics.failedOver(db);
      primary = elected;
    }
    const primaryReady = pods.some((pod) => pod.metadata?.name === primary && isReady(pod));
    if (isDeleting(db)) {
      if (db.status?.phase !== "Deleting") await ctx.status({ phase: "Deleting" });
      const again = await finalize(db, ctx, primaryReady);
      return again === 0 ? done() : after(`${Math.ceil(again / 1000)}s`);
    }
    await addFinalizer(ctx.client, db, FINALIZER);
    await ctx.apply(credentialsSecret(db, credentials));
    await ctx.apply(connectionConfigMap(db, primary));
    await ctx.apply(headlessService(db));
    await ctx.apply(roleService(db, "primary"));
    if (db.spec.instances > 1) await ctx.apply(roleService(db, "replica"));
    const current = ctx.cache.get(StatefulSet, names(db).name, names(db).namespace);
    await ctx.apply(statefulSet(db, restartArguments(db), current));
    // Not owned: the backups outlive the SampleDB (restore, deletionPolicy Snapshot).
    await ctx.apply(backupVolume(db), { owned: false });

    // For ten minutes after a promotion: the promotion (idempotent) and the followers' restarts.
    const promoting = promotedAt !== undefined && ctx.now().getTime() - Date.parse(promotedAt) < 600_000;
    // Before the labels move the Services: a client reaches the new primary once it takes writes.
    const replication = await replicate(db, ctx, pods, primary, {
      password: credentials.superuser,
      promoting,
    }).catch((error: Error) => {
      ctx.event("Warning", "ReplicationUnknown", `${primary}: ${error.message}`);
      return undefined;
    });
    const promoted = !promoting || replication !== undefined;
    if (promoted) await labelRoles(db, ctx, pods, primary);
    if (promoting && promotedAt) await restartFollowers(db, ctx, pods, primary, promotedAt);
    const readyInstances = pods.filter(isReady).length;

    let initialized = db.status?.initialized === true;
    if (!initialized && primaryReady) {
      await ctx.apply(initJob(db, restoreStep(db)));
      const state = jobStatus(ctx.cache.get(Job, names(db).init, namespace)).state;
      if (state === "Failed") ctx.event("Warning", "InitFailed", "the initialisation Job failed");
      if (state === "Complete") {
        initialized = true;
        ctx.event("Normal", "Initialized", `role and database ${db.spec.database} created`);
      }
    }
    const parametersApplied =
      initialized && primaryReady ? await reloadParameters(db, ctx) : db.status?.parametersApplied;
    const backups: BackupState | undefined =
      db.spec.backup && initialized && primaryReady ? await scheduleBackups(db, ctx) : undefined;
    const waiting = replication?.writes === "Waiting";
    const ready = initialized && readyInstances === db.spec.instances && !waiting;
    const phase = ready ? "Ready" : initialized ? "Degraded" : primaryReady ? "Initializing" : "Creating";
    const lastBackup = backups?.lastBackup ?? db.status?.lastBackup;
    sampleDBMetrics.observe(db, {
      primary,
      readyInstances,
      pods,
      superuserPassword: credentials.superuser,
      lastBackup,
      promotedAt,
    });
    if (phase !== db.status?.phase)
      ctx.event("Normal", phase, `${readyInstances}/${db.spec.instances} ready`);
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
            : {
                status: false,
                reason: phase,
                message: `${readyInstances} of ${db.spec.instances} instances ready`,
              },
      },
    );
    // Pods, the StatefulSet and the Jobs wake us; the rest is the backup schedule and a safety net.
    if (!ready || !promoted) return after("15s");
    // A standby streams a moment after its pod is Ready: look again until every one is named.
    if (replication && replication.streaming.length < db.spec.instances - 1) return after("5s");
    return backups ? after(`${Math.ceil(backups.nextInMs / 1000)}s`) : done();
  });
