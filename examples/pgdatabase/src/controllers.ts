import { rm } from "node:fs/promises";
import {
  after,
  type Condition,
  controller,
  done,
  finalizer,
  type ReconcileContext,
  RetryableError,
  setCondition,
} from "kubeloop";
import type { Client } from "kubeloop/client";
import {
  cronSchedule,
  type FinalizerEvent,
  nextRun,
  type ReconcileResult,
  runOperation,
} from "kubeloop/controller";
import { Secret } from "kubeloop/k8s";
import type { Clock } from "kubeloop/queue";
import { generatePassword, registerSecret, secretValues } from "kubeloop/resources";
import pg from "pg";
import type { Registry } from "prom-client";
import { backupPath, dump, restore, sha256File, type Tools } from "./dumps.ts";
import { PgDatabaseMetrics } from "./metrics.ts";
import {
  alterDatabase,
  createDatabase,
  createExtension,
  databaseStats,
  dropDatabase,
  dropRole,
  ensureLoginRole,
  ensureOwnerRole,
  installedExtensions,
  markDatabase,
  readDatabase,
  reassignOwned,
  type ServerAddress,
  Servers,
  serverVersion,
} from "./postgres.ts";
import {
  PgDatabase,
  PgDatabaseBackup,
  type PgDatabaseBackupObject,
  type PgDatabaseObject,
} from "./resources.ts";

export const OPERATOR_NAME = "pgdatabase-operator";
/** Held by every PgDatabase and PgDatabaseBackup until its cleanup outside the cluster is done. */
export const FINALIZER = "db.example.com/finalizer";
/** On backups: the PgDatabase they belong to (backups outlive it: they are not owned by it). */
export const DATABASE_LABEL = "db.example.com/database";
/** On backups the schedule created: only these are pruned by retention. */
export const SCHEDULED_LABEL = "db.example.com/scheduled";
/** How often a Ready database is looked at again: drift (dropped out of band), size, connections. */
export const DEFAULT_RESYNC_MS = 30_000;
/** Dumps tried before a backup is marked Failed (each attempt starts over: dumps are not resumable). */
const BACKUP_ATTEMPTS = 3;
/** While a database waits on something the operator itself does (a backup), it looks every so often. */
const WAIT_POLL = "1s";

export interface PgDatabaseOptions {
  /** The backup store: a folder (a PVC mount in the cluster). */
  backupDir: string;
  /** pg_dump and pg_restore: their folder (default: PATH). */
  tools?: Tools;
  /** The wall clock of schedules and the queues' delays (tests pass a JumpClock). */
  clock?: Clock;
  /** How often a Ready database is checked again. Default {@link DEFAULT_RESYNC_MS}. */
  resyncMs?: number;
  /** Where per-database metrics go: the manager's (`manager.metrics.registry`). Default: none. */
  registry?: Registry;
}

/** The names a PgDatabase stands for. */
export function namesOf(db: PgDatabaseObject) {
  const name = db.metadata.name ?? "";
  const databaseName = db.spec.databaseName ?? name.replace(/-/g, "_");
  const owner = (db.spec.owner ?? `${databaseName}_owner`).slice(0, 63);
  return {
    databaseName,
    owner,
    /** The two login roles the app's credentials alternate between (see `credentials`). */
    logins: [`${owner.slice(0, 61)}_a`, `${owner.slice(0, 61)}_b`] as const,
    credentialsSecret: `${name}-credentials`,
  };
}

