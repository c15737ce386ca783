import pg from "pg";
import { OPERATOR_APPLICATION } from "./sql.ts";

// What the operator reads from one PostgreSQL instance for its metrics: one connection as the
// superuser to the pod's own address (a Service would pick an instance for us; lag and connections
// are per instance), two queries, closed again.

/** Set on the operator's own connections, so they are not counted as the application's. */
export const PROBE_APPLICATION = "sampledb-operator-metrics";

/** One instance, as its own server reports it. */
export interface InstanceReading {
  inRecovery: boolean;
  /** Client connections, the operator's own (application_name `sampledb-operator...`) left out. */
  connections: number;
  maxConnections: number;
  /**
   * On a replica: seconds since the last replayed transaction's commit, 0 when it has replayed
   * all it received (CloudNativePG's formula: an idle primary is not lag). Undefined on a primary.
   */
  lagSeconds?: number;
  /** `pg_database_size` of the SampleDB's database (0 while it does not exist). */
  databaseSizeBytes: number;
  /** On a primary: each connected standby (pg_stat_replication), by its address. */
  standbys: { address: string; state: string; lagBytes: number }[];
}

export interface ProbeTarget {
  host: string;
  password: string;
  database: string;
  timeoutMs: number;
}

const INSTANCE_SQL = `select
  pg_is_in_recovery() as in_recovery,
  (select count(*) from pg_stat_activity
    where backend_type = 'client backend' and application_name not like $2 || '%')::int as connections,
  current_setting('max_connections')::int as max_connections,
  (case when not pg_is_in_recovery() then null
        when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
        else coalesce(extract(epoch from now() - pg_last_xact_replay_timestamp()), 0) end)::float8 as lag_seconds,
  coalesce((select pg_database_size(datname) from pg_database where datname = $1), 0)::float8 as size_bytes`;

/** How far each standby's replay is behind what the primary has written, in bytes. */
const STANDBYS_SQL = `select host(client_addr) as address, state,
  coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::float8 as lag_bytes
  from pg_stat_replication where client_addr is not null`;

interface InstanceRow {
  in_recovery: boolean;
  connections: number;
  max_connections: number;
  lag_seconds: number | null;
  size_bytes: number;
}

/** Reads `target`; rejects when the server cannot be reached, refuses us, or is too slow. */
export async function readInstance(target: ProbeTarget): Promise<InstanceReading> {
  const client = new pg.Client({
    host: target.host,
    port: 5432,
    user: "postgres",
    password: target.password,
    database: "postgres",
    application_name: PROBE_APPLICATION,
    connectionTimeoutMillis: target.timeoutMs,
    query_timeout: target.timeoutMs,
    statement_timeout: target.timeoutMs,
  });
  // A server that goes away mid-query emits 'error' on the client: the query's rejection says it.
  client.on("error", () => {});
  try {
    await client.connect();
    // Ours and the failover's and replication's (sql.ts: "sampledb-operator") alike.
    const row = (await client.query<InstanceRow>(INSTANCE_SQL, [target.database, OPERATOR_APPLICATION]))
      .rows[0];
    if (!row) throw new Error(`${target.host}: the instance query returned no row`);
    const standbys = row.in_recovery
      ? []
      : (await client.query<{ address: string; state: string; lag_bytes: number }>(STANDBYS_SQL)).rows.map(
          (s) => ({ address: s.address, state: s.state, lagBytes: s.lag_bytes }),
        );
    return {
      inRecovery: row.in_recovery,
      connections: row.connections,
      maxConnections: row.max_connections,
      ...(row.lag_seconds === null ? {} : { lagSeconds: row.lag_seconds }),
      databaseSizeBytes: row.size_bytes,
      standbys,
    };
  } finally {
    await client.end().catch(() => {});
  }
}
