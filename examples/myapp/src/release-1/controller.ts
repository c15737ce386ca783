import { controller, done } from "kubeloop";
import { Deployment, Service } from "kubeloop/k8s";
import { OPERATOR_NAME, reconcileApp } from "../app.ts";
import { MyAppV1alpha1 } from "./resources.ts";

/** Release 1's controller: the same reconcile, reading `v1alpha1` (`size` is v1's `replicas`). */
export const myAppV1alpha1Controller = controller(MyAppV1alpha1)
  .named(OPERATOR_NAME)
  .owns(Deployment)
  .owns(Service)
  .reconcile(async (app, ctx) => {
    if (ctx.gone) return done();
    const { size, ...spec } = app.spec;
    return reconcileApp({ ...app, spec: { ...spec, replicas: size } }, ctx);
  });
