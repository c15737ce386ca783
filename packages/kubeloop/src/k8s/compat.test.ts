import type * as ktApps from "kubernetes-types/apps/v1.js";
import type * as ktBatch from "kubernetes-types/batch/v1.js";
import type * as ktCoordination from "kubernetes-types/coordination/v1.js";
import type * as ktCore from "kubernetes-types/core/v1.js";
import type * as ktEvents from "kubernetes-types/events/v1.js";
import type * as ktNetworking from "kubernetes-types/networking/v1.js";
import type * as ktPolicy from "kubernetes-types/policy/v1.js";
import type * as ktRbac from "kubernetes-types/rbac/v1.js";
import { describe, expect, it } from "vitest";
import type { apps, batch, coordination, core, events, networking, policy, rbac } from "./index.js";

// The 24 kinds kubeloop/k8s typed with kubernetes-types (Kubernetes 1.30) before its types were
// generated from 1.36's OpenAPI: an object of either type is one of the other, but where the API's
// schema changed since (each marked; \`npm run typecheck\` fails if one stops being true).
function compatible(x: unknown): { old: unknown[]; generated: unknown[] } {
  const old: unknown[] = [];
  const generated: unknown[] = [];
  old.push(x as core.ConfigMap satisfies ktCore.ConfigMap);
  generated.push(x as ktCore.ConfigMap satisfies core.ConfigMap);
  old.push(x as core.Secret satisfies ktCore.Secret);
  generated.push(x as ktCore.Secret satisfies core.Secret);
  old.push(x as core.Pod satisfies ktCore.Pod);
  // @ts-expect-error a HostAlias's ip is required in 1.36
  generated.push(x as ktCore.Pod satisfies core.Pod);
  old.push(x as core.Service satisfies ktCore.Service);
  generated.push(x as ktCore.Service satisfies core.Service);
  old.push(x as core.ServiceAccount satisfies ktCore.ServiceAccount);
  generated.push(x as ktCore.ServiceAccount satisfies core.ServiceAccount);
  old.push(x as core.Namespace satisfies ktCore.Namespace);
  generated.push(x as ktCore.Namespace satisfies core.Namespace);
  old.push(x as core.Node satisfies ktCore.Node);
  generated.push(x as ktCore.Node satisfies core.Node);
  old.push(x as core.PersistentVolumeClaim satisfies ktCore.PersistentVolumeClaim);
  generated.push(x as ktCore.PersistentVolumeClaim satisfies core.PersistentVolumeClaim);
  old.push(x as core.Endpoints satisfies ktCore.Endpoints);
  generated.push(x as ktCore.Endpoints satisfies core.Endpoints);
  old.push(x as apps.Deployment satisfies ktApps.Deployment);
  // @ts-expect-error HostAlias.ip
  generated.push(x as ktApps.Deployment satisfies apps.Deployment);
  // @ts-expect-error spec.serviceName is optional in 1.36
  old.push(x as apps.StatefulSet satisfies ktApps.StatefulSet);
  // @ts-expect-error HostAlias.ip
  generated.push(x as ktApps.StatefulSet satisfies apps.StatefulSet);
  old.push(x as apps.DaemonSet satisfies ktApps.DaemonSet);
  // @ts-expect-error HostAlias.ip
  generated.push(x as ktApps.DaemonSet satisfies apps.DaemonSet);
  old.push(x as apps.ReplicaSet satisfies ktApps.ReplicaSet);
  // @ts-expect-error HostAlias.ip
  generated.push(x as ktApps.ReplicaSet satisfies apps.ReplicaSet);
  // @ts-expect-error a pod failure policy rule's status is optional in 1.36
  old.push(x as batch.Job satisfies ktBatch.Job);
  // @ts-expect-error HostAlias.ip
  generated.push(x as ktBatch.Job satisfies batch.Job);
  // @ts-expect-error a pod failure policy rule's status is optional in 1.36
  old.push(x as batch.CronJob satisfies ktBatch.CronJob);
  // @ts-expect-error HostAlias.ip, in its job template's pod
  generated.push(x as ktBatch.CronJob satisfies batch.CronJob);
  old.push(x as coordination.Lease satisfies ktCoordination.Lease);
  generated.push(x as ktCoordination.Lease satisfies coordination.Lease);
  old.push(x as events.Event satisfies ktEvents.Event);
  generated.push(x as ktEvents.Event satisfies events.Event);
  old.push(x as networking.Ingress satisfies ktNetworking.Ingress);
  generated.push(x as ktNetworking.Ingress satisfies networking.Ingress);
  // @ts-expect-error spec.podSelector is optional in 1.36
  old.push(x as networking.NetworkPolicy satisfies ktNetworking.NetworkPolicy);
  generated.push(x as ktNetworking.NetworkPolicy satisfies networking.NetworkPolicy);
  // @ts-expect-error status.currentHealthy and its kin are optional in 1.36
  old.push(x as policy.PodDisruptionBudget satisfies ktPolicy.PodDisruptionBudget);
  generated.push(x as ktPolicy.PodDisruptionBudget satisfies policy.PodDisruptionBudget);
  old.push(x as rbac.Role satisfies ktRbac.Role);
  generated.push(x as ktRbac.Role satisfies rbac.Role);
  // @ts-expect-error a subject's apiGroup is optional in 1.36
  old.push(x as rbac.RoleBinding satisfies ktRbac.RoleBinding);
  generated.push(x as ktRbac.RoleBinding satisfies rbac.RoleBinding);
  old.push(x as rbac.ClusterRole satisfies ktRbac.ClusterRole);
  generated.push(x as ktRbac.ClusterRole satisfies rbac.ClusterRole);
  // @ts-expect-error a subject's apiGroup is optional in 1.36
  old.push(x as rbac.ClusterRoleBinding satisfies ktRbac.ClusterRoleBinding);
  generated.push(x as ktRbac.ClusterRoleBinding satisfies rbac.ClusterRoleBinding);
  return { old, generated };
}

describe("kubeloop/k8s's generated types and kubernetes-types", () => {
  it("are assignable to each other for the 24 kinds typed before, but where the schema changed", () => {
    const { old, generated } = compatible({});
    expect([old.length, generated.length]).toEqual([24, 24]);
  });
});