/** The PgDatabase and PgDatabaseBackup controllers, sharing one set of server connections. */
export function pgDatabaseControllers(options: PgDatabaseOptions) {
  const servers = new Servers();
  const tools = options.tools ?? {};
  const resyncMs = options.resyncMs ?? DEFAULT_RESYNC_MS;
  const metrics = options.registry ? new PgDatabaseMetrics(options.registry) : undefined;
  /** Server Secret (namespace/name) → the PgDatabases that use it: a change of the Secret reconciles them. */
  const users = new Map<string, Set<string>>();

  const databases = controller(PgDatabase)
    .named(OPERATOR_NAME)
    .watches(Secret, (secret) => {
      const namespace = secret.metadata?.namespace;
      const owner = secret.metadata?.ownerReferences?.find((ref) => ref.kind === "PgDatabase");
      const fromIndex = [...(users.get(`${namespace}/${secret.metadata?.name}`) ?? [])].map((name) => ({
        namespace,
        name,
      }));
      return owner ? [...fromIndex, { namespace, name: owner.name }] : fromIndex;
    })
    .watches(PgDatabaseBackup, (backup) => ({
      namespace: backup.metadata.namespace,
      name: backup.spec.database,
    }))
    // Beyond watching: the credentials Secrets it writes, and the backups it takes and prunes.
    .permits(
      { apiGroups: [""], resources: ["secrets"], verbs: ["create", "patch", "update"] },
      { apiGroups: ["db.example.com"], resources: ["pgdatabasebackups"], verbs: ["create", "delete"] },
    );
  if (options.clock) databases.clock(options.clock);

  const pgDatabase = databases.reconcile((db, ctx) =>
    finalizer(
      db,
      ctx,
      FINALIZER,
      async (event) => {
        const secretKey = `${ctx.namespace}/${db.spec.server.secretName}`;
        if (!users.get(secretKey)?.has(ctx.name))
          users.set(secretKey, new Set([...(users.get(secretKey) ?? []), ctx.name]));
        if (event.type === "cleanup") return finalize(db, ctx);
        const labels = { namespace: ctx.namespace ?? "", name: ctx.name };
        try {
          const result = await reconcileLive(event.object, ctx);
          metrics?.up.set(labels, 1);
          return result;
        } catch (error) {
          const reason = (error as { reason?: string }).reason;
          if (reason === "ServerUnreachable" || reason === "AuthenticationFailed") metrics?.up.set(labels, 0);
          throw error;
        }
      },
      { fieldManager: OPERATOR_NAME },
    ),
  );

  /** A live PgDatabase: the database, its owner and credentials, then backups and the schedule. */
  async function reconcileLive(
    db: PgDatabaseObject,
    ctx: ReconcileContext<PgDatabaseObject>,
  ): Promise<ReconcileResult> {
    const names = namesOf(db);
    const uid = db.metadata.uid ?? "";
    const server = serverOf(db, ctx);
    let status = db.status ?? {};

    // 1. The roles, the credentials, and the database (created, adopted, restored, or recovered).
    const state = await servers.with(server, "postgres", async (client) => {
      const found = await readDatabase(client, names.databaseName);
      if (found.exists && found.markedBy && found.markedBy !== uid) {
        throw new RetryableError(
          `Database "${names.databaseName}" on ${server.host}:${server.port} is managed by another PgDatabase (uid ${found.markedBy}); choose another databaseName`,
          { reason: "AlreadyManaged" },
        );
      }
      await ensureOwnerRole(client, names.owner);
      return found;
    });
    const rotation = await credentials(db, ctx, server, names);
    if (rotation !== undefined) status = (await ctx.status({ passwordRotation: rotation })).status ?? {};

    const restoring = status.restore?.phase === "Running";
    const recovering = !state.exists && status.created === true;
    const wantsRestore = !status.created && db.spec.restoreFrom !== undefined;
    if (!state.exists || restoring) {
      let source: string | undefined;
      let reason: "Requested" | "Recovery" = "Requested";
      if (restoring) {
        source = status.restore?.backup;
        reason = status.restore?.reason === "Recovery" ? "Recovery" : "Requested";
      } else if (recovering) {
        source = latestCompletedBackup(db, ctx)?.metadata.name;
        reason = "Recovery";
        ctx.event(
          "Warning",
          "DatabaseMissing",
          `Database "${names.databaseName}" is gone from the server; recreating it${source ? ` from backup ${source}` : " empty (no completed backup)"}`,
        );
      } else if (wantsRestore) {
        source = db.spec.restoreFrom?.backup;
      }
      if (source) {
        const backup = ctx.cache.get(PgDatabaseBackup, source, ctx.namespace);
        if (backup?.status?.phase !== "Completed" || !backup.status.path) {
          throw new RetryableError(
            `Backup "${source}" is not a completed PgDatabaseBackup in this namespace`,
            {
              reason: "BackupNotReady",
            },
          );
        }
        // State first: a restart in the middle finds "Running" and starts the restore over.
        status =
          (
            await ctx.status(
              {
                phase: reason === "Recovery" ? "Recovering" : "Restoring",
                restore: { backup: source, phase: "Running", reason, startedAt: ctx.now().toISOString() },
              },
              {
                ready: {
                  status: false,
                  reason: reason === "Recovery" ? "Recovering" : "Restoring",
                  message: `Restoring backup ${source}`,
                },
              },
            )
          ).status ?? {};
        await restoreInto(db, server, names, uid, backup);
        ctx.event(
          "Normal",
          reason === "Recovery" ? "Recovered" : "Restored",
          `Restored from backup ${source}`,
        );
        status = (await ctx.status({ restore: { backup: source, phase: "Completed", reason } })).status ?? {};
      } else {
        status = (await ctx.status({ phase: "Creating" })).status ?? {};
        await servers.with(server, "postgres", (client) =>
          createDatabase(client, names.databaseName, names.owner, db.spec.connectionLimit, uid),
        );
        ctx.event("Normal", "Created", `Created database "${names.databaseName}" owned by "${names.owner}"`);
      }
    } else if (!state.markedBy) {
      await servers.with(server, "postgres", (client) => markDatabase(client, names.databaseName, uid));
      ctx.event(
        "Normal",
        "Adopted",
        `Database "${names.databaseName}" existed; it is now managed by this PgDatabase`,
      );
    }

    // 2. In-place changes: owner, connection limit (fixed, or following the observed peak), extensions.
    const now = ctx.now();
    const stats = await servers.with(server, "postgres", (client) =>
      databaseStats(client, names.databaseName),
    );
    const peak = peakOf(status, stats.connections, now);
    const limit = connectionLimitFor(db, peak.peakConnections);
    const current = await servers.with(server, "postgres", (client) =>
      readDatabase(client, names.databaseName),
    );
    const previousOwner = current.owner;
    if (previousOwner && previousOwner !== names.owner) {
      // The new owner takes the database's objects too; the old roles go (if they own nothing else).
      await servers.with(server, names.databaseName, (client) =>
        reassignOwned(client, previousOwner, names.owner),
      );
    }
    if (current.owner !== names.owner || current.connectionLimit !== limit) {
      await servers.with(server, "postgres", (client) =>
        alterDatabase(client, names.databaseName, {
          ...(current.owner !== names.owner ? { owner: names.owner } : {}),
          ...(current.connectionLimit !== limit ? { connectionLimit: limit } : {}),
        }),
      );
      // What the operator applied last (status) differs from the server: changed out of band.
      const drifted =
        status.owner === names.owner &&
        status.connectionLimit === limit &&
        (current.owner !== names.owner || current.connectionLimit !== limit);
      const why = db.spec.autoConnectionLimit ? ` (peak ${peak.peakConnections} connections)` : "";
      if (drifted)
        ctx.event(
          "Warning",
          "DriftCorrected",
          `The server had owner "${current.owner}", connection limit ${current.connectionLimit}; set back to "${names.owner}", ${limit}`,
        );
      else ctx.event("Normal", "Updated", `Owner "${names.owner}", connection limit ${limit}${why}`);
    }
    if (previousOwner && previousOwner !== names.owner) {
      const old = [`${previousOwner.slice(0, 61)}_a`, `${previousOwner.slice(0, 61)}_b`, previousOwner];
      await servers
        .with(server, "postgres", async (client) => {
          for (const role of old) await dropRole(client, role);
        })
        .catch((error: Error) =>
          ctx.event("Warning", "RoleKept", `The previous owner's roles stay: ${error.message}`),
        );
    }
    // A connection to the database itself only when an extension is missing from the last look.
    const known = status.extensions;
    const extensions =
      known && (db.spec.extensions ?? []).every((e) => known.includes(e)) && state.exists
        ? known
        : await servers.with(server, names.databaseName, async (client) => {
            for (const extension of db.spec.extensions ?? []) await createExtension(client, extension);
            return installedExtensions(client);
          });

    // 3. Backups: the last one, the schedule, retention, verification.
    const backups = backupsOf(db, ctx);
    const last = latestCompletedBackup(db, ctx);
    const lastAttempt = backups.at(-1);
    let lastScheduledBackup = status.lastScheduledBackup;
    let wait: ReconcileResult = after(resyncMs);
    const schedule = db.spec.backup?.schedule;
    if (schedule) {
      const created = db.metadata.creationTimestamp ?? now.toISOString();
      const state = nextRun(cronSchedule(schedule), { since: created, last: lastScheduledBackup, now });
      if (state.due) {
        const name = `${ctx.name}-${compactTime(state.due)}`;
        await createBackup(ctx.client, db, name, true);
        ctx.event("Normal", "BackupScheduled", `Backup ${name} for the ${state.due.toISOString()} slot`);
        lastScheduledBackup = state.due.toISOString();
      }
      wait = earlier(wait, state.wait);
      await prune(ctx, db, backups);
    }
    let lastVerification = status.lastVerification;
    const verifySchedule = db.spec.backup?.verifySchedule;
    if (verifySchedule) {
      const created = db.metadata.creationTimestamp ?? now.toISOString();
      const state = nextRun(cronSchedule(verifySchedule), {
        since: created,
        last: lastVerification?.slot,
        now,
      });
      if (state.due && last) {
        lastVerification = await verify(db, server, last, state.due, ctx);
      }
      wait = earlier(wait, state.wait);
    }

    let conditions: Condition[] = db.status?.conditions ?? [];
    const generation = db.metadata.generation;
    conditions = setCondition(conditions, {
      type: "Ready",
      status: "True",
      reason: "Ready",
      message: `Database "${names.databaseName}" is ready; credentials in Secret ${names.credentialsSecret}`,
      observedGeneration: generation,
    });
    const backupFailed = lastAttempt?.status?.phase === "Failed";
    const verificationFailed =
      lastVerification?.result === "Failed" && lastVerification.backup === last?.metadata.name;
    // Degraded: the database serves, but the backups it would be recovered from are not sound.
    conditions = setCondition(conditions, {
      type: "Degraded",
      status: backupFailed || verificationFailed ? "True" : "False",
      reason: backupFailed ? "BackupFailed" : verificationFailed ? "VerificationFailed" : "AsExpected",
      message:
        backupFailed || verificationFailed ? "The latest backup cannot be relied on; see BackupHealthy" : "",
      observedGeneration: generation,
    });
    conditions = setCondition(conditions, {
      type: "BackupHealthy",
      status: backupFailed || verificationFailed ? "False" : last || !schedule ? "True" : "Unknown",
      reason: backupFailed
        ? "BackupFailed"
        : verificationFailed
          ? "VerificationFailed"
          : last
            ? "BackupCompleted"
            : schedule
              ? "NoBackupYet"
              : "NotScheduled",
      message: backupFailed
        ? `Backup ${lastAttempt?.metadata.name} failed: ${lastAttempt?.status?.message ?? ""}`
        : verificationFailed
          ? `Backup ${lastVerification?.backup} failed its verification: ${lastVerification?.message ?? ""}`
          : last
            ? `Last backup ${last.metadata.name} at ${last.status?.completedAt}`
            : "",
      observedGeneration: generation,
    });
    if (metrics) {
      const labels = { namespace: ctx.namespace ?? "", name: ctx.name };
      metrics.sizeBytes.set(labels, stats.sizeBytes);
      metrics.connections.set(labels, stats.connections);
      metrics.connectionLimit.set(labels, limit);
      metrics.verificationFailed.set(labels, verificationFailed ? 1 : 0);
      if (last?.status?.completedAt) {
        metrics.lastBackupTimestamp.set(labels, Date.parse(last.status.completedAt) / 1000);
        metrics.lastBackupDuration.set(labels, last.status.durationSeconds ?? 0);
        metrics.lastBackupSize.set(labels, last.status.sizeBytes ?? 0);
      }
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
      ...(lastVerification ? { lastVerification } : {}),
      extensions,
      ...(lastScheduledBackup ? { lastScheduledBackup } : {}),
      ...(last?.status?.completedAt
        ? {
            lastBackup: {
              name: last.metadata.name ?? "",
              completedAt: last.status.completedAt,
              ...(last.status.sizeBytes !== undefined ? { sizeBytes: last.status.sizeBytes } : {}),
              ...(last.status.durationSeconds !== undefined
                ? { durationSeconds: last.status.durationSeconds }
                : {}),
            },
          }
        : {}),
      conditions,
    });
    if (!wasReady) ctx.event("Normal", "Ready", `Database "${names.databaseName}" is ready`);
    return wait;
  }

  /**
   * Verifies a backup the only way that proves it: its checksum, then a restore into a scratch
   * database (dropped afterwards, whatever happened). The result goes to status and, when it
   * fails, a Warning event; the BackupHealthy condition shows it.
   */
  async function verify(
    db: PgDatabaseObject,
    server: ServerAddress,
    backup: PgDatabaseBackupObject,
    slot: Date,
    ctx: ReconcileContext<PgDatabaseObject>,
  ) {
    const scratch = `pgdatabase_verify_${(db.metadata.uid ?? "").replace(/-/g, "").slice(0, 12)}`;
    const name = backup.metadata.name ?? "";
    let message = "";
    try {
      await checkChecksum(backup);
      await servers.with(server, "postgres", async (client) => {
        await dropDatabase(client, scratch);
        await client.query(`create database ${pg.escapeIdentifier(scratch)}`);
      });
      await restore(tools, server, scratch, server.username, backup.status?.path ?? "");
    } catch (error) {
      message = (error as Error).message;
    } finally {
      await servers.with(server, "postgres", (client) => dropDatabase(client, scratch)).catch(() => {});
    }
    if (message) ctx.event("Warning", "VerificationFailed", `Backup ${name}: ${message}`);
    else ctx.event("Normal", "Verified", `Backup ${name} restores cleanly`);
    return { backup: name, slot: slot.toISOString(), result: message ? "Failed" : "Passed", message };
  }

  /** Restores a backup into a fresh database: dropped first if a previous attempt left one half-done. */
  async function restoreInto(
    db: PgDatabaseObject,
    server: ServerAddress,
    names: ReturnType<typeof namesOf>,
    uid: string,
    backup: PgDatabaseBackupObject,
  ): Promise<void> {
    await checkChecksum(backup);
    await servers.with(server, "postgres", async (client) => {
      await dropDatabase(client, names.databaseName);
      await createDatabase(client, names.databaseName, names.owner, db.spec.connectionLimit, uid);
    });
    await restore(tools, server, names.databaseName, names.owner, backup.status?.path ?? "");
  }

  /** A backup's file must be there and match the checksum recorded when it was written. */
  async function checkChecksum(backup: PgDatabaseBackupObject): Promise<void> {
    const path = backup.status?.path ?? "";
    const sha = await sha256File(path).catch((error: Error) => {
      throw new RetryableError(`Backup file ${path} cannot be read: ${error.message}`, {
        reason: "BackupUnreadable",
      });
    });
    if (sha !== backup.status?.sha256) {
      throw new RetryableError(
        `Backup file ${path} fails its checksum (sha256 ${sha}, recorded ${backup.status?.sha256})`,
        {
          reason: "BackupCorrupt",
        },
      );
    }
  }

  /** Deletion, by policy, one recorded step at a time; `done()` lets the finalizer go. */
  async function finalize(
    db: PgDatabaseObject,
    ctx: ReconcileContext<PgDatabaseObject>,
  ): Promise<ReconcileResult> {
    const names = namesOf(db);
    const policy = db.spec.deletionPolicy;
    // Only a database this object created (or restored) is ever dropped: never one it was refused.
    const owned = db.status?.created === true;
    let step =
      db.status?.deletion?.step ??
      (owned && policy !== "Retain" ? (policy === "Snapshot" ? "Snapshot" : "Drop") : "Done");
    if (step === "Snapshot") {
      const name = db.status?.deletion?.backup ?? `${ctx.name}-final-${(db.metadata.uid ?? "").slice(0, 8)}`;
      const backup = ctx.cache.get(PgDatabaseBackup, name, ctx.namespace);
      if (!backup) {
        await ctx.status({ phase: "Deleting", deletion: { step, backup: name } });
        await createBackup(ctx.client, db, name, false);
        ctx.event("Normal", "FinalBackup", `Taking backup ${name} before dropping the database`);
        return after(WAIT_POLL);
      }
      if (backup.status?.phase === "Failed") {
        throw new RetryableError(
          `The final backup ${name} failed (${backup.status.message ?? ""}); the database is kept. Delete the backup to try again, or set deletionPolicy: Delete`,
          { reason: "FinalBackupFailed" },
        );
      }
      if (backup.status?.phase !== "Completed") return after(WAIT_POLL);
      step = "Drop";
      await ctx.status({ phase: "Deleting", deletion: { step, backup: name } });
    }
    if (step === "Drop") {
      const server = serverOf(db, ctx);
      await servers.with(server, "postgres", async (client) => {
        const found = await readDatabase(client, names.databaseName);
        if (found.exists && found.markedBy && found.markedBy !== db.metadata.uid) return; // not ours (any more)
        await dropDatabase(client, names.databaseName);
        for (const role of [...names.logins, names.owner]) await dropRole(client, role);
      });
      ctx.event("Normal", "Dropped", `Dropped database "${names.databaseName}" and role "${names.owner}"`);
      step = "Done";
      await ctx.status({
        phase: "Deleting",
        deletion: { step, ...(db.status?.deletion?.backup ? { backup: db.status.deletion.backup } : {}) },
      });
    }
    metrics?.forget(ctx.namespace ?? "", ctx.name);
    users.get(`${ctx.namespace}/${db.spec.server.secretName}`)?.delete(ctx.name);
    return done();
  }

  function serverOf(db: PgDatabaseObject, ctx: ReconcileContext<PgDatabaseObject>): ServerAddress {
    const name = db.spec.server.secretName;
    const secret = ctx.cache.get(Secret, name, ctx.namespace);
    if (!secret)
      throw new RetryableError(`Server Secret "${name}" does not exist`, { reason: "ServerSecretMissing" });
    const data = secretValues(secret);
    const missing = ["host", "username", "password"].filter((key) => !data[key]);
    if (missing.length)
      throw new RetryableError(`Server Secret "${name}" lacks ${missing.join(", ")}`, {
        reason: "ServerSecretInvalid",
      });
    const port = Number(data.port ?? "5432");
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new RetryableError(`Server Secret "${name}" has port "${data.port}", not a port number`, {
        reason: "ServerSecretInvalid",
      });
    // The admin password never reaches a log line, an event or a condition.
    const password = registerSecret(data.password ?? "");
    return { host: data.host ?? "", port, username: data.username ?? "", password };
  }

  /**
   * The app's credentials, with no moment when the Secret holds a login that does not work. The
   * app logs in as one of two login roles of the owner; rotating the password (a new
   * spec.passwordRotation) sets a fresh password on the *other* login first, and only then points
   * the Secret at it. The previous login keeps working for apps that have not reloaded the Secret
   * yet, until the next rotation. A restart between the two steps starts the rotation over: the
   * Secret never held the abandoned password. Returns the rotation to record, if one was done.
   */
  async function credentials(
    db: PgDatabaseObject,
    ctx: ReconcileContext<PgDatabaseObject>,
    server: ServerAddress,
    names: ReturnType<typeof namesOf>,
  ): Promise<string | undefined> {
    const existing = secretValues(ctx.cache.get(Secret, names.credentialsSecret, ctx.namespace) ?? {});
    registerSecret(existing.password);
    const [first, second] = names.logins;
    const active = existing.username === second ? second : first;
    const requested = db.spec.passwordRotation ?? "";
    const rotate = existing.password !== undefined && requested !== (db.status?.passwordRotation ?? "");
    const login = rotate ? (active === first ? second : first) : active;
    // A login of another owner (the owner changed) gets the current password under the new names.
    const password = registerSecret(rotate ? generatePassword() : (existing.password ?? generatePassword()));
    const role = await servers.with(server, "postgres", (client) =>
      ensureLoginRole(client, login, names.owner, password),
    );
    // The Secret already named this login with this password: someone dropped the role.
    if (role === "created" && existing.username === login && existing.password === password)
      ctx.event("Warning", "DriftCorrected", `Login role "${login}" was missing on the server; recreated`);
    // Written once the role has the password: what the Secret holds always works.
    await ctx.apply(credentialsSecretFor(db, names, server, login, password));
    if (rotate) ctx.event("Normal", "PasswordRotated", `The app's credentials now use login "${login}"`);
    return rotate || (existing.password === undefined && requested) ? requested : undefined;
  }

  function backupsOf(
    db: PgDatabaseObject,
    ctx: ReconcileContext<PgDatabaseObject>,
  ): PgDatabaseBackupObject[] {
    return ctx.cache
      .list(PgDatabaseBackup, { namespace: ctx.namespace ?? "" })
      .filter((backup) => backup.spec.database === db.metadata.name && !backup.metadata.deletionTimestamp)
      .sort(
        (a, b) =>
          (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
          (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
      );
  }

  function latestCompletedBackup(db: PgDatabaseObject, ctx: ReconcileContext<PgDatabaseObject>) {
    return backupsOf(db, ctx)
      .filter((backup) => backup.status?.phase === "Completed")
      .sort((a, b) => (a.status?.completedAt ?? "").localeCompare(b.status?.completedAt ?? ""))
      .at(-1);
  }

  /** Keeps the newest `keep` completed scheduled backups; deletes the older ones (their files go too). */
  async function prune(
    ctx: ReconcileContext<PgDatabaseObject>,
    db: PgDatabaseObject,
    backups: PgDatabaseBackupObject[],
  ) {
    const keep = db.spec.backup?.keep ?? 7;
    const scheduled = backups.filter(
      (backup) =>
        backup.metadata.labels?.[SCHEDULED_LABEL] === "true" && backup.status?.phase === "Completed",
    );
    for (const old of scheduled.slice(0, Math.max(0, scheduled.length - keep))) {
      await ctx.client
        .delete(PgDatabaseBackup, old.metadata.name ?? "", { namespace: ctx.namespace ?? "" })
        .catch(() => {});
      ctx.event("Normal", "BackupPruned", `Deleted backup ${old.metadata.name} (keeping ${keep})`);
    }
  }

  const backupController = controller(PgDatabaseBackup)
    .named(`${OPERATOR_NAME}-backup`)
    .watches(PgDatabase, () => undefined)
    .watches(Secret, () => undefined);
  if (options.clock) backupController.clock(options.clock);

  const pgDatabaseBackup = backupController.reconcile((backup, ctx) =>
    finalizer(backup, ctx, FINALIZER, (event) => reconcileBackup(event, ctx), {
      fieldManager: OPERATOR_NAME,
    }),
  );

  /** A backup: its dump taken once (recorded as an operation); deleted, its files go with it. */
  async function reconcileBackup(
    event: FinalizerEvent<PgDatabaseBackupObject>,
    ctx: ReconcileContext<PgDatabaseBackupObject>,
  ): Promise<ReconcileResult> {
    const path = backupPath(options.backupDir, ctx.namespace ?? "", ctx.name);
    if (event.type === "cleanup") {
      await rm(path, { force: true });
      await rm(`${path}.partial`, { force: true });
      return done();
    }
    const live = event.object;
    const phase = live.status?.phase;
    if (phase === "Completed" || phase === "Failed") return done();
    const db = ctx.cache.get(PgDatabase, live.spec.database, ctx.namespace);
    if (!db) {
      await ctx.status({ phase: "Failed", message: `PgDatabase "${live.spec.database}" does not exist` });
      ctx.event("Warning", "BackupFailed", `PgDatabase "${live.spec.database}" does not exist`);
      return done();
    }
    if (!db.status?.created || db.status.restore?.phase === "Running") {
      if (phase !== "Pending")
        await ctx.status({ phase: "Pending", message: "Waiting for the database to be ready" });
      return after(WAIT_POLL);
    }
    const names = namesOf(db);
    const secret = ctx.cache.get(Secret, db.spec.server.secretName, ctx.namespace);
    const data = secretValues(secret ?? {});
    registerSecret(data.password);
    const server: ServerAddress = {
      host: data.host ?? "",
      port: Number(data.port ?? "5432"),
      username: data.username ?? "",
      password: data.password ?? "",
    };
    const labels = { namespace: ctx.namespace ?? "", name: live.spec.database };
    let completed = "";
    // The attempt is recorded Running before the dump; a restart dumps again (to a fresh .partial).
    const outcome = await runOperation({
      record: live.status,
      maxAttempts: BACKUP_ATTEMPTS,
      now: () => ctx.now(),
      save: (status) => ctx.status(status),
      starting: { path, databaseName: names.databaseName },
      run: async () => {
        try {
          const version = await servers.with(server, "postgres", serverVersion);
          const begun = performance.now();
          const { sizeBytes, sha256 } = await dump(tools, server, names.databaseName, path);
          const durationSeconds = Math.round((performance.now() - begun) / 10) / 100;
          completed = `${sizeBytes} bytes in ${durationSeconds}s, sha256 ${sha256.slice(0, 12)}…`;
          return { sizeBytes, sha256, durationSeconds, postgresVersion: version };
        } catch (error) {
          metrics?.backupFailures.inc(labels);
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

  return {
    pgDatabase,
    pgDatabaseBackup,
    /** Ends the server connections (after the manager stopped). */
    close: () => servers.close(),
  };
}

/** Creates a PgDatabaseBackup (idempotent: an existing one of that name is left as it is). */
async function createBackup(
  client: Client,
  db: PgDatabaseObject,
  name: string,
  scheduled: boolean,
): Promise<void> {
  try {
    await client.create({
      apiVersion: PgDatabaseBackup.apiVersion,
      kind: PgDatabaseBackup.kind,
      metadata: {
        name,
        namespace: db.metadata.namespace ?? "",
        labels: {
          [DATABASE_LABEL]: db.metadata.name ?? "",
          ...(scheduled ? { [SCHEDULED_LABEL]: "true" } : {}),
        },
      },
      spec: { database: db.metadata.name ?? "" },
    } as PgDatabaseBackupObject);
  } catch (error) {
    if ((error as { name?: string }).name !== "AlreadyExists") throw error;
  }
}

function credentialsSecretFor(
  db: PgDatabaseObject,
  names: ReturnType<typeof namesOf>,
  server: ServerAddress,
  login: string,
  password: string,
) {
  const uri = `postgresql://${encodeURIComponent(login)}:${encodeURIComponent(password)}@${server.host}:${server.port}/${encodeURIComponent(names.databaseName)}`;
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: names.credentialsSecret,
      namespace: db.metadata.namespace ?? "",
      labels: { "app.kubernetes.io/managed-by": OPERATOR_NAME, [DATABASE_LABEL]: db.metadata.name ?? "" },
    },
    type: "Opaque",
    stringData: {
      host: server.host,
      port: String(server.port),
      database: names.databaseName,
      username: login,
      password,
      uri,
    },
  };
}

/** `2030-01-01T03:00:00Z` → `20300101-0300`: backup names sort by their slot. */
function compactTime(time: Date): string {
  const iso = time.toISOString();
  return `${iso.slice(0, 10).replace(/-/g, "")}-${iso.slice(11, 16).replace(":", "")}`;
}

function earlier(a: ReconcileResult, b: ReconcileResult): ReconcileResult {
  const ms = (r: ReconcileResult) => (r.kind === "after" ? r.delayMs : Number.POSITIVE_INFINITY);
  return ms(a) <= ms(b) ? a : b;
}

/** A window of the connection peak: an hour's busiest moment sets the next hour's limit. */
const PEAK_WINDOW_MS = 60 * 60_000;

/**
 * The peak of connections in the current window; a new window starts from the current count, so
 * the limit follows the load down as well as up.
 */
function peakOf(
  status: NonNullable<PgDatabaseObject["status"]>,
  connections: number,
  now: Date,
): { peakConnections: number; peakWindowStart: string } {
  const start = status.peakWindowStart ? Date.parse(status.peakWindowStart) : Number.NaN;
  if (Number.isNaN(start) || now.getTime() - start >= PEAK_WINDOW_MS)
    return { peakConnections: connections, peakWindowStart: now.toISOString() };
  return {
    peakConnections: Math.max(connections, status.peakConnections ?? 0),
    peakWindowStart: status.peakWindowStart ?? now.toISOString(),
  };
}

/** The spec's fixed limit, or the observed peak times the headroom within the user's bounds. */
export function connectionLimitFor(db: PgDatabaseObject, peak: number): number {
  const auto = db.spec.autoConnectionLimit;
  if (!auto) return db.spec.connectionLimit;
  return Math.min(auto.max, Math.max(auto.min, Math.ceil(peak * auto.headroom)));
}
