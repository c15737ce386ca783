import type { ResourceType } from "../client/types.js";

/**
 * The least RBAC a set of controllers needs, derived from what they declare — not written by hand,
 * so it cannot drift from the code:
 *
 * - the primary type: read and watch, `patch`/`update` (finalizers are added and removed with a
 *   patch), and its status subresource;
 * - owned types: read, watch, and everything server-side apply and cleanup do;
 * - watched types: read and watch;
 * - events.k8s.io Events: create and patch (the event recorder's series updates);
 * - leases, in a namespaced Role apart, for leader election.
 *
 * `extra` rules are added as they are, for what a reconciler does beyond its declarations.
 */

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const READ = ["get", "list", "watch"];
const OWN = ["get", "list", "watch", "create", "update", "patch", "delete"];

/** What RBAC derivation reads of a controller's spec. */
export interface DeclaredTypes {
  primary: ResourceType;
  owns: readonly { type: ResourceType }[];
  watches: readonly { type: ResourceType }[];
}

export function rbacRules(controllers: DeclaredTypes[], extra: PolicyRule[] = []): PolicyRule[] {
  const verbs = new Map<string, Set<string>>(); // "group|resource" → verbs
  const grant = (type: ResourceType, resource: string, granted: string[]) => {
    const key = `${groupOf(type.apiVersion)}|${resource}`;
    const set = verbs.get(key) ?? new Set<string>();
    for (const verb of granted) set.add(verb);
    verbs.set(key, set);
  };
  for (const spec of controllers) {
    const primary = pluralOf(spec.primary);
    grant(spec.primary, primary, [...READ, "update", "patch"]);
    grant(spec.primary, `${primary}/status`, ["get", "update", "patch"]);
    for (const owned of spec.owns) grant(owned.type, pluralOf(owned.type), OWN);
    for (const watched of spec.watches) grant(watched.type, pluralOf(watched.type), READ);
  }
  grant({ apiVersion: "events.k8s.io/v1", kind: "Event" }, "events", ["create", "patch"]);
  const rules: PolicyRule[] = [...verbs].map(([key, set]) => {
    const [group, resource] = key.split("|") as [string, string];
    return { apiGroups: [group], resources: [resource], verbs: sortVerbs([...set]) };
  });
  rules.push(...extra);
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

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

function pluralOf(type: ResourceType): string {
  if (!type.plural) {
    throw new TypeError(
      `${type.kind} (${type.apiVersion}) has no plural: give resourceType(…) a plural, or use defineResource, so RBAC can name it`,
    );
  }
  return type.plural;
}
