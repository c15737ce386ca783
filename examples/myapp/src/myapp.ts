import { after, controller, dependents, done, type ObjectOf } from "kubeloop";
import { Deployment, Service } from "kubeloop/k8s";
import { isDeleting } from "kubeloop/resources";
import { OPERATOR_NAME, reconcileApp, reportWaiting } from "./app.ts";
import * as db from "./database.ts";
import { MyApp } from "./resources.ts";

export type MyAppObject = ObjectOf<typeof MyApp>;

/** With a database, its health is read (not watched): look again this often once all is well. */
const DATABASE_RECHECK = "1m";

/**
 * The children that come and go with the spec: a PgDatabase while `spec.database.enabled` (and
 * while its CRD is installed). Switched off, the PgDatabase this MyApp made is deleted.
 */
export const myAppDependents = dependents(MyApp, {
  condition: false,
  poll: db.POLL,
  recheckServed: db.CRD_POLL,
}).child("database", db.PgDatabase, db.databaseFor, {
  when: (app) => app.spec.database?.enabled === true,
  activeWhenServed: true, // PgDatabases are not watched: database.ts says why
  ready: db.databaseReady,
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
  .dependents(myAppDependents)
  .reconcile(async (app, ctx) => {
    // The Deployment, Service and PgDatabase go with it (garbage collection): nothing to apply.
    if (ctx.gone || isDeleting(app)) return done();
    if (app.spec.database?.enabled && !app.spec.database.serverSecret) {
      await reportWaiting(app, ctx, db.SERVER_MISSING);
      return after(db.CRD_POLL);
    }
    const children = await myAppDependents.reconcile(app, ctx);
    if (children.waitingFor) {
      await reportWaiting(app, ctx, db.waiting(children.waitingFor));
      return children.result;
    }
    const database = children.applied.one<db.PgDatabaseObject>("database");
    const result = await reconcileApp(app, ctx, database && db.wired(database));
    return database && result.kind === "done" ? after(DATABASE_RECHECK) : result;
  });
