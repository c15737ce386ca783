import { stringify } from "yaml";

// Alerting rules on the metrics of metrics.ts. The committed config/prometheus/sampledb-rules.yaml
// is `rulesFile()` (regenerate: `node examples/sampledb/src/alerts.ts`); a test keeps them equal.

/** An alerting rule as Prometheus' rule files and the PrometheusRule CRD take it. */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: "warning" | "critical" };
  annotations: { summary: string; description: string };
}

/** How long, and how much, before each alert fires. */
export interface AlertThresholds {
  /** An instance not answering the operator's SQL for this long. Default `1m`. */
  instanceDownFor: string;
  /** A replica this many seconds behind… Default 30. */
  lagSeconds: number;
  /** …for this long. Default `2m`. */
  lagFor: string;
  /** Fewer standbys streaming than the SampleDB's replicas for this long. Default `2m`. */
  notStreamingFor: string;
  /** The last backup older than this many backup intervals… Default 2: two backups missed. */
  backupIntervals: number;
  /** …for this long. Default `10m`. */
  backupTooOldFor: string;
  /** How long the failover alert stays after a promotion, in seconds. Default 900. */
  failoverWindowSeconds: number;
  /** Connections above this share of `max_connections`… Default 0.9. */
  connectionsRatio: number;
  /** …for this long. Default `5m`. */
  connectionsFor: string;
}

export const DEFAULT_THRESHOLDS: AlertThresholds = {
  instanceDownFor: "1m",
  lagSeconds: 30,
  lagFor: "2m",
  notStreamingFor: "2m",
  backupIntervals: 2,
  backupTooOldFor: "10m",
  failoverWindowSeconds: 900,
  connectionsRatio: 0.9,
  connectionsFor: "5m",
};

const runbook = (alert: string) => ` Runbook: examples/sampledb/runbooks.md, section ${alert}.`;
const db = "SampleDB {{ $labels.namespace }}/{{ $labels.name }}";

/** The SampleDB alerts, with the defaults or other thresholds (a test's shorter ones). */
export function alertRules(overrides: Partial<AlertThresholds> = {}): { name: string; rules: AlertRule[] }[] {
  const t = { ...DEFAULT_THRESHOLDS, ...overrides };
  const rule = (r: {
    alert: string;
    expr: string;
    for?: string;
    severity: "warning" | "critical";
    summary: string;
    description: string;
  }): AlertRule => ({
    alert: r.alert,
    expr: r.expr,
    ...(r.for ? { for: r.for } : {}),
    labels: { severity: r.severity },
    annotations: { summary: `${db}: ${r.summary}`, description: r.description + runbook(r.alert) },
  });
  return [
    {
      name: "sampledb",
      rules: [
        rule({
          alert: "SampleDBInstanceDown",
          expr: "sampledb_instance_up == 0",
          for: t.instanceDownFor,
          severity: "critical",
          summary: "instance {{ $labels.pod }} ({{ $labels.role }}) does not answer",
          description: `The operator's SQL to the instance has failed for ${t.instanceDownFor}: its pod is missing, not running, or PostgreSQL refuses or does not answer. A primary down is a failover the operator makes once a replica is Ready.`,
        }),
        rule({
          alert: "SampleDBReplicationLagHigh",
          expr: `sampledb_replication_lag_seconds > ${t.lagSeconds}`,
          for: t.lagFor,
          severity: "warning",
          summary: "replica {{ $labels.pod }} is {{ $value | humanizeDuration }} behind",
          description: `The replica has replayed nothing newer for more than ${t.lagSeconds} s while WAL waits: a failover now would lose or wait for it.`,
        }),
        rule({
          alert: "SampleDBReplicaNotStreaming",
          expr: "sampledb_streaming_replicas < sampledb_instances - 1",
          for: t.notStreamingFor,
          severity: "warning",
          summary: "{{ $value }} replica(s) stream from the primary, fewer than the SampleDB has",
          description: `The primary's pg_stat_replication has had fewer streaming standbys than the SampleDB's replicas for ${t.notStreamingFor}: a replica is down, still copying, or cannot connect.`,
        }),
        rule({
          alert: "SampleDBBackupTooOld",
          expr: `time() - sampledb_last_backup_timestamp_seconds > ${t.backupIntervals} * sampledb_backup_interval_seconds`,
          for: t.backupTooOldFor,
          severity: "warning",
          summary: "the last backup is {{ $value | humanizeDuration }} old",
          description: `No backup has completed for ${t.backupIntervals} of the schedule's intervals: backup Jobs fail, or their pods cannot run.`,
        }),
        rule({
          alert: "SampleDBFailover",
          expr: `time() - sampledb_last_failover_timestamp_seconds < ${t.failoverWindowSeconds}`,
          severity: "warning",
          summary: "the operator promoted a replica {{ $value | humanizeDuration }} ago",
          description: `The primary stopped serving and the operator named a replica primary (status.primary). The alert stays ${t.failoverWindowSeconds} s.`,
        }),
        rule({
          alert: "SampleDBConnectionsNearLimit",
          expr: `sampledb_connections / sampledb_max_connections > ${t.connectionsRatio}`,
          for: t.connectionsFor,
          severity: "warning",
          summary: "{{ $labels.pod }} uses {{ $value | humanizePercentage }} of max_connections",
          description: `New connections will soon be refused. Raise spec.parameters.max_connections (a rolling restart) or pool the application's connections.`,
        }),
        rule({
          alert: "SampleDBSplitBrain",
          expr: "count by (namespace, name) (sampledb_instance_in_recovery == 0) > 1",
          for: "1m",
          severity: "critical",
          summary: "{{ $value }} instances take writes",
          description:
            "More than one instance is out of recovery: writes may go to a primary the Services no longer select.",
        }),
      ],
    },
  ];
}

/** The committed rules file: the defaults' rules, with a header. */
export function rulesFile(): string {
  return `# Generated from src/alerts.ts (\`node examples/sampledb/src/alerts.ts\`). Do not edit.
# Alerting rules on the SampleDB operator's metrics (src/metrics.ts): load them into Prometheus
# (rule_files), or wrap the groups in a PrometheusRule. Tested by sampledb-rules.test.yaml.
${stringify({ groups: alertRules() }, { lineWidth: 0 })}`;
}

if (import.meta.main) {
  const { writeFileSync } = await import("node:fs");
  const out = new URL("../config/prometheus/sampledb-rules.yaml", import.meta.url);
  writeFileSync(out, rulesFile());
  process.stdout.write(`wrote ${out.pathname}\n`);
}
