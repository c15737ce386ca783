import { after, controller, done, type ObjectOf } from "kubeloop";
import { Deployment, Service } from "kubeloop/k8s";
import { OPERATOR_NAME, reconcileApp, reportWaiting } from "./app.ts";
import { ensureDatabase } from "./database.ts";
import { MyApp } from "./resources.ts";

export type MyAppObject = ObjectOf<typeof MyApp>;

/** With a database, its health is read (not watched): look again this often once all is well. */
const DATABASE_RECHECK = "1m";

/**
 * MyApp (release 2, `v1`) → a Deployment and a Service it owns, rolled out with automatic rollback
 * to the last healthy version (app.ts). The Deployment's own updates (observedGeneration, its
 * Progressing condition, available replicas) wake the reconcile: that is the rollout signal. With
 * `spec.database.enabled`, a PgDatabase it owns comes first (database.ts): the pods get its
 * credentials, and the app is Ready only when both are.
 */
export const myAppController = controller(MyApp)
  .named(OPERATOR_NAME)
  .owns(Deployment)
  .owns(Service)
  // PgDatabases are read and created by name, not watched (database.ts says why).
  .permits({
    apiGroups: ["db.example.com"],
    resources: ["pgdatabases"],
    verbs: ["get", "create", "update", "patch", "delete"],
  })
  .reconcile(async (app, ctx) => {
    if (ctx.deleted) return done(); // the Deployment, Service and PgDatabase go with it (garbage collection)
    if (!app.spec.database?.enabled) return reconcileApp(app, ctx);
    const database = await ensureDatabase(app, ctx);
    if (!database.ready) {
      await reportWaiting(app, ctx, {
        type: "DatabaseReady",
        reason: database.reason,
        message: database.message,
      });
      return after(database.retryAfter);
    }
    const result = await reconcileApp(app, ctx, {
      ...(database.env ? { env: database.env } : {}),
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
