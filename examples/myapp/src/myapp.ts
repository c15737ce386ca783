import { after, controller, dependents, done, type ObjectOf } from "kubeloop";
import { Deployment, Service } from "kubeloop/k8s";
import { isDeleting } from "kubeloop/resources";
import { OPERATOR_NAME, reconcileApp, reportWaiting } from "./app.ts";
import {
  CRD_POLL,
  DATABASE_POLL,
  databaseEnv,
  databaseFor,
  databaseReady,
  databaseWaiting,
  PgDatabase,
  type PgDatabaseObject,
  SERVER_MISSING,
} from "./database.ts";
import { MyApp } from "./resources.ts";

export type MyAppObject = ObjectOf<typeof MyApp>;

/** With a database, its health is read (not watched): look again this often once all is well. */
const DATABASE_RECHECK = "1m";

/**
 * The children that come and go with the spec: a PgDatabase while `spec.database.enabled` (and
 * while its CRD is installed). Switched off, the PgDatabase this MyApp made is deleted.
 */
export const myAppDependents = dependents(MyApp, {
  condition: false, // MyApp reports DatabaseReady and Ready itself
  poll: DATABASE_POLL,
  recheckServed: CRD_POLL,
}).child("database", PgDatabase, databaseFor, {
  when: (app) => app.spec.database?.enabled === true && Boolean(app.spec.database.serverSecret),
  activeWhenServed: true,
  ready: databaseReady,
});

/**
 * MyApp (release 2, `v1`) → a Deployment and a Service it owns, rolled out with automatic rollback
 * to the last healthy version (app.ts). The Deployment's own updates (observedGeneration, its
 * Progressing condition, available replicas) wake the reconcile: that is the rollout signal. With
 * `spec.database.enabled`, a PgDatabase comes first (a declared dependent, database.ts): the pods get
 * its credentials, and the app is Ready only when both are.
 */
export const myAppController = controller(MyApp)
  .named(OPERATOR_NAME)
  .owns(Deployment)
  .owns(Service)
  // PgDatabases are read and created by name, and listed by their ApplySet label, not watched (database.ts says why).
  .permits({
    apiGroups: ["db.example.com"],
    resources: ["pgdatabases"],
    verbs: ["get", "list", "create", "update", "patch", "delete"],
  })
  .reconcile(async (app, ctx) => {
    // The Deployment, Service and PgDatabase go with it (garbage collection): nothing to apply.
    if (ctx.deleted || isDeleting(app)) return done();
    const database = app.spec.database;
    if (database?.enabled && !database.serverSecret) {
      await reportWaiting(app, ctx, SERVER_MISSING);
      return after(CRD_POLL);
    }
    const children = await myAppDependents.reconcile(app, ctx);
    if (children.waitingFor) {
      await reportWaiting(app, ctx, databaseWaiting(children.waitingFor));
      return children.result;
    }
    const db = children.applied.one<PgDatabaseObject>("database");
    if (!db) return reconcileApp(app, ctx);
    const result = await reconcileApp(app, ctx, {
      env: databaseEnv(db),
      conditions: [
        {
          type: "DatabaseReady",
          status: true,
          reason: "Ready",
          message: "PgDatabase is ready; DATABASE_URL wired",
        },
      ],
    });
    return result.kind === "done" ? after(DATABASE_RECHECK) : result;
  });
