import { controller, done, type ObjectOf } from "kubeloop";
import { Deployment, Service } from "kubeloop/k8s";
import { OPERATOR_NAME, reconcileApp } from "./app.ts";
import { MyApp } from "./resources.ts";

export type MyAppObject = ObjectOf<typeof MyApp>;

/**
 * MyApp (release 2, `v1`) → a Deployment and a Service it owns, rolled out with automatic rollback
 * to the last healthy version (app.ts). The Deployment's own updates (observedGeneration, its
 * Progressing condition, available replicas) wake the reconcile: that is the rollout signal.
 */
export const myAppController = controller(MyApp)
  .named(OPERATOR_NAME)
  .owns(Deployment)
  .owns(Service)
  .reconcile(async (app, ctx) => {
    if (ctx.deleted) return done(); // the Deployment and Service go with it (garbage collection)
    return reconcileApp(app, ctx);
  });
