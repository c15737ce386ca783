import { forbidden, qualified } from "./errors.js";

/**
 * RBAC as kube-apiserver's authorizer applies it, for requests made as a user
 * (`MemoryApiServer.client({ user })`, like `kubectl --as`): ClusterRoleBindings, then the
 * RoleBindings of the request's namespace; a rule allows a verb on a resource (or
 * `resource/subresource`) in an API group, optionally for some names. Requests without a user are
 * the administrator's and always allowed (as the control plane's admin kubeconfig).
 */

type Obj = Record<string, unknown>;

export interface UserInfo {
  user: string;
  groups: string[];
}

export interface RequestAttributes {
  verb: string;
  group: string;
  resource: string;
  subresource: string | undefined;
  namespace: string | undefined;
  name: string | undefined;
}

interface Rule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

const includes = (list: string[] | undefined, value: string) =>
  !!list && (list.includes("*") || list.includes(value));

function ruleAllows(rule: Rule, request: RequestAttributes): boolean {
  const resource = request.subresource ? `${request.resource}/${request.subresource}` : request.resource;
  return (
    includes(rule.verbs, request.verb) &&
    includes(rule.apiGroups, request.group) &&
    includes(rule.resources, resource) &&
    (!rule.resourceNames?.length || (request.name !== undefined && rule.resourceNames.includes(request.name)))
  );
}

function subjectMatches(subject: Subject, user: UserInfo): boolean {
  if (subject.kind === "User") return subject.name === user.user;
  if (subject.kind === "Group") return user.groups.includes(subject.name);
  if (subject.kind === "ServiceAccount")
    return user.user === `system:serviceaccount:${subject.namespace}:${subject.name}`;
  return false;
}

/** Reads Roles and bindings from the server's store. */
export interface RbacObjects {
  clusterRoleBindings(): Obj[];
  roleBindings(namespace: string): Obj[];
  clusterRole(name: string): Obj | undefined;
  role(namespace: string, name: string): Obj | undefined;
}

export function authorize(objects: RbacObjects, user: UserInfo, request: RequestAttributes): void {
  const rulesOf = (role: Obj | undefined) => (role?.rules as Rule[] | undefined) ?? [];
  const bound = (binding: Obj) =>
    ((binding.subjects as Subject[] | undefined) ?? []).some((s) => subjectMatches(s, user));
  for (const binding of objects.clusterRoleBindings()) {
    if (!bound(binding)) continue;
    const ref = binding.roleRef as { kind: string; name: string };
    if (rulesOf(objects.clusterRole(ref.name)).some((r) => ruleAllows(r, request))) return;
  }
  if (request.namespace) {
    for (const binding of objects.roleBindings(request.namespace)) {
      if (!bound(binding)) continue;
      const ref = binding.roleRef as { kind: string; name: string };
      const role =
        ref.kind === "ClusterRole"
          ? objects.clusterRole(ref.name)
          : objects.role(request.namespace, ref.name);
      if (rulesOf(role).some((r) => ruleAllows(r, request))) return;
    }
  }
  const resource = request.subresource ? `${request.resource}/${request.subresource}` : request.resource;
  const subject = request.name
    ? `${qualified(request.group, request.resource)} "${request.name}"`
    : qualified(request.group, request.resource);
  const scope = request.namespace ? `in the namespace "${request.namespace}"` : "at the cluster scope";
  throw forbidden(
    `${subject} is forbidden: User "${user.user}" cannot ${request.verb} resource "${resource}" in API group "${request.group}" ${scope}`,
    {
      ...(request.name ? { name: request.name } : {}),
      ...(request.group ? { group: request.group } : {}),
      kind: request.resource,
    },
  );
}
