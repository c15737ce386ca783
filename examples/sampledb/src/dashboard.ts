// A Grafana dashboard of one SampleDB at a time (variables: datasource, namespace, name) on the
// metrics of metrics.ts, beside the operator's own dashboard that `kubeloop generate` writes. The
// committed config/grafana/sampledb-dashboard.json is `dashboard()` (regenerate:
// `node examples/sampledb/src/dashboard.ts && npx biome format --write <it>`); a test keeps
// them equal and runs every query against a Prometheus scraping the operator.

const scope = 'namespace="$namespace", name="$name"';

interface Panel {
  title: string;
  targets: [expr: string, legend: string][];
  unit: string;
  description: string;
}

const PANELS: Panel[] = [
  {
    title: "Instances",
    targets: [
      [`sampledb_ready_instances{${scope}}`, "ready"],
      [`sampledb_instances{${scope}}`, "asked for"],
    ],
    unit: "short",
    description: "Ready instance pods, and spec.instances.",
  },
  {
    title: "Instances answering SQL",
    targets: [[`sampledb_instance_up{${scope}}`, "{{pod}} ({{role}})"]],
    unit: "short",
    description: "1 when the operator's SQL to the instance succeeded at the last reading.",
  },
  {
    title: "Replication lag (time)",
    targets: [[`sampledb_replication_lag_seconds{${scope}}`, "{{pod}}"]],
    unit: "s",
    description: "Per replica: since its last replayed commit, 0 when it has replayed all it received.",
  },
  {
    title: "Replication lag (bytes)",
    targets: [
      [`sampledb_replication_lag_bytes{${scope}}`, "{{pod}}"],
      [`sampledb_streaming_replicas{${scope}}`, "streaming replicas"],
    ],
    unit: "bytes",
    description: "WAL the primary wrote that each replica has not replayed yet.",
  },
  {
    title: "Connections",
    targets: [
      [`sampledb_connections{${scope}}`, "{{pod}}"],
      [`sampledb_max_connections{${scope}}`, "{{pod}} max"],
    ],
    unit: "short",
    description: "Client connections per instance, and max_connections.",
  },
  {
    title: "Database size",
    targets: [[`sampledb_database_size_bytes{${scope}}`, "size"]],
    unit: "bytes",
    description: "pg_database_size on the primary.",
  },
  {
    title: "Backup age",
    targets: [
      [`time() - sampledb_last_backup_timestamp_seconds{${scope}}`, "age"],
      [`2 * sampledb_backup_interval_seconds{${scope}}`, "alert threshold"],
    ],
    unit: "s",
    description: "Since the last completed backup; SampleDBBackupTooOld fires above two intervals.",
  },
  {
    title: "Failovers",
    targets: [
      [`increase(sampledb_failovers_total{${scope}}[1h])`, "promotions in the last hour"],
      [`time() - sampledb_last_failover_timestamp_seconds{${scope}}`, "seconds since the last"],
    ],
    unit: "short",
    description: "Replicas the operator promoted because the primary did not serve.",
  },
];

/** The dashboard (Grafana schema 39), two panels a row. */
export function dashboard(): object {
  const variable = (name: string, query: string) => ({
    name,
    type: "query",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana expands it.
    datasource: { type: "prometheus", uid: "${datasource}" },
    query: { query, refId: name },
    refresh: 2,
  });
  return {
    title: "SampleDB",
    uid: "sampledb",
    description: "One SampleDB's instances, replication, connections, size, backups and failovers.",
    tags: ["sampledb", "postgresql"],
    schemaVersion: 39,
    editable: true,
    time: { from: "now-1h", to: "now" },
    refresh: "30s",
    templating: {
      list: [
        { name: "datasource", type: "datasource", query: "prometheus", label: "Prometheus" },
        variable("namespace", "label_values(sampledb_instances, namespace)"),
        variable("name", 'label_values(sampledb_instances{namespace="$namespace"}, name)'),
      ],
    },
    panels: PANELS.map((panel, index) => ({
      id: index + 1,
      type: "timeseries",
      title: panel.title,
      description: panel.description,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana expands it.
      datasource: { type: "prometheus", uid: "${datasource}" },
      gridPos: { x: (index % 2) * 12, y: Math.floor(index / 2) * 8, w: 12, h: 8 },
      fieldConfig: { defaults: { unit: panel.unit }, overrides: [] },
      targets: panel.targets.map(([expr, legendFormat], target) => ({
        refId: String.fromCharCode(65 + target),
        expr,
        legendFormat,
      })),
    })),
  };
}

/** Every panel's queries, for a test to run. */
export const dashboardQueries = (): string[] =>
  PANELS.flatMap((panel) => panel.targets.map(([expr]) => expr));

/** The committed file's text. */
export const dashboardFile = (): string => `${JSON.stringify(dashboard(), null, 2)}\n`;

if (import.meta.main) {
  const { writeFileSync } = await import("node:fs");
  const out = new URL("../config/grafana/sampledb-dashboard.json", import.meta.url);
  writeFileSync(out, dashboardFile());
  process.stdout.write(`wrote ${out.pathname}\n`);
}
