/**
 * Errors of the resources layer. They are thrown before a request is sent, for inputs the API
 * server would reject (with a 422 in the middle of a reconcile) or for ownership it would accept
 * but the garbage collector would get wrong; each says what to change.
 */

import type { OwnerReference } from "kubernetes-types/meta/v1.js";

/**
 * The object already has a controller owner reference to another object. An object has at most one
 * controller; adopting it would leave two controllers fighting over it.
 */
export class AlreadyOwned extends Error {
  override readonly name = "AlreadyOwned";
  /** The controller reference already on the object. */
  readonly existing: OwnerReference;

  constructor(message: string, existing: OwnerReference) {
    super(message);
    this.existing = existing;
  }
}

/**
 * The owner reference cannot work: the owner has no uid yet (it was never read from the server), or
 * the scopes do not allow it (a namespaced owner of an object in another namespace, or of a
 * cluster-scoped object). The garbage collector would treat such a reference as dangling and
 * delete the child.
 */
export class InvalidOwnerReference extends Error {
  override readonly name = "InvalidOwnerReference";
}

/** A condition the API server would reject: a bad type, reason, status or observedGeneration. */
export class InvalidCondition extends Error {
  override readonly name = "InvalidCondition";
}

/** An event the API server would reject (missing or too long reason/action, bad type). */
export class InvalidEvent extends Error {
  override readonly name = "InvalidEvent";
}
