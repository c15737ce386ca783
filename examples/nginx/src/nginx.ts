import { after, controller, dependents, done, type ObjectOf } from "kubeloop";
import { Deployment, Ingress, Pod, Service } from "kubeloop/k8s";
import { Nginx } from "./resources.ts";

export type NginxObject = ObjectOf<typeof Nginx>;

/** Labels on everything the operator creates; pods are watched through them. */
const MANAGED_BY = "app.kubernetes.io/managed-by";
const INSTANCE = "app.kubernetes.io/instance";
export const OPERATOR_NAME = "nginx-operator";
/** Where the image serves: unprivileged images listen above 1024 (see resources.ts). */
const HTTP_PORT = 8080;

function podLabels(nginx: NginxObject): Record<string, string> {
  return {
    "app.kubernetes.io/name": "nginx",
    [INSTANCE]: nginx.metadata?.name ?? "",
    [MANAGED_BY]: OPERATOR_NAME,
  };
}

function deploymentFor(nginx: NginxObject) {
  const labels = podLabels(nginx);
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: nginx.metadata?.name ?? "", namespace: nginx.metadata?.namespace ?? "", labels },
    spec: {
      replicas: nginx.spec.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        // Pod Security `restricted`, which hardened clusters enforce on every namespace: no root, no
        // privilege escalation, no capabilities, the runtime's default seccomp profile.
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          containers: [
            {
              name: "nginx",
              image: nginx.spec.image,
              ports: [{ name: "http", containerPort: HTTP_PORT }],
              readinessProbe: { httpGet: { path: "/", port: "http" } },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
            },
          ],
        },
      },
    },
  };
}

/** The Service in front of the pods: port 80 of `<name>.<namespace>.svc`, to the pods' `http` port. */
function serviceFor(nginx: NginxObject) {
  const labels = podLabels(nginx);
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: nginx.metadata?.name ?? "", namespace: nginx.metadata?.namespace ?? "", labels },
    spec: { selector: labels, ports: [{ name: "http", port: 80, targetPort: "http" }] },
  };
}

/** The Ingress of `spec.ingress`: its host, all paths, to the Service's `http` port. */
function ingressFor(nginx: NginxObject) {
  const { host, className } = nginx.spec.ingress ?? { host: "" };
  const name = nginx.metadata?.name ?? "";
  const backend = { service: { name, port: { name: "http" } } };
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name, namespace: nginx.metadata?.namespace ?? "", labels: podLabels(nginx) },
    spec: {
      ...(className ? { ingressClassName: className } : {}),
      rules: [{ host, http: { paths: [{ path: "/", pathType: "Prefix", backend }] } }],
    },
  };
}

/**
 * What serves an Nginx's pods, declared: the Service, and the Ingress while `spec.ingress` is set.
 * Unset, the Ingress this Nginx made is deleted (and no one else's: found by ApplySet membership).
 */
export const servingChildren = dependents(Nginx, { condition: false }) // Ready is the pods' (nginxController)
  .child("service", Service, serviceFor)
  .child("ingress", Ingress, ingressFor, { when: (nginx) => nginx.spec.ingress !== undefined });

function isRunningAndReady(pod: {
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}) {
  return (
    pod.status?.phase === "Running" &&
    pod.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")
  );
}

/**
 * Nginx → a Deployment of `spec.replicas` pods, owned by it (deleted with it); `status.nodes`
 * lists the running pods; `Ready` is true once all of them run.
 */
export const nginxController = controller(Nginx)
  .named(OPERATOR_NAME)
  .owns(Deployment)
  .watches(
    Pod,
    (pod) => ({ namespace: pod.metadata?.namespace, name: pod.metadata?.labels?.[INSTANCE] ?? "" }),
    { labelSelector: `${MANAGED_BY}=${OPERATOR_NAME}` },
  )
  .reconcile(async (nginx, ctx) => {
    if (ctx.gone) return done(); // the Deployment and its pods go with it (garbage collection)
    const replicas = nginx.spec.replicas;
    await ctx.apply(deploymentFor(nginx));
    const pods = ctx.cache
      .list(Pod, { namespace: ctx.namespace ?? "", labels: podLabels(nginx) })
      .filter((pod) => !pod.metadata?.deletionTimestamp && isRunningAndReady(pod));
    const nodes = pods.map((pod) => pod.metadata?.name ?? "").sort();
    const ready = nodes.length === replicas;
    await ctx.status(
      { nodes, readyCount: nodes.length },
      {
        ready: ready
          ? true
          : { status: false, reason: "Progressing", message: `${nodes.length} of ${replicas} pods running` },
      },
    );
    if (ready) {
      ctx.log.info({ replicas }, "all pods running");
      return done();
    }
    // Pod changes wake us anyway; this is only a safety net.
    return after("30s");
  });

/**
 * Nginx → what serves its pods (`servingChildren`: the Service, `<name>.<namespace>.svc` port 80,
 * and an Ingress when asked), owned by it. A controller of its own: serving is a concern apart from
 * running the pods, and the rollout's reconciler (and its in-memory unit tests) stays the same.
 * Deleted, the Nginx's children go with it (garbage collection).
 */
export const nginxServiceController = controller(Nginx)
  .named(`${OPERATOR_NAME}-service`)
  .dependents(servingChildren)
  .reconcile(async (nginx, ctx) => (await servingChildren.reconcile(nginx, ctx)).result);
