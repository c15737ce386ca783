import { createHash } from "node:crypto";
import type { batch } from "kubeloop/k8s";
import { names, oneShotJob, type SampleDBObject } from "./objects.ts";
import { literal } from "./sql.ts";

// Configuration changes, each the way PostgreSQL takes it: settings of `postmaster` context are read
// only at start, so they go on the server's command line in the pod template and the StatefulSet
// rolls the pods (highest ordinal first: replicas before the primary); the rest are written with
// ALTER SYSTEM on every instance and reloaded, by a Job, without a restart.

/** PostgreSQL 15's settings of context `postmaster` (`select name from pg_settings where context = 'postmaster'`) that users tune. */
const RESTART = new Set([
  "archive_mode",
  "autovacuum_freeze_max_age",
  "autovacuum_max_workers",
  "huge_pages",
  "max_connections",
  "max_files_per_process",
  "max_locks_per_transaction",
  "max_logical_replication_workers",
  "max_pred_locks_per_transaction",
  "max_prepared_transactions",
  "max_replication_slots",
  "max_wal_senders",
  "max_worker_processes",
  "shared_buffers",
  "shared_preload_libraries",
  "track_commit_timestamp",
  "wal_buffers",
  "wal_level",
  "wal_log_hints",
]);

export function needsRestart(name: string): boolean {
  return RESTART.has(name);
}

/** What a setting's name looks like: anything else would be SQL, not a name. */
const NAME = /^[a-z_][a-z0-9_.]*$/;

/**
 * Settings the operator sets itself on the primary with ALTER SYSTEM (replication.ts, sql.ts): a
 * user's value would fight it, so it is ignored, and the reload Job leaves these alone.
 */
const RESERVED = ["synchronous_standby_names", "default_transaction_read_only"];

/** The names in `spec.parameters` the operator owns (ignored, with a Warning event). */
export function reservedNames(db: SampleDBObject): string[] {
  return Object.keys(db.spec.parameters).filter((name) => RESERVED.includes(name));
}

/** The names in `spec.parameters` that are not setting names (ignored). */
export function invalidNames(db: SampleDBObject): string[] {
  return Object.keys(db.spec.parameters).filter((name) => !NAME.test(name));
}

const sorted = (parameters: Record<string, string>, restart: boolean) =>
  Object.entries(parameters)
    .filter(([name]) => NAME.test(name) && !RESERVED.includes(name) && needsRestart(name) === restart)
    .sort(([a], [b]) => a.localeCompare(b));

/** `-c name=value` arguments for the settings read at start. */
export function restartArguments(db: SampleDBObject): string[] {
  return sorted(db.spec.parameters, true).flatMap(([name, value]) => ["-c", `${name}=${value}`]);
}

/** The reloadable settings' hash: a new one means a reload Job to run. */
export function reloadHash(db: SampleDBObject): string {
  return createHash("sha256")
    .update(JSON.stringify(sorted(db.spec.parameters, false)))
    .digest("hex")
    .slice(0, 10);
}

/**
 * A Job that sets the reloadable settings on each instance (by its stable DNS name) with ALTER
 * SYSTEM, resets the others to the defaults (but for the operator's own), and reloads: idempotent,
 * so a retry redoes it.
 */
export function reloadJob(db: SampleDBObject): batch.Job {
  const { name, pods } = names(db);
  const sql = [
    `SELECT format('ALTER SYSTEM RESET %I', name) FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' AND name NOT IN (${RESERVED.map(literal).join(", ")})\\gexec`,
    ...sorted(db.spec.parameters, false).map(
      ([key, value]) => `ALTER SYSTEM SET ${key} = ${literal(value)};`,
    ),
    "SELECT pg_reload_conf();",
  ].join("\n");
  const hosts = Array.from({ length: db.spec.instances }, (_, i) => `${name}-${i}.${pods}`);
  const script = `for host in ${hosts.join(" ")}; do
  psql -h "$host" -U postgres -d postgres -v ON_ERROR_STOP=1 -Atq <<'SQL'
${sql}
SQL
done`;
  return oneShotJob(db, {
    name: `${name}-config-${reloadHash(db)}`,
    component: "init",
    script,
    backoffLimit: 6,
    ttlSeconds: 3_600,
  });
}
