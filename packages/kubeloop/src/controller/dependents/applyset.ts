import { createHash } from "node:crypto";
import type { KubeObject, ResourceType } from "../../client/index.js";
import { groupOf } from "../../resources/internal.js";

/**
 * ApplySet (KEP-3659) labels and annotations: how a primary marks the children it made, so that
 * the ones it no longer wants are found by set membership, never by guessing from names or labels
 * someone else may also use. kubectl (`kubectl apply --prune --applyset`) and other tools
 * recognise the same keys:
 * - the parent (the primary) carries the set's id as the label `applyset.kubernetes.io/id`, the
 *   tool that manages it in `applyset.kubernetes.io/tooling`, and the group-kinds its members may
 *   have in `applyset.kubernetes.io/contains-group-kinds` (sorted, comma-separated), so the members
 *   are found with one labelled list per kind;
 * - every member carries `applyset.kubernetes.io/part-of: <id>`.
 * The id is derived from the parent's group, kind, namespace and name (not chosen), so a label
 * copied onto another object cannot make it a member of a set its parent does not name.
 */

/** The parent's label: its set id ({@link applySetId}). */
export const APPLYSET_ID_LABEL = "applyset.kubernetes.io/id";
/** Each member's label: the id of the set it belongs to. */
export const APPLYSET_PART_OF_LABEL = "applyset.kubernetes.io/part-of";
/** The parent's annotation: the tool that manages the set (`kubeloop/v1`). */
export const APPLYSET_TOOLING_ANNOTATION = "applyset.kubernetes.io/tooling";
/** The parent's annotation: the group-kinds its members may have, sorted, comma-separated. */
export const APPLYSET_GROUP_KINDS_ANNOTATION = "applyset.kubernetes.io/contains-group-kinds";
/** Which declared child a member was made for: its name in the dependents declaration. */
export const DEPENDENT_LABEL = "kubeloop.dev/dependent";
/** What kubectl reads to refuse mutating a set another tool manages. */
export const APPLYSET_TOOLING = "kubeloop/v1";

/**
 * The set id of a parent, as kubectl computes it:
 * `applyset-<base64url(sha256("<name>.<namespace>.<kind>.<group>"))>-v1` (63 characters, a valid
 * label value).
 */
export function applySetId(parent: KubeObject, type: ResourceType): string {
  const meta = parent.metadata ?? {};
  const gknn = `${meta.name ?? ""}.${meta.namespace ?? ""}.${parent.kind ?? type.kind}.${groupOf(type.apiVersion)}`;
  return `applyset-${createHash("sha256").update(gknn).digest("base64url")}-v1`;
}

/** `Kind.group`, or `Kind` for the core group: how contains-group-kinds spells a group-kind. */
export function groupKindOf(type: ResourceType): string {
  const group = groupOf(type.apiVersion);
  return group ? `${type.kind}.${group}` : type.kind;
}

/** The group-kinds the parent's annotation lists (empty when it has none). */
export function listedGroupKinds(parent: KubeObject): string[] {
  const value = parent.metadata?.annotations?.[APPLYSET_GROUP_KINDS_ANNOTATION] ?? "";
  return value ? value.split(",").filter(Boolean) : [];
}

/**
 * The parent's ApplySet metadata for these group-kinds, as a server-side apply body of the parent
 * (metadata only), or undefined when the parent carries it already.
 */
export function parentMetadata(
  parent: KubeObject,
  type: ResourceType,
  groupKinds: Iterable<string>,
): KubeObject | undefined {
  const id = applySetId(parent, type);
  const kinds = [...new Set(groupKinds)].sort().join(",");
  const meta = parent.metadata ?? {};
  if (
    meta.labels?.[APPLYSET_ID_LABEL] === id &&
    meta.annotations?.[APPLYSET_TOOLING_ANNOTATION] === APPLYSET_TOOLING &&
    (meta.annotations?.[APPLYSET_GROUP_KINDS_ANNOTATION] ?? "") === kinds
  )
    return undefined;
  return {
    apiVersion: type.apiVersion,
    kind: type.kind,
    metadata: {
      name: meta.name ?? "",
      ...(meta.namespace ? { namespace: meta.namespace } : {}),
      labels: { [APPLYSET_ID_LABEL]: id },
      annotations: {
        [APPLYSET_TOOLING_ANNOTATION]: APPLYSET_TOOLING,
        [APPLYSET_GROUP_KINDS_ANNOTATION]: kinds,
      },
    },
  };
}

/**
 * Refuses a parent whose set another tool manages (KEP-3659: tools must not mutate other tools'
 * sets); the message says how to hand it over.
 */
export function checkTooling(parent: KubeObject): void {
  const tooling = parent.metadata?.annotations?.[APPLYSET_TOOLING_ANNOTATION];
  if (tooling && tooling !== APPLYSET_TOOLING) {
    throw new Error(
      `${parent.kind ?? "object"} ${parent.metadata?.name ?? ""}: its ApplySet is managed by "${tooling}", not kubeloop; ` +
        `remove the ${APPLYSET_TOOLING_ANNOTATION} annotation (and that tool's pruning) to let this controller manage its children`,
    );
  }
}

/** `child` labelled as a member of the set and as made for the declared child `dependent`. */
export function asMember<U extends KubeObject>(child: U, setId: string, dependent: string): U {
  const labels = child.metadata?.labels ?? {};
  const foreign = labels[APPLYSET_PART_OF_LABEL];
  if (foreign !== undefined && foreign !== setId) {
    throw new TypeError(
      `dependent "${dependent}": ${child.kind ?? "object"} ${child.metadata?.name ?? ""} already sets ${APPLYSET_PART_OF_LABEL}; ` +
        "leave that label out (the framework sets it)",
    );
  }
  return {
    ...child,
    metadata: {
      ...child.metadata,
      labels: { ...labels, [APPLYSET_PART_OF_LABEL]: setId, [DEPENDENT_LABEL]: dependent },
    },
  };
}
