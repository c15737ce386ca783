import type { core } from "kubeloop/k8s";
import { Counter, Gauge, type Registry } from "prom-client";
import { intervalMs } from "./backup.ts";
import { names, type SampleDBObject } from "./objects.ts";
import { type InstanceReading, readInstance } from "./probe.ts";

/**
 * Per-SampleDB metrics on the manager's /metrics, beside controller-runtime's:
 *
 * | metric | labels | from |
 * |---|---|---|
 * | `sampledb_instances` | namespace, name | `spec.instances` |
 * | `sampledb_ready_instances` | namespace, name | Ready instance pods |
 * | `sampledb_instance_up` | namespace, name, pod, role | 1 when the instance answered the operator's SQL, else 0 (every expected instance has a series) |
 * | `sampledb_instance_in_recovery` | namespace, name, pod | `pg_is_in_recovery()`: 1 on a replica, 0 on a primary |
 * | `sampledb_connections` | namespace, name, pod | client connections (`pg_stat_activity`, the operator's left out) |
 * | `sampledb_max_connections` | namespace, name, pod | `max_connections` |
 * | `sampledb_replication_lag_seconds` | namespace, name, pod | on each replica: since its last replayed commit, 0 when it has replayed all it received |
 * | `sampledb_replication_lag_bytes` | namespace, name, pod | on the primary, per replica: WAL written but not yet replayed there |
 * | `sampledb_streaming_replicas` | namespace, name | standbys streaming from the primary (`pg_stat_replication`) |
 * | `sampledb_database_size_bytes` | namespace, name | `pg_database_size` on the primary |
 * | `sampledb_last_backup_timestamp_seconds` | namespace, name | `status.lastBackup` |
 * | `sampledb_backup_interval_seconds` | namespace, name | `spec.backup.schedule` |
 * | `sampledb_last_failover_timestamp_seconds` | namespace, name | `status.promotedAt` (survives an operator restart) |
 * | `sampledb_failovers_total` | namespace, name | promotions this operator process made |
 *
 * The instance label is `pod` (Prometheus keeps `instance` for the scrape target's address).
 * The Kubernetes side is recorded by the reconciler ({@link SampleDBMetrics.observe}). The SQL side
 * is read in the background when a scrape finds the last reading older than `maxAgeMs` (so at most
 * once per `maxAgeMs` however many scrapers ask), each instance by its pod's address with the
 * superuser (as the operator's Jobs connect), with a timeout; scrapes get the last reading.
 *
 * @example
 * ```ts
 * const manager = new Manager();
 * sampleDBMetrics.register(manager.metrics.registry);
 * await manager.add(sampleDBController).start();
 * ```
 */
export class SampleDBMetrics {
  private readonly byDatabase = ["namespace", "name"] as const;
  private readonly byInstance = ["namespace", "name", "pod"] as const;
  private readonly targets = new Map<string, Target>();
  private maxAgeMs = 10_000;
  private timeoutMs = 3_000;
  private readAt = 0;
  private reading: Promise<void> | undefined;

  private readonly refresh = () => this.read();
  readonly instances = this.gauge("sampledb_instances", "Instances the SampleDB asks for (spec.instances).");
  readonly readyInstances = this.gauge("sampledb_ready_instances", "Instance pods that are Ready.");
  readonly lastBackup = this.gauge(
    "sampledb_last_backup_timestamp_seconds",
    "When the last backup completed (Unix time).",
  );
  readonly backupInterval = this.gauge(
    "sampledb_backup_interval_seconds",
    "The backup schedule's interval: a backup older than a few of them is overdue.",
  );
  readonly lastFailover = this.gauge(
    "sampledb_last_failover_timestamp_seconds",
    "When the operator last named a new primary (Unix time).",
  );
  readonly failovers = new Counter({
    name: "sampledb_failovers_total",
    help: "Replicas this operator process promoted because the primary did not serve.",
    labelNames: this.byDatabase,
    registers: [],
  });
  readonly up = new Gauge({
    name: "sampledb_instance_up",
    help: "1 when the instance answered the operator's SQL, 0 when it did not (down, unreachable, refused).",
    labelNames: [...this.byInstance, "role"] as const,
    registers: [],
    collect: this.refresh,
  });
  readonly inRecovery = this.instanceGauge(
    "sampledb_instance_in_recovery",
    "1 when the instance is a standby (pg_is_in_recovery), 0 when it takes writes.",
  );
  readonly connections = this.instanceGauge(
    "sampledb_connections",
    "Client connections to the instance, the operator's own left out.",
  );
  readonly maxConnections = this.instanceGauge("sampledb_max_connections", "The instance's max_connections.");
  readonly lagSeconds = this.instanceGauge(
    "sampledb_replication_lag_seconds",
    "On a replica: seconds since the last commit it replayed, 0 when it has replayed all it received.",
  );
  readonly lagBytes = this.instanceGauge(
    "sampledb_replication_lag_bytes",
    "Per replica, as the primary sees it: WAL bytes written on the primary not yet replayed there.",
  );
  readonly streamingReplicas = this.gauge(
    "sampledb_streaming_replicas",
    "Standbys streaming from the primary (pg_stat_replication, state streaming).",
    this.refresh,
  );
  readonly databaseSize = this.gauge(
    "sampledb_database_size_bytes",
    "The size of the SampleDB's database on the primary (pg_database_size).",
    this.refresh,
  );

