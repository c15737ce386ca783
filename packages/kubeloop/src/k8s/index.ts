/**
 * Typed built-in resources. The object types are the `kubernetes-types` package's (generated from
 * the Kubernetes OpenAPI, not written by hand); this module only names each kind for the client.
 *
 * @example
 * ```ts
 * import { Client } from "kubeloop/client";
 * import { ConfigMap } from "kubeloop/k8s";
 * const client = await Client.connect();
 * const cm = await client.get(ConfigMap, "settings", { namespace: "default" }); // typed ConfigMap
 * ```
 */
import type * as apps from "kubernetes-types/apps/v1.js";
import type * as batch from "kubernetes-types/batch/v1.js";
import type * as coordination from "kubernetes-types/coordination/v1.js";
import type * as core from "kubernetes-types/core/v1.js";
import type * as events from "kubernetes-types/events/v1.js";
import type * as networking from "kubernetes-types/networking/v1.js";
import type * as policy from "kubernetes-types/policy/v1.js";
import type * as rbac from "kubernetes-types/rbac/v1.js";
import { resourceType } from "../client/index.js";

export type * as apps from "kubernetes-types/apps/v1.js";
export type * as batch from "kubernetes-types/batch/v1.js";
export type * as coordination from "kubernetes-types/coordination/v1.js";
export type * as core from "kubernetes-types/core/v1.js";
export type * as events from "kubernetes-types/events/v1.js";
export type * as networking from "kubernetes-types/networking/v1.js";
export type * as policy from "kubernetes-types/policy/v1.js";
export type * as rbac from "kubernetes-types/rbac/v1.js";

const namespaced = { namespaced: true } as const;
const cluster = { namespaced: false } as const;

export const ConfigMap = resourceType<core.ConfigMap>("v1", "ConfigMap", {
  plural: "configmaps",
  ...namespaced,
});
export const Secret = resourceType<core.Secret>("v1", "Secret", { plural: "secrets", ...namespaced });
export const Pod = resourceType<core.Pod>("v1", "Pod", { plural: "pods", ...namespaced });
export const Service = resourceType<core.Service>("v1", "Service", { plural: "services", ...namespaced });
export const ServiceAccount = resourceType<core.ServiceAccount>("v1", "ServiceAccount", {
  plural: "serviceaccounts",
  ...namespaced,
});
export const Namespace = resourceType<core.Namespace>("v1", "Namespace", {
  plural: "namespaces",
  ...cluster,
});
export const Node = resourceType<core.Node>("v1", "Node", { plural: "nodes", ...cluster });
export const PersistentVolumeClaim = resourceType<core.PersistentVolumeClaim>("v1", "PersistentVolumeClaim", {
  plural: "persistentvolumeclaims",
  ...namespaced,
});
export const Endpoints = resourceType<core.Endpoints>("v1", "Endpoints", {
  plural: "endpoints",
  ...namespaced,
});
export const Deployment = resourceType<apps.Deployment>("apps/v1", "Deployment", {
  plural: "deployments",
  ...namespaced,
});
export const StatefulSet = resourceType<apps.StatefulSet>("apps/v1", "StatefulSet", {
  plural: "statefulsets",
  ...namespaced,
});
export const DaemonSet = resourceType<apps.DaemonSet>("apps/v1", "DaemonSet", {
  plural: "daemonsets",
  ...namespaced,
});
export const ReplicaSet = resourceType<apps.ReplicaSet>("apps/v1", "ReplicaSet", {
  plural: "replicasets",
  ...namespaced,
});
export const Job = resourceType<batch.Job>("batch/v1", "Job", { plural: "jobs", ...namespaced });
export const CronJob = resourceType<batch.CronJob>("batch/v1", "CronJob", {
  plural: "cronjobs",
  ...namespaced,
});
export const Lease = resourceType<coordination.Lease>("coordination.k8s.io/v1", "Lease", {
  plural: "leases",
  ...namespaced,
});
export const Event = resourceType<events.Event>("events.k8s.io/v1", "Event", {
  plural: "events",
  ...namespaced,
});
export const Ingress = resourceType<networking.Ingress>("networking.k8s.io/v1", "Ingress", {
  plural: "ingresses",
  ...namespaced,
});
export const NetworkPolicy = resourceType<networking.NetworkPolicy>("networking.k8s.io/v1", "NetworkPolicy", {
  plural: "networkpolicies",
  ...namespaced,
});
export const PodDisruptionBudget = resourceType<policy.PodDisruptionBudget>(
  "policy/v1",
  "PodDisruptionBudget",
  {
    plural: "poddisruptionbudgets",
    ...namespaced,
  },
);
export const Role = resourceType<rbac.Role>("rbac.authorization.k8s.io/v1", "Role", {
  plural: "roles",
  ...namespaced,
});
export const RoleBinding = resourceType<rbac.RoleBinding>("rbac.authorization.k8s.io/v1", "RoleBinding", {
  plural: "rolebindings",
  ...namespaced,
});
export const ClusterRole = resourceType<rbac.ClusterRole>("rbac.authorization.k8s.io/v1", "ClusterRole", {
  plural: "clusterroles",
  ...cluster,
});
export const ClusterRoleBinding = resourceType<rbac.ClusterRoleBinding>(
  "rbac.authorization.k8s.io/v1",
  "ClusterRoleBinding",
  { plural: "clusterrolebindings", ...cluster },
);
