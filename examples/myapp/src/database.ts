import { type KubeObject, type ReconcileContext, resourceType } from "kubeloop";
import { NotFound, UnknownKind } from "kubeloop/client";
import type { AppView, Dependencies } from "./app.ts";

/**
 * Composition across operators: with `spec.database.enabled`, a MyApp owns a PgDatabase (the PgDatabase
 * operator's resource, `db.example.com/v1alpha1`), waits until it is Ready, and wires the
 * credentials Secret the PgDatabase operator writes into its pods (`DATABASE_URL` from its `uri` key).
 * Deleting the MyApp deletes the PgDatabase (owner reference), and the PgDatabase operator applies its
 * `deletionPolicy` (default: a final snapshot, then drop).
 *
 * MyApp depends on PgDatabase's API, not its code: the few fields it reads are typed here. It reads
 * PgDatabases rather than watching them, because a watch of a kind whose CRD is not installed would
 * keep the manager's caches from syncing (every MyApp, with a database or not, would stall): a
 * missing CRD is instead a `DatabaseReady=False` condition naming it, looked at again every minute.
 */

interface PgDatabaseObject extends KubeObject {
  spec: { server: { secretName: string }; [field: string]: unknown };
  status?: {
    phase?: string;
    credentialsSecret?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

export const PgDatabase = resourceType<PgDatabaseObject>("db.example.com/v1alpha1", "PgDatabase", {
  plural: "pgdatabases",
  namespaced: true,
});
export const PGDATABASE_CRD = "pgdatabases.db.example.com";

/** While the database comes up, look again this often (its status is read, not watched). */
const DATABASE_POLL = "3s";
/** A missing CRD is installed by a person: once a minute is soon enough and costs nothing. */
const CRD_POLL = "1m";

export type DatabaseState =
  | { ready: true; env: Dependencies["env"] }
  | { ready: false; reason: string; message: string; retryAfter: string };

export const databaseName = (app: AppView) => `${app.metadata?.name ?? ""}-db`;

/** Ensures the app's PgDatabase and reports whether it is usable, with the env that wires it. */
export async function ensureDatabase<T extends KubeObject>(
  app: AppView,
  ctx: ReconcileContext<T>,
): Promise<DatabaseState> {
  const database = app.spec.database;
  if (!database?.serverSecret)
    return {
      ready: false,
      reason: "DatabaseServerMissing",
      message:
        "spec.database.serverSecret must name the PgDatabase server Secret (host, port, username, password)",
      retryAfter: CRD_POLL,
    };
  try {
    await ctx.client.resolve(PgDatabase);
  } catch (error) {
    if (!(error instanceof UnknownKind)) throw error;
    return {
      ready: false,
      reason: "PgDatabaseNotInstalled",
      message: `spec.database.enabled needs the PgDatabase operator, but its CRD (${PGDATABASE_CRD}) is not installed: install it, or set spec.database.enabled to false`,
      retryAfter: CRD_POLL,
    };
  }
  const name = databaseName(app);
  // The operator's own fields only: what the PgDatabase operator defaults stays its own.
  await ctx.apply({
    apiVersion: PgDatabase.apiVersion,
    kind: PgDatabase.kind,
    metadata: {
      name,
      namespace: app.metadata?.namespace ?? "",
      labels: { "app.kubernetes.io/part-of": app.metadata?.name ?? "" },
    },
    spec: { server: { secretName: database.serverSecret } },
  });
  let db: PgDatabaseObject;
  try {
    db = await ctx.client.get(PgDatabase, name, { namespace: app.metadata?.namespace ?? "" });
  } catch (error) {
    if (!(error instanceof NotFound)) throw error;
    return {
      ready: false,
      reason: "DatabaseCreating",
      message: `PgDatabase ${name} is being created`,
      retryAfter: DATABASE_POLL,
    };
  }
  const ready = db.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status !== "True" || !db.status?.credentialsSecret)
    return {
      ready: false,
      reason: "DatabaseNotReady",
      message: `PgDatabase ${name} is not ready${ready?.reason ? ` (${ready.reason}${ready.message ? `: ${ready.message}` : ""})` : ""}`,
      retryAfter: DATABASE_POLL,
    };
  return {
    ready: true,
    env: [
      {
        name: "DATABASE_URL",
        valueFrom: { secretKeyRef: { name: db.status.credentialsSecret, key: "uri" } },
      },
    ],
  };
}
