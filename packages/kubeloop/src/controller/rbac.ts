import type { ResourceType } from "../client/index.js";
import { groupOf } from "../resources/internal.js";

/**
 * The least RBAC a set of controllers needs, derived from what they declare — not written by hand,
 * so it cannot drift from the code:
 *
 * - the primary type: read and watch, `patch`/`update` (finalizers are added and removed with a
 *   patch), its status subresource, and `update` on its finalizers subresource: children get a
 *   controller reference with `blockOwnerDeletion: true`, and an API server with the
 *   `OwnerReferencesPermissionEnforcement` admission plugin (OpenShift, hardened distributions)
 *   allows setting that only to who may update the owner's finalizers. Every primary gets it, as
 *   in kubebuilder's scaffold: `ctx.apply` sets that reference on whatever it applies, declared
 *   with `.owns` or not;
 * - owned types: read, watch, and everything server-side apply and cleanup do;
 * - watched types: read and watch;
 * - events.k8s.io Events: create and patch (the event recorder's series updates);
 * - leases, in a namespaced Role apart, for leader election.
 *
 * What a reconciler does beyond its declarations is declared with `.permits(rule)` on the builder
 * (or `extra` here) and added as it is.
 *
 * Scope: a controller limited to namespaces (`.inNamespace(ns)`, `.inNamespaces([…])`, or the
 * manager's namespaces given as `rbacRoles(…, { namespaces })`) gets its namespaced grants in a Role
 * in each of them; cluster-scoped types and cluster-wide controllers go in the ClusterRole.
 */

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const READ = ["get", "list", "watch"];
const OWN = ["get", "list", "watch", "create", "update", "patch", "delete"];
/** What an owned kind needs: read, watch, and everything server-side apply and cleanup do. */
export const OWN_VERBS: readonly string[] = OWN;

/** What RBAC derivation reads of a controller's spec. */
export interface DeclaredTypes {
  primary: ResourceType;
  owns: readonly { type: ResourceType }[];
  watches: readonly { type: ResourceType }[];
  /** Set by `.inNamespace(ns)`: the controller reads and writes in that namespace only. */
  namespace?: string | undefined;
  /** Set by `.inNamespaces([…])` (and `.inNamespace`): it reads and writes in these namespaces only. */
  namespaces?: readonly string[] | undefined;
  /** Declared with `.permits(…)`: what the reconciler does beyond its declared types. */
  permissions?: readonly PolicyRule[];
}

/** Where controllers that name no namespace of their own run. */
export interface RbacScope {
  /**
   * The manager's namespaces (its `namespaces` option, `WATCH_NAMESPACE`): such controllers get
   * Roles in these instead of the ClusterRole. Default: all namespaces (the ClusterRole).
   */
  namespaces?: readonly string[] | undefined;
}

/** The rules of a ClusterRole and of one Role per namespace. */
export interface RbacRoles {
  cluster: PolicyRule[];
  namespaced: Record<string, PolicyRule[]>;
}

const EVENT = { apiVersion: "events.k8s.io/v1", kind: "Event", namespaced: true };

/** Every rule the controllers need, regardless of scope (one ClusterRole's worth). */
export function rbacRules(controllers: DeclaredTypes[], extra: PolicyRule[] = []): PolicyRule[] {
  const { cluster } = rbacRoles(
    controllers.map((spec) => ({ ...spec, namespace: undefined, namespaces: undefined })),
  );
  return sortRules([...cluster, ...extra]);
}

/** The rules split by scope: see the module's comment. */
export function rbacRoles(controllers: DeclaredTypes[], scope: RbacScope = {}): RbacRoles {
  const cluster = new Grants();
  const byNamespace = new Map<string, Grants>();
  for (const spec of controllers) {
    const namespaces = boundNamespaces(spec, scope);
    if (namespaces === undefined) {
      cluster.declare(spec, () => true);
      cluster.add(EVENT, "events", ["create", "patch"]);
      continue;
    }
    for (const namespace of namespaces) {
      const local = byNamespace.get(namespace) ?? new Grants();
      byNamespace.set(namespace, local);
      local.declare(spec, (type) => type.namespaced !== false);
      local.add(EVENT, "events", ["create", "patch"]);
    }
    cluster.declare({ ...spec, permissions: [] }, (type) => type.namespaced === false);
  }
  return {
    cluster: cluster.rules(),
    namespaced: Object.fromEntries(
      [...byNamespace].sort(([a], [b]) => a.localeCompare(b)).map(([ns, g]) => [ns, g.rules()]),
    ),
  };
}

/** A controller's own namespaces, else the scope's; `undefined` when it works cluster-wide. */
function boundNamespaces(spec: DeclaredTypes, scope: RbacScope): readonly string[] | undefined {
  const own = spec.namespaces ?? (spec.namespace === undefined ? undefined : [spec.namespace]);
  const namespaces = own ?? scope.namespaces;
  return namespaces?.length ? namespaces : undefined;
}

/** Verbs per (group, resource), merged across declarations. */
class Grants {
  private readonly verbs = new Map<string, Set<string>>(); // "group|resource" → verbs
  private readonly extra: PolicyRule[] = [];

  add(type: ResourceType, resource: string, granted: string[]): void {
    const key = `${groupOf(type.apiVersion)}|${resource}`;
    const set = this.verbs.get(key) ?? new Set<string>();
    for (const verb of granted) set.add(verb);
    this.verbs.set(key, set);
  }

  /** The grants of one controller's declared types that `include` accepts, and its permissions. */
  declare(spec: DeclaredTypes, include: (type: ResourceType) => boolean): void {
    if (include(spec.primary)) {
      const primary = pluralOf(spec.primary);
      this.add(spec.primary, primary, [...READ, "update", "patch"]);
      this.add(spec.primary, `${primary}/status`, ["get", "update", "patch"]);
      this.add(spec.primary, `${primary}/finalizers`, ["update"]);
    }
    for (const owned of spec.owns) if (include(owned.type)) this.add(owned.type, pluralOf(owned.type), OWN);
    for (const watched of spec.watches) {
      if (include(watched.type)) this.add(watched.type, pluralOf(watched.type), READ);
    }
    this.extra.push(...(spec.permissions ?? []));
  }

  rules(): PolicyRule[] {
    const rules: PolicyRule[] = [...this.verbs].map(([key, set]) => {
      const [group, resource] = key.split("|") as [string, string];
      return { apiGroups: [group], resources: [resource], verbs: sortVerbs([...set]) };
    });
    return sortRules([...rules, ...this.extra]);
  }
}

function sortRules(rules: PolicyRule[]): PolicyRule[] {
  return rules.sort((a, b) =>
    `${a.apiGroups[0]}/${a.resources[0]}`.localeCompare(`${b.apiGroups[0]}/${b.resources[0]}`),
  );
}

/** What leader election needs, in the operator's own namespace. */
export const LEADER_ELECTION_RULES: PolicyRule[] = [
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
];

const VERB_ORDER = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];

function sortVerbs(verbs: string[]): string[] {
  return verbs.sort((a, b) => VERB_ORDER.indexOf(a) - VERB_ORDER.indexOf(b));
}

/** The resource name RBAC uses for a type; an error naming the fix when the type has none. */
export function pluralOf(type: ResourceType): string {
  if (!type.plural) {
    throw new TypeError(
      `${type.kind} (${type.apiVersion}) has no plural: give resourceType(…) a plural, or use defineResource, so RBAC can name it`,
    );
  }
  return type.plural;
}
