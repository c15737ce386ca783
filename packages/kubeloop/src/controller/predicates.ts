import type { KubeObject } from "../client/index.js";

/**
 * Predicates decide which changes wake a controller. They see the change, not just the object,
 * so "the spec changed" (generation) can be told apart from "only the status changed".
 *
 * @example
 * ```ts
 * controller(Nginx).withPredicates(or(generationChanged(), labelsChanged()))
 * ```
 */

export interface Change<T extends KubeObject = KubeObject> {
  type: "added" | "updated" | "deleted" | "generic";
  object: T;
  /** The previous state, for updates. */
  old?: T;
}

/** Decides whether a change (create, update, delete) of a watched object reaches the queue. */
export type Predicate<T extends KubeObject = KubeObject> = (change: Change<T>) => boolean;

/** Updates pass only when `metadata.generation` changed (the spec, for types with a status subresource). */
export function generationChanged<T extends KubeObject>(): Predicate<T> {
  return onUpdate((old, object) => old.metadata?.generation !== object.metadata?.generation);
}

/** Updates pass only when `metadata.labels` changed. */
export function labelsChanged<T extends KubeObject>(): Predicate<T> {
  return onUpdate((old, object) => !sameRecord(old.metadata?.labels, object.metadata?.labels));
}

/** Updates pass only when `metadata.annotations` changed. */
export function annotationsChanged<T extends KubeObject>(): Predicate<T> {
  return onUpdate((old, object) => !sameRecord(old.metadata?.annotations, object.metadata?.annotations));
}

/** Drops updates that changed nothing (relists deliver those). */
export function resourceVersionChanged<T extends KubeObject>(): Predicate<T> {
  return onUpdate((old, object) => old.metadata?.resourceVersion !== object.metadata?.resourceVersion);
}

/** Passes a change that every one of `predicates` passes. */
export function and<T extends KubeObject>(...predicates: Predicate<T>[]): Predicate<T> {
  return (change) => predicates.every((p) => p(change));
}

/** Passes a change that at least one of `predicates` passes. */
export function or<T extends KubeObject>(...predicates: Predicate<T>[]): Predicate<T> {
  return (change) => predicates.some((p) => p(change));
}

/** Passes a change that `predicate` drops, and drops what it passes. */
export function not<T extends KubeObject>(predicate: Predicate<T>): Predicate<T> {
  return (change) => !predicate(change);
}

/** A predicate about updates only: creates, deletes and generic events pass. */
function onUpdate<T extends KubeObject>(test: (old: T, object: T) => boolean): Predicate<T> {
  return (change) => change.type !== "updated" || !change.old || test(change.old, change.object);
}

function sameRecord(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ak = Object.keys(a ?? {});
  const bk = Object.keys(b ?? {});
  return ak.length === bk.length && ak.every((key) => a?.[key] === b?.[key]);
}
