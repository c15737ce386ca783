import { controller, finalizer } from "kubeloop";
import { Secret } from "kubeloop/k8s";
import type { Clock } from "kubeloop/queue";
import type { Registry } from "prom-client";
import { backupController } from "./backup-controller.ts";
import { runSchedules } from "./backups.ts";
import { applyChanges } from "./changes.ts";
import { ensureDatabase } from "./database.ts";
import { finalize } from "./deletion.ts";
import type { Tools } from "./dumps.ts";
import { PgDatabaseMetrics } from "./metrics.ts";
import { type Ctx, FINALIZER, OPERATOR_NAME, passOf, type Shared } from "./names.ts";
import { Servers } from "./postgres.ts";
import { PgDatabase, PgDatabaseBackup, type PgDatabaseObject } from "./resources.ts";
import { reportReady } from "./status.ts";

export { FINALIZER, OPERATOR_NAME, SCHEDULED_LABEL } from "./names.ts";

// A live PgDatabase is four steps, a file each: database.ts (created, adopted, restored, recovered),
// changes.ts (in place), backups.ts, status.ts; deletion.ts is the cleanup `finalizer()` runs.

/** How often a Ready database is looked at again: drift (dropped out of band), size, connections. */
export const DEFAULT_RESYNC_MS = 30_000;

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

/** The PgDatabase and PgDatabaseBackup controllers, sharing one set of server connections. */
export function pgDatabaseControllers(options: PgDatabaseOptions) {
  const shared: Shared = {
    servers: new Servers(),
    tools: options.tools ?? {},
    backupDir: options.backupDir,
    resyncMs: options.resyncMs ?? DEFAULT_RESYNC_MS,
    metrics: options.registry ? new PgDatabaseMetrics(options.registry) : undefined,
    users: new Map(),
  };
  const databases = controller(PgDatabase)
    .named(OPERATOR_NAME)
    .watches(Secret, (secret) => {
      const namespace = secret.metadata?.namespace;
      const owner = secret.metadata?.ownerReferences?.find((ref) => ref.kind === "PgDatabase");
      const users = [...(shared.users.get(`${namespace}/${secret.metadata?.name}`) ?? [])];
      return [...users, ...(owner ? [owner.name] : [])].map((name) => ({ namespace, name }));
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
        shared.users.set(secretKey, new Set([...(shared.users.get(secretKey) ?? []), ctx.name]));
        return event.type === "cleanup"
          ? finalize(shared, db, ctx)
          : reconcileLive(shared, event.object, ctx);
      },
      { fieldManager: OPERATOR_NAME },
    ),
  );
  return {
    pgDatabase,
    pgDatabaseBackup: backupController(shared, options.clock),
    /** Ends the server connections (after the manager stopped). */
    close: () => shared.servers.close(),
  };
}

/** A live PgDatabase, step by step; `pgdatabase_up` says whether its server was reached. */
async function reconcileLive(shared: Shared, db: PgDatabaseObject, ctx: Ctx) {
  const labels = { namespace: ctx.namespace ?? "", name: ctx.name };
  try {
    const pass = passOf(shared, db, ctx);
    const { status, existed } = await ensureDatabase(pass);
    const changes = await applyChanges(pass, status, existed);
    const backups = await runSchedules(pass, status);
    await reportReady(pass, changes, backups);
    shared.metrics?.up.set(labels, 1);
    return backups.wait;
  } catch (error) {
    const reason = (error as { reason?: string }).reason;
    if (reason === "ServerUnreachable" || reason === "AuthenticationFailed")
      shared.metrics?.up.set(labels, 0);
    throw error;
  }
}
