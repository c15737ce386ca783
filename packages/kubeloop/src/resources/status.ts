import type { ApplyOptions, Client, KubeObject, Written } from "../client/index.js";
import { identify } from "./identify.js";

/**
 * Writes to the status subresource. A controller writes status there, not with the object, so its
 * writes never race users' spec edits (and users, who lack `…/status` permission, cannot forge it).
 * The type must serve the `status` subresource (CRDs: `subresources: { status: {} }`), else the
 * server answers 404.
 */

/** The `status` type of an object type, or a plain record when it declares none. */
export type StatusOf<T> = T extends { status?: infer S } ? NonNullable<S> : Record<string, unknown>;

/** A merge patch of a status: fields given replace (arrays whole), `null` removes, the rest stays. */
export type StatusPatch<T> = { [K in keyof StatusOf<T>]?: StatusOf<T>[K] | null };

/** Options of `patchStatus`: a merge patch of the status subresource. */
export interface PatchStatusOptions {
  /**
   * Send `object`'s resourceVersion with the patch, so the server answers 409 Conflict if the object
   * changed since it was read (controller-runtime's `MergeFromWithOptimisticLock`). Default false:
   * a status computed from the latest cache read is rewritten on the next reconcile anyway.
   */
  optimisticLock?: boolean;
}

/**
 * Merge-patches (RFC 7386) `status` into `object`'s status subresource and returns the object as
 * the server wrote it. Only the fields given change; e.g. `conditions` is replaced as a whole, so
 * pass the full list (see `setCondition`).
 */
export async function patchStatus<T extends KubeObject>(
  client: Client,
  object: T,
  status: StatusPatch<T>,
  options: PatchStatusOptions = {},
): Promise<Written<T>> {
  const { type, name, namespace } = identify(object, "patchStatus");
  const resourceVersion = object.metadata?.resourceVersion;
  if (options.optimisticLock && !resourceVersion) {
    throw new TypeError(
      `patchStatus with optimisticLock needs ${type.kind} ${name}'s metadata.resourceVersion`,
    );
  }
  const patch = options.optimisticLock ? { metadata: { resourceVersion }, status } : { status };
  return (await client.patch(type, name, patch, {
    ...(namespace ? { namespace } : {}),
    subresource: "status",
  })) as Written<T>;
}

/** Options of `applyStatus`: server-side apply of the status subresource, forcing by default. */
export interface ApplyStatusOptions extends Omit<ApplyOptions, "force"> {
  /**
   * Take fields another manager owns. Default true: the status is the controller's own record,
   * and without force a field once written by another manager (a `kubectl edit --subresource
   * status`, or this controller under an old manager name) would make every later apply fail.
   */
  force?: boolean;
}

/**
 * Server-side apply of `status` as `fieldManager`: the applied object is only apiVersion, kind,
 * name, namespace and the status, so no other field is claimed. Like every apply, it is the full
 * intent of this manager: status fields it applied before and leaves out now are removed.
 */
export async function applyStatus<T extends KubeObject>(
  client: Client,
  object: T,
  status: StatusOf<T>,
  options: ApplyStatusOptions,
): Promise<Written<T>> {
  const { type, name, namespace } = identify(object, "applyStatus");
  const applied = {
    apiVersion: type.apiVersion,
    kind: type.kind,
    metadata: { name, ...(namespace ? { namespace } : {}) },
    status,
  };
  const written = await client.applyStatus(applied, { ...options, force: options.force ?? true });
  return written as unknown as Written<T>;
}
