/**
 * What every aggregated API server in kube-system needs, as YAML for the tests that run one
 * (metrics-server, prometheus-adapter): its service account, bound to delegate authentication and
 * authorization to the API server and to read the front-proxy's CA, and bound to a ClusterRole of
 * its own (`rules`, YAML flow sequences).
 */
export function aggregatedApiAccess(name: string, role: string, rules: string[]): string {
  // Each binding gives the service account one role.
  const binding = (kind: string, metadata: string, roleKind: string, roleName: string) => `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ${kind}
metadata: ${metadata}
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ${roleKind}, name: "${roleName}" }
subjects: [{ kind: ServiceAccount, name: ${name}, namespace: kube-system }]
`;
  return `apiVersion: v1
kind: ServiceAccount
metadata: { name: ${name}, namespace: kube-system }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: "${role}" }
rules:
${rules.map((rule) => `  - ${rule}`).join("\n")}
${binding("ClusterRoleBinding", `{ name: "${role}" }`, "ClusterRole", role)}${binding(
  "ClusterRoleBinding",
  `{ name: "${name}:system:auth-delegator" }`,
  "ClusterRole",
  "system:auth-delegator",
)}${binding(
  "RoleBinding",
  `{ name: ${name}-auth-reader, namespace: kube-system }`,
  "Role",
  "extension-apiserver-authentication-reader",
)}`;
}

/** The Service in front of aggregated API server `name`'s pods (label `app: <name>`): 443 → `targetPort`. */
export function aggregatedApiService(name: string, targetPort: number): string {
  return `---
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: kube-system }
spec:
  selector: { app: ${name} }
  ports: [{ name: https, port: 443, targetPort: ${targetPort} }]
`;
}

/** An APIService served by Service `name` in kube-system on 443, trusting `caCert` (PEM). */
export function apiService(
  name: string,
  group: string,
  version: string,
  caCert: string,
  priority = 100,
): string {
  return `---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: { name: ${version}.${group} }
spec:
  group: ${group}
  version: ${version}
  service: { name: ${name}, namespace: kube-system, port: 443 }
  caBundle: ${Buffer.from(caCert).toString("base64")}
  groupPriorityMinimum: 100
  versionPriority: ${priority}
`;
}