  /**
   * Serves these metrics from `registry` (the manager's: `manager.metrics.registry`). `maxAgeMs`
   * (default 10 s) is how long an SQL reading is reused; `timeoutMs` (default 3 s) bounds each
   * instance's connection and queries.
   */
  register(registry: Registry, options: { maxAgeMs?: number; timeoutMs?: number } = {}): this {
    this.maxAgeMs = options.maxAgeMs ?? this.maxAgeMs;
    this.timeoutMs = options.timeoutMs ?? this.timeoutMs;
    for (const metric of this.all()) registry.registerMetric(metric);
    return this;
  }

  /** Records what the reconciler knows of `db`; its SQL side is read when a scrape next asks. */
  observe(db: SampleDBObject, seen: Observation): void {
    const { namespace, name } = names(db);
    const labels = { namespace, name };
    this.targets.set(key(db), { db, ...seen });
    this.instances.set(labels, db.spec.instances);
    this.readyInstances.set(labels, seen.readyInstances);
    this.failovers.inc(labels, 0); // a series from the start: increase() sees the first failover
    setOrRemove(this.lastBackup, labels, seen.lastBackup && Date.parse(seen.lastBackup) / 1000);
    setOrRemove(this.lastFailover, labels, seen.promotedAt && Date.parse(seen.promotedAt) / 1000);
    setOrRemove(this.backupInterval, labels, db.spec.backup && intervalMs(db.spec.backup.schedule) / 1000);
  }

  /** Counts a promotion of a replica. */
  failedOver(db: SampleDBObject): void {
    const { namespace, name } = names(db);
    this.failovers.inc({ namespace, name });
  }

  /** Drops a deleted SampleDB's series. */
  forget(namespace: string, name: string): void {
    this.targets.delete(`${namespace}/${name}`);
    for (const metric of [this.instances, this.readyInstances, this.lastBackup, this.backupInterval])
      metric.remove({ namespace, name });
    this.lastFailover.remove({ namespace, name });
    this.failovers.remove({ namespace, name });
    this.readAt = 0; // the SQL-side series go at the next scrape
  }

  /**
   * Starts a reading of every instance when the last is older than `maxAgeMs` and none is under
   * way, without waiting for it: a scrape is served at once from the last reading, so an instance
   * that hangs never makes the scrape time out (which would turn every series stale).
   */
  private read(): void {
    if (this.reading || Date.now() - this.readAt < this.maxAgeMs) return;
    this.reading = this.readAll()
      // An instance's failure is its `up` 0; anything else is a bug, reported without a crash.
      .catch((error: unknown) => process.emitWarning(`SampleDB metrics: ${String(error)}`))
      .finally(() => {
        this.readAt = Date.now();
        this.reading = undefined;
      });
  }

  private async readAll(): Promise<void> {
    const targets = [...this.targets.values()];
    const readings = await Promise.all(targets.map((target) => this.readTarget(target)));
    // Replaced as a whole: instances gone, renamed roles and deleted SampleDBs leave no series.
    for (const metric of this.sqlMetrics()) metric.reset();
    targets.forEach((target, index) => {
      // One deleted while it was read is forgotten, not published again.
      if (this.targets.has(key(target.db))) this.publish(target, readings[index] ?? new Map());
    });
  }

