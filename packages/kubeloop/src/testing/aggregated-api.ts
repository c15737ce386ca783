/**
 * What every aggregated API server in kube-system needs, as YAML for the tests that run one
 * (metrics-server, prometheus-adapter): its service account, bound to delegate authentication and
 * authorization to the API server and to read the front-proxy's CA, and bound to a ClusterRole of
 * its own (`rules`, YAML flow sequences).
 */
export function aggregatedApiAccess(name: string, role: string, rules: string[]): string {
  const subject = `subjects: [{ kind: ServiceAccount, name: ${name}, namespace: kube-system }]`;
  return `apiVersion: v1
kind: ServiceAccount
metadata: { name: ${name}, namespace: kube-system }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: "${role}" }
rules:
${rules.map((rule) => `  - ${rule}`).join("\n")}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: "${role}" }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "${role}" }
${subject}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: "${name}:system:auth-delegator" }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator" }
${subject}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: ${name}-auth-reader, namespace: kube-system }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader }
${subject}
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
