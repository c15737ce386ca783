import pg from "pg";

// The operator's own SQL on one instance, for what cannot wait for a Job's pod to start: the
// failover (fencing the replaced primary, reading the replicas' positions, promoting one) and the
// primary's synchronous standbys. One connection as the superuser to the pod's address, closed
// again; short timeouts, so an instance on a lost node costs seconds, not a reconcile.

/** Set on the operator's connections, so they are not counted or terminated as the application's. */
export const OPERATOR_APPLICATION = "sampledb-operator";

export interface Instance {
  /** The pod's address. */
  host: string;
  password: string;
}

/** Runs `work` on one connection to `instance`; rejects when it cannot connect or a query fails. */
export async function withInstance<T>(
  instance: Instance,
  work: (client: pg.Client) => Promise<T>,
  timeoutMs = 3_000,
): Promise<T> {
  const client = new pg.Client({
    host: instance.host,
    port: 5432,
    user: "postgres",
    password: instance.password,
    database: "postgres",
    application_name: OPERATOR_APPLICATION,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  // A server that goes away mid-query emits 'error' on the client: the query's rejection says it.
  client.on("error", () => {});
  try {
    await client.connect();
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A setting as PostgreSQL quotes a literal. */
export const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * Fences a replaced primary: every new transaction read-only (written to postgresql.auto.conf, so
 * it holds across a restart of the server in the same pod), and the application's sessions ended,
 * so a client still holding one (or a Service not yet updated) gets an error, never a commit the
 * new primary lacks. Returns the sessions ended. The instance copies the new primary afresh when
 * its pod starts again (objects.ts), which drops the setting.
 */
export async function fence(instance: Instance): Promise<number> {
  return withInstance(instance, async (client) => {
    await client.query("ALTER SYSTEM SET default_transaction_read_only = on");
    await client.query("SELECT pg_reload_conf()");
    const ended = await client.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> $1`,
      [OPERATOR_APPLICATION],
    );
    return ended.rowCount ?? 0;
  });
}

/** How far a replica has received the primary's WAL (bytes from the start), to promote the furthest. */
export async function receivedBytes(instance: Instance): Promise<number> {
  return withInstance(instance, async (client) => {
    const { rows } = await client.query<{ received: number | null }>(
      `SELECT pg_wal_lsn_diff(coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), '0/0')::float8 AS received`,
    );
    return rows[0]?.received ?? 0;
  });
}

/** What the operator reads from the primary each reconcile. */
export interface PrimaryState {
  inRecovery: boolean;
  synchronousStandbyNames: string;
  /** The standbys streaming from it, by their application_name (the pod's name). */
  streaming: string[];
}

export async function readPrimary(instance: Instance): Promise<PrimaryState> {
  return withInstance(instance, async (client) => {
    const { rows } = await client.query<{ in_recovery: boolean; names: string; streaming: string[] }>(
      `SELECT pg_is_in_recovery() AS in_recovery, current_setting('synchronous_standby_names') AS names,
       array(SELECT application_name FROM pg_stat_replication WHERE state = 'streaming' ORDER BY 1) AS streaming`,
    );
    const row = rows[0];
    if (!row) throw new Error(`${instance.host}: the primary's query returned no row`);
    return { inRecovery: row.in_recovery, synchronousStandbyNames: row.names, streaming: row.streaming };
  });
}

/** Promotes a server in recovery, waiting (up to 30 s) until it accepts writes. */
export async function promote(instance: Instance): Promise<void> {
  await withInstance(
    instance,
    async (client) => {
      const { rows } = await client.query<{ promoted: boolean }>("SELECT pg_promote(true, 30) AS promoted");
      if (!rows[0]?.promoted) throw new Error(`${instance.host}: pg_promote did not finish in 30 s`);
    },
    35_000,
  );
}

/** Sets synchronous_standby_names on the primary, without a restart (ALTER SYSTEM and a reload). */
export async function setStandbyNames(instance: Instance, value: string): Promise<void> {
  await withInstance(instance, async (client) => {
    await client.query(`ALTER SYSTEM SET synchronous_standby_names = ${literal(value)}`);
    await client.query("SELECT pg_reload_conf()");
  });
}
