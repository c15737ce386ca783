import type { OwnerReference } from "kubernetes-types/meta/v1.js";
import type { KubeObject } from "../client/index.js";
import { AlreadyOwned, InvalidOwnerReference } from "./errors.js";
import { groupOf } from "./identify.js";

export type { OwnerReference } from "kubernetes-types/meta/v1.js";

/**
 * Owner references tie a child to its owner: the garbage collector deletes the child when the owner
 * goes, and `owns(...)` watches map a child's change back to its controller. All functions are pure;
 * the `set…` ones return a copy (a new `metadata` and `ownerReferences`, the rest shared).
 *
 * References are matched like controller-runtime does: by API group (not version, so an owner
 * served at `v1beta1` and `v1` is one object), kind and name; a uid, when both sides have one, must
 * match too, because an owner deleted and recreated under the same name is another object.
 */

export interface OwnerReferenceOptions {
  /** This owner is the child's managing controller (at most one per child). Default: not set. */
  controller?: boolean;
  /**
   * With foreground deletion, the owner stays until this child is gone. Needs `delete` permission
   * on the owner (else the write is rejected with 422). Default: not set.
   */
  blockOwnerDeletion?: boolean;
}

/** An owner reference to `owner`, which must have been read from the server (it needs a uid). */
export function ownerReference(owner: KubeObject, options: OwnerReferenceOptions = {}): OwnerReference {
  const { apiVersion, kind } = owner;
  const name = owner.metadata?.name;
  const uid = owner.metadata?.uid;
  if (!apiVersion || !kind || !name) {
    throw new InvalidOwnerReference("An owner needs apiVersion, kind and metadata.name");
  }
  if (!uid) {
    throw new InvalidOwnerReference(
      `The owner ${kind} ${name} has no metadata.uid: use the object as read from (or written to) the API server`,
    );
  }
  return {
    apiVersion,
    kind,
    name,
    uid,
    ...(options.controller !== undefined ? { controller: options.controller } : {}),
    ...(options.blockOwnerDeletion !== undefined ? { blockOwnerDeletion: options.blockOwnerDeletion } : {}),
  };
}

/**
 * The reference a controller puts on the children it manages: `controller: true` (so owner-based
 * watches find it) and `blockOwnerDeletion: true` (so a foreground delete of the owner waits for
 * its children), as controller-runtime's `SetControllerReference` sets them.
 */
export function controllerReference(owner: KubeObject): OwnerReference {
  return ownerReference(owner, { controller: true, blockOwnerDeletion: true });
}

/**
 * A copy of `object` whose controller is `owner`: the reference is added, or replaces one to the
 * same owner (e.g. one with an older API version). Throws {@link AlreadyOwned} if another object
 * is the controller, and {@link InvalidOwnerReference} if the scopes do not allow the reference.
 */
export function setControllerReference<T extends KubeObject>(object: T, owner: KubeObject): T {
  const reference = controllerReference(owner);
  checkScopes(object, owner);
  const existing = controllerOf(object);
  if (existing && !sameObject(existing, reference)) {
    throw new AlreadyOwned(
      `${describe(object)} is already controlled by ${existing.kind} ${existing.name} (uid ${existing.uid}); ` +
        `it cannot also be controlled by ${reference.kind} ${reference.name}. ` +
        "Remove the other controller's reference first, or use a non-controller owner reference",
      existing,
    );
  }
  return withReference(object, reference);
}

/**
 * A copy of `object` with a non-controller reference to `owner`, added or replacing one to the same
 * owner (which keeps its `controller` flag). For shared children that one object must outlive.
 */
export function setOwnerReference<T extends KubeObject>(
  object: T,
  owner: KubeObject,
  options: Omit<OwnerReferenceOptions, "controller"> = {},
): T {
  const reference = ownerReference(owner, options);
  checkScopes(object, owner);
  const current = (object.metadata?.ownerReferences ?? []).find((r) => sameObject(r, reference));
  if (current?.controller) reference.controller = true;
  return withReference(object, reference);
}

/** A copy of `object` without references to `owner` (the object is "orphaned" from it). */
export function removeOwnerReference<T extends KubeObject>(object: T, owner: KubeObject): T {
  const references = object.metadata?.ownerReferences ?? [];
  const kept = references.filter((r) => !refersTo(r, owner));
  if (kept.length === references.length) return object;
  return { ...object, metadata: { ...object.metadata, ownerReferences: kept } };
}

/** Whether `object` has an owner reference (controller or not) to `owner`. */
export function isOwnedBy(object: KubeObject, owner: KubeObject): boolean {
  return (object.metadata?.ownerReferences ?? []).some((r) => refersTo(r, owner));
}

/** Whether `owner` is the controller of `object`. */
export function isControlledBy(object: KubeObject, owner: KubeObject): boolean {
  const reference = controllerOf(object);
  return reference !== undefined && refersTo(reference, owner);
}

/** The controller reference of `object`, if it has one. */
export function controllerOf(object: KubeObject): OwnerReference | undefined {
  return object.metadata?.ownerReferences?.find((r) => r.controller === true);
}

function withReference<T extends KubeObject>(object: T, reference: OwnerReference): T {
  const references = object.metadata?.ownerReferences ?? [];
  const index = references.findIndex((r) => sameObject(r, reference));
  const next = index === -1 ? [...references, reference] : references.with(index, reference);
  return { ...object, metadata: { ...object.metadata, ownerReferences: next } };
}

/**
 * The API server does not check these, but the garbage collector treats a reference it cannot
 * resolve in the child's own namespace (or at cluster scope) as dangling, and deletes the child.
 */
function checkScopes(object: KubeObject, owner: KubeObject): void {
  const ownerNamespace = owner.metadata?.namespace;
  if (!ownerNamespace) return; // a cluster-scoped owner may own anything
  const namespace = object.metadata?.namespace;
  if (!namespace) {
    throw new InvalidOwnerReference(
      `${describe(object)} has no namespace, so it cannot be owned by ${describe(owner)}: a cluster-scoped ` +
        "object cannot have a namespaced owner. If the object is namespaced, set its metadata.namespace",
    );
  }
  if (namespace !== ownerNamespace) {
    throw new InvalidOwnerReference(
      `${describe(object)} cannot be owned by ${describe(owner)}: owner references cannot cross namespaces`,
    );
  }
}

function refersTo(reference: OwnerReference, owner: KubeObject): boolean {
  const uid = owner.metadata?.uid;
  return (
    groupOf(reference.apiVersion) === groupOf(owner.apiVersion ?? "") &&
    reference.kind === owner.kind &&
    reference.name === owner.metadata?.name &&
    (!uid || !reference.uid || reference.uid === uid)
  );
}

/** Same object for replacement: group, kind and name (controller-runtime's `referSameObject`). */
function sameObject(a: OwnerReference, b: OwnerReference): boolean {
  return groupOf(a.apiVersion) === groupOf(b.apiVersion) && a.kind === b.kind && a.name === b.name;
}

function describe(object: KubeObject): string {
  const namespace = object.metadata?.namespace;
  const name = object.metadata?.name ?? object.metadata?.generateName ?? "(unnamed)";
  return `${object.kind ?? "object"} ${namespace ? `${namespace}/` : ""}${name}`;
}