  private async readTarget(target: Target): Promise<Map<string, InstanceReading | undefined>> {
    const pods = new Map(target.pods.map((pod) => [pod.metadata?.name ?? "", pod]));
    const entries = await Promise.all(
      expectedInstances(target.db).map(async (instance) => {
        const ip = pods.get(instance)?.status?.podIP;
        if (!ip) return [instance, undefined] as const;
        const reading = await readInstance({
          host: ip,
          password: target.superuserPassword,
          database: target.db.spec.database,
          timeoutMs: this.timeoutMs,
        }).catch(() => undefined);
        return [instance, reading] as const;
      }),
    );
    return new Map(entries);
  }

  private publish(target: Target, readings: Map<string, InstanceReading | undefined>): void {
    const { namespace, name } = names(target.db);
    const addresses = new Map(target.pods.map((pod) => [pod.status?.podIP, pod.metadata?.name ?? ""]));
    for (const [instance, reading] of readings) {
      const labels = { namespace, name, pod: instance };
      const role = instance === target.primary ? "primary" : "replica";
      this.up.set({ ...labels, role }, reading ? 1 : 0);
      if (!reading) continue;
      this.inRecovery.set(labels, reading.inRecovery ? 1 : 0);
      this.connections.set(labels, reading.connections);
      this.maxConnections.set(labels, reading.maxConnections);
      if (reading.lagSeconds !== undefined) this.lagSeconds.set(labels, reading.lagSeconds);
      if (instance !== target.primary || reading.inRecovery) continue;
      this.databaseSize.set({ namespace, name }, reading.databaseSizeBytes);
      const streaming = reading.standbys.filter((standby) => standby.state === "streaming");
      this.streamingReplicas.set({ namespace, name }, streaming.length);
      for (const standby of reading.standbys) {
        const replica = addresses.get(standby.address);
        if (replica) this.lagBytes.set({ namespace, name, pod: replica }, standby.lagBytes);
      }
    }
  }

  private gauge(metric: string, help: string, collect?: () => void) {
    return new Gauge({
      name: metric,
      help,
      labelNames: this.byDatabase,
      registers: [],
      ...(collect ? { collect } : {}),
    });
  }

  private instanceGauge(metric: string, help: string) {
    return new Gauge({
      name: metric,
      help,
      labelNames: this.byInstance,
      registers: [],
      collect: this.refresh,
    });
  }

  private sqlMetrics() {
    return [
      this.up,
      this.inRecovery,
      this.connections,
      this.maxConnections,
      this.lagSeconds,
      this.lagBytes,
      this.streamingReplicas,
      this.databaseSize,
    ];
  }

  private all() {
    return [
      this.instances,
      this.readyInstances,
      this.lastBackup,
      this.backupInterval,
      this.lastFailover,
      this.failovers,
      ...this.sqlMetrics(),
    ];
  }
}

/** What the reconciler knows of a SampleDB when it is done with it. */
export interface Observation {
  /** The instance the operator names primary. */
  primary: string;
  readyInstances: number;
  /** The SampleDB's instance pods (their addresses are where the SQL goes). */
  pods: core.Pod[];
  superuserPassword: string;
  lastBackup?: string | undefined;
  promotedAt?: string | undefined;
}

interface Target extends Observation {
  db: SampleDBObject;
}

const key = (db: SampleDBObject) => `${names(db).namespace}/${names(db).name}`;

/** The StatefulSet's pods the SampleDB asks for: each has a series, running or not. */
const expectedInstances = (db: SampleDBObject) =>
  Array.from({ length: db.spec.instances }, (_, ordinal) => `${names(db).name}-${ordinal}`);

function setOrRemove(
  gauge: Gauge<"namespace" | "name">,
  labels: { namespace: string; name: string },
  value: number | undefined | "" | false,
): void {
  if (typeof value === "number" && Number.isFinite(value)) gauge.set(labels, value);
  else gauge.remove(labels);
}

/** The operator's metrics: the controller records into it; main (or a test) registers it. */
export const sampleDBMetrics = new SampleDBMetrics();
