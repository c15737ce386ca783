import type { Client, KubeObject } from "../../client/index.js";
import { type apps, type batch, type core, type discovery, EndpointSlice } from "../../k8s/index.js";
import { rolloutStatus } from "../../resources/index.js";

/**
 * When a child counts as ready, so the children that depend on it may go ahead: `true`, or what it
 * is waiting for (`false`, or better a sentence that goes into the primary's condition and event).
 * It reads the child as the server answered the apply (with its status), and may read more through
 * `ctx.client` (a Service reads its EndpointSlices).
 */
export type Readiness<U extends KubeObject = KubeObject> = (
  object: U,
  ctx: ReadinessContext,
) => boolean | string | Promise<boolean | string>;

/** What a readiness check may read besides the child. */
export interface ReadinessContext {
  readonly client: Client;
  readonly signal: AbortSignal;
}

/** The generation the child's controller has not seen yet, said as a sentence; undefined when seen. */
function unobserved(object: KubeObject & { status?: { observedGeneration?: number } }): string | undefined {
  const generation = object.metadata?.generation ?? 0;
  const observed = object.status?.observedGeneration ?? 0;
  return observed < generation ? `its controller has not seen generation ${generation} yet` : undefined;
}

/** A Deployment is ready when its rollout is complete (kubectl rollout status): all replicas updated and available. */
function deployment(object: apps.Deployment): boolean | string {
  const rollout = rolloutStatus(object);
  return rollout.state === "Complete" || `${rollout.state}: ${rollout.message}`;
}

/** A StatefulSet is ready when its controller saw the spec and every replica is updated and ready. */
function statefulSet(object: apps.StatefulSet): boolean | string {
  const waiting = unobserved(object);
  if (waiting) return waiting;
  const wanted = object.spec?.replicas ?? 1;
  const status = object.status;
  const ready = status?.readyReplicas ?? 0;
  if (ready < wanted) return `${ready} of ${wanted} replicas ready`;
  if (object.spec?.updateStrategy?.type !== "OnDelete" && (status?.updatedReplicas ?? 0) < wanted)
    return `${status?.updatedReplicas ?? 0} of ${wanted} replicas updated`;
  return true;
}

/** A Job is ready when it completed; a failed Job says why (it will not become ready by waiting). */
function job(object: batch.Job): boolean | string {
  const conditions = object.status?.conditions ?? [];
  if (conditions.some((c) => c.type === "Complete" && c.status === "True")) return true;
  const failed = conditions.find((c) => c.type === "Failed" && c.status === "True");
  if (failed) return `failed (${failed.reason ?? "Failed"}: ${failed.message ?? ""})`;
  return `${object.status?.succeeded ?? 0} of ${object.spec?.completions ?? 1} completions`;
}

/** A Pod is ready when its Ready condition is True. */
function pod(object: core.Pod): boolean | string {
  const ready = object.status?.conditions?.find((c) => c.type === "Ready");
  return ready?.status === "True" || `phase ${object.status?.phase ?? "Pending"}, not Ready`;
}

/** A PVC is ready when it is bound to a volume (with `WaitForFirstConsumer`, only once a pod uses it). */
function persistentVolumeClaim(object: core.PersistentVolumeClaim): boolean | string {
  return object.status?.phase === "Bound" || `phase ${object.status?.phase ?? "Pending"}, not Bound`;
}

/**
 * A Service is ready when at least one of its endpoints is ready (read from its EndpointSlices).
 * One without a selector (endpoints managed by hand) or of type ExternalName has no endpoints to
 * wait for and is ready at once.
 */
async function service(object: core.Service, ctx: ReadinessContext): Promise<boolean | string> {
  if (object.spec?.type === "ExternalName" || !object.spec?.selector) return true;
  const slices = (await ctx.client.list(EndpointSlice, {
    namespace: object.metadata?.namespace ?? "",
    labelSelector: `kubernetes.io/service-name=${object.metadata?.name ?? ""}`,
    signal: ctx.signal,
  })) as { items: discovery.EndpointSlice[] };
  const ready = slices.items.some((slice) =>
    (slice.endpoints ?? []).some((e) => e.conditions?.ready !== false),
  );
  return ready || "no ready endpoints";
}

/**
 * Built-in readiness of the common kinds, to pass as a child's `ready`:
 *
 * @example
 * ```ts
 * dependents(MyApp).child("web", Deployment, (app) => deploymentFor(app), { ready: readiness.deployment });
 * ```
 */
export const readiness = Object.freeze({
  deployment: deployment as Readiness<apps.Deployment>,
  statefulSet: statefulSet as Readiness<apps.StatefulSet>,
  job: job as Readiness<batch.Job>,
  pod: pod as Readiness<core.Pod>,
  persistentVolumeClaim: persistentVolumeClaim as Readiness<core.PersistentVolumeClaim>,
  service: service as Readiness<core.Service>,
  /**
   * Ready when the condition `type` (default `Ready`) is True in the child's status, and its
   * `observedGeneration` (when it reports one) has caught up: the convention of custom resources.
   */
  condition(type = "Ready"): Readiness {
    return (object) => {
      const status = (
        object as {
          status?: {
            conditions?: {
              type: string;
              status: string;
              reason?: string;
              message?: string;
              observedGeneration?: number;
            }[];
          };
        }
      ).status;
      const found = status?.conditions?.find((c) => c.type === type);
      if (found?.status !== "True")
        return found
          ? `${type} is ${found.status}${found.reason ? ` (${found.reason}${found.message ? `: ${found.message}` : ""})` : ""}`
          : `no ${type} condition yet`;
      const generation = object.metadata?.generation;
      if (
        found.observedGeneration !== undefined &&
        generation !== undefined &&
        found.observedGeneration < generation
      )
        return `${type} describes generation ${found.observedGeneration}, not ${generation}`;
      return true;
    };
  },
});
