import { type KubeObject, resourceType } from "kubeloop";
import type { Waiting } from "kubeloop/controller";
import type { AppView, Dependencies } from "./app.ts";

/**
 * Composition across operators: with `spec.database.enabled`, a MyApp owns a PgDatabase (the PgDatabase
 * operator's resource, `db.example.com/v1alpha1`), waits until it is Ready, and wires the
 * credentials Secret the PgDatabase operator writes into its pods (`DATABASE_URL` from its `uri` key).
 * The PgDatabase is a declared dependent (myapp.ts): switching the database off, or deleting the
 * MyApp, deletes it, and the PgDatabase operator applies its `deletionPolicy` (default: a final
 * snapshot, then drop).
 *
 * MyApp depends on PgDatabase's API, not its code: the few fields it reads are typed here. It reads
 * PgDatabases rather than watching them, because a watch of a kind whose CRD is not installed would
 * keep the manager's caches from syncing (every MyApp, with a database or not, would stall): a
 * missing CRD is instead a `DatabaseReady=False` condition naming it, looked at again every minute
 * (the dependent is active only while the kind is served).
 */

export interface PgDatabaseObject extends KubeObject {
  spec: { server: { secretName: string }; [field: string]: unknown };
  status?: {
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
export const POLL = "3s";
/** A missing CRD is installed by a person: once a minute is soon enough and costs nothing. */
export const CRD_POLL = "1m";

/** The PgDatabase a MyApp wants: the operator's own fields only (what PgDatabase defaults stays its own). */
export const databaseFor = (app: AppView) => ({
  apiVersion: PgDatabase.apiVersion,
  kind: PgDatabase.kind,
  metadata: {
    name: `${app.metadata?.name ?? ""}-db`,
    namespace: app.metadata?.namespace ?? "",
    labels: { "app.kubernetes.io/part-of": app.metadata?.name ?? "" },
  },
  spec: { server: { secretName: app.spec.database?.serverSecret ?? "" } },
});

/** Ready once the PgDatabase says Ready and names its credentials Secret; else why not. */
export function databaseReady(db: PgDatabaseObject): true | string {
  const ready = db.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status === "True" && db.status?.credentialsSecret) return true;
  const detail = ready?.reason ? ` (${ready.reason}${ready.message ? `: ${ready.message}` : ""})` : "";
  return `PgDatabase ${db.metadata?.name ?? ""} is not ready${detail}`;
}

/** What a ready database gives the app: the env that wires its credentials, and `DatabaseReady`. */
export const wired = (db: PgDatabaseObject): Dependencies => ({
  env: [
    { name: "DATABASE_URL", valueFrom: { secretKeyRef: { name: db.status?.credentialsSecret, key: "uri" } } },
  ],
  conditions: [
    {
      type: "DatabaseReady",
      status: true,
      reason: "Ready",
      message: "PgDatabase is ready; DATABASE_URL wired",
    },
  ],
});

/** The `DatabaseReady` condition while the database dependent waits (its kind not served, or not ready). */
export const waiting = (waiting: Waiting) =>
  waiting.reason === "NotServed"
    ? {
        type: "DatabaseReady",
        reason: "PgDatabaseNotInstalled",
        message: `spec.database.enabled needs the PgDatabase operator, but its CRD (${PGDATABASE_CRD}) is not installed: install it, or set spec.database.enabled to false`,
      }
    : { type: "DatabaseReady", reason: "DatabaseNotReady", message: waiting.detail };

/** A database asked for without the Secret that says where its server is. */
export const SERVER_MISSING = {
  type: "DatabaseReady",
  reason: "DatabaseServerMissing",
  message:
    "spec.database.serverSecret must name the PgDatabase server Secret (host, port, username, password)",
};
