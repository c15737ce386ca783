import { Counter, Gauge, type Registry } from "prom-client";

/**
 * Per-database metrics, in the manager's registry (served on its /metrics beside
 * controller-runtime's). The shipped alerting rules (config/prometheus/) are written against these
 * names, and their tests check that the operator really exports them.
 */
export class PgDatabaseMetrics {
  readonly up: Gauge<"namespace" | "name">;
  readonly sizeBytes: Gauge<"namespace" | "name">;
  readonly connections: Gauge<"namespace" | "name">;
  readonly connectionLimit: Gauge<"namespace" | "name">;
  readonly lastBackupTimestamp: Gauge<"namespace" | "name">;
  readonly lastBackupDuration: Gauge<"namespace" | "name">;
  readonly lastBackupSize: Gauge<"namespace" | "name">;
  readonly backupFailures: Counter<"namespace" | "name">;
  readonly verificationFailed: Gauge<"namespace" | "name">;

  constructor(registry: Registry) {
    const labelNames = ["namespace", "name"] as const;
    const registers = [registry];
    this.up = new Gauge({
      name: "pgdatabase_up",
      help: "1 when the last reconcile reached the database's server, 0 when it could not (unreachable, credentials refused).",
      labelNames,
      registers,
    });
    this.sizeBytes = new Gauge({
      name: "pgdatabase_database_size_bytes",
      help: "The database's size on disk.",
      labelNames,
      registers,
    });
    this.connections = new Gauge({
      name: "pgdatabase_connections",
      help: "Connections open to the database (the operator's own left out).",
      labelNames,
      registers,
    });
    this.connectionLimit = new Gauge({
      name: "pgdatabase_connection_limit",
      help: "The database's connection limit (-1: none).",
      labelNames,
      registers,
    });
    this.lastBackupTimestamp = new Gauge({
      name: "pgdatabase_last_backup_timestamp_seconds",
      help: "When the last completed backup finished (Unix time).",
      labelNames,
      registers,
    });
    this.lastBackupDuration = new Gauge({
      name: "pgdatabase_last_backup_duration_seconds",
      help: "How long the last completed backup took.",
      labelNames,
      registers,
    });
    this.lastBackupSize = new Gauge({
      name: "pgdatabase_last_backup_size_bytes",
      help: "The size of the last completed backup's file.",
      labelNames,
      registers,
    });
    this.backupFailures = new Counter({
      name: "pgdatabase_backup_failures_total",
      help: "Backup attempts that failed.",
      labelNames,
      registers,
    });
    this.verificationFailed = new Gauge({
      name: "pgdatabase_backup_verification_failed",
      help: "1 when the latest backup failed its last verification (checksum or restore), else 0.",
      labelNames,
      registers,
    });
  }

  /** Forgets a deleted database's series. */
  forget(namespace: string, name: string): void {
    for (const metric of [
      this.up,
      this.sizeBytes,
      this.connections,
      this.connectionLimit,
      this.lastBackupTimestamp,
      this.lastBackupDuration,
      this.lastBackupSize,
      this.backupFailures,
      this.verificationFailed,
    ])
      metric.remove({ namespace, name });
  }
}
