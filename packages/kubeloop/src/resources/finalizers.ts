import type { Client, KubeObject } from "../client/index.js";
import { NotFound } from "../client/index.js";
import { identify } from "./identify.js";
import { isQualifiedName } from "./names.js";
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from "./retry.js";

/**
 * Finalizers: a name on `metadata.finalizers` makes the API server keep a deleted object (with
 * `deletionTimestamp` set) until that name is removed, which gives the controller its chance to
 * clean up what the object stands for outside the cluster.
 *
 * Several controllers (and users) put finalizers on one object, so the writes must never clobber
 * each other. Each change is a JSON patch that appends or removes one entry and replaces
 * `metadata.resourceVersion` with the one it was computed from: if the object changed meanwhile,
 * the server answers 409 Conflict, and we read it again and redo the change (a few times). A `test`
 * op would also guard it, but a failed test is a generic 422 that cannot be told from a real
 * validation error; the resourceVersion precondition is a Conflict, the error every writer retries.
 */

export interface FinalizerOptions {
  /** Field manager of the writes (who changed `metadata.finalizers`). */
  fieldManager?: string;
  /** Attempts in all when the object keeps changing under us. Default {@link DEFAULT_CONFLICT_ATTEMPTS}. */
  attempts?: number;
}

/** Whether `object` carries the finalizer. */
export function hasFinalizer(object: KubeObject, name: string): boolean {
  return object.metadata?.finalizers?.includes(name) ?? false;
}

/** Whether the API server is deleting the object (it waits only for finalizers now). */
export function isDeleting(object: KubeObject): boolean {
  return Boolean(object.metadata?.deletionTimestamp);
}

/**
 * Adds the finalizer and returns the object as the server wrote it; no request if `object` already
 * has it. The server rejects new finalizers on an object being deleted (422).
 */
export async function addFinalizer<T extends KubeObject>(
  client: Client,
  object: T,
  name: string,
  options: FinalizerOptions = {},
): Promise<T> {
  checkFinalizerName(name);
  if (hasFinalizer(object, name)) return object;
  const target = identify(object, "addFinalizer");
  return retryOnConflict(async (attempt) => {
    const current =
      attempt === 0 && object.metadata?.resourceVersion ? object : await read<T>(client, target);
    if (hasFinalizer(current, name)) return current;
    if (isDeleting(current)) {
      throw new Error(
        `addFinalizer: ${target.type.kind} ${target.name} is being deleted, and the API server accepts no new finalizers then`,
      );
    }
    const finalizers = current.metadata?.finalizers;
    const add = finalizers
      ? { op: "add", path: "/metadata/finalizers/-", value: name }
      : { op: "add", path: "/metadata/finalizers", value: [name] };
    return write(client, target, current, [add], options);
  }, options.attempts);
}

/**
 * Removes the finalizer (every copy of it) and returns the object as the server wrote it, or
 * `undefined` if the object is gone (removing the last finalizer of a deleted object completes its
 * deletion; the response is its final state). No request if `object` does not have it.
 */
export async function removeFinalizer<T extends KubeObject>(
  client: Client,
  object: T,
  name: string,
  options: FinalizerOptions = {},
): Promise<T | undefined> {
  checkFinalizerName(name);
  if (!hasFinalizer(object, name)) return object;
  const target = identify(object, "removeFinalizer");
  try {
    return await retryOnConflict(async (attempt) => {
      const current =
        attempt === 0 && object.metadata?.resourceVersion ? object : await read<T>(client, target);
      const finalizers = current.metadata?.finalizers ?? [];
      // Highest index first, so earlier removals do not shift the later ones.
      const removals = finalizers
        .map((f, index) => (f === name ? index : -1))
        .filter((index) => index !== -1)
        .reverse()
        .map((index) => ({ op: "remove", path: `/metadata/finalizers/${index}` }));
      if (removals.length === 0) return current;
      return write(client, target, current, removals, options);
    }, options.attempts);
  } catch (error) {
    if (error instanceof NotFound) return undefined;
    throw error;
  }
}

/** What {@link handleFinalizer} did. */
export type FinalizerResult<T> =
  /** The object is live and lacked the finalizer: it was added. Go on reconciling. */
  | { state: "added"; object: T }
  /** The object is live and had the finalizer: nothing written. Go on reconciling. */
  | { state: "present"; object: T }
  /**
   * The object is being deleted: cleanup succeeded and the finalizer was removed. `object` is its
   * last state (gone from the server if ours was the last finalizer), `undefined` if someone else
   * completed the deletion first. Stop reconciling.
   */
  | { state: "finalized"; object: T | undefined }
  /**
   * The object is being deleted and our finalizer is not on it (cleanup done earlier, or never
   * added): nothing to do. Stop reconciling.
   */
  | { state: "not-ours"; object: T };

/**
 * The finalizer protocol in one call, for the top of a reconcile:
 * - object live → make sure it carries the finalizer (`added` / `present`);
 * - object being deleted with our finalizer → run `cleanup(object)`; once it resolves, remove the
 *   finalizer (`finalized`). If cleanup throws, the finalizer stays and the error propagates, so
 *   the reconcile is retried with backoff and the object cannot disappear before it is cleaned up.
 *   Cleanup may therefore run more than once (a failed removal, a restart): make it idempotent;
 * - object being deleted without our finalizer → `not-ours`.
 *
 * @example
 * ```ts
 * const result = await handleFinalizer(client, bucket, "storage.example.com/bucket", () => deleteBucket(bucket));
 * if (result.state === "finalized" || result.state === "not-ours") return done();
 * // ...reconcile the live object
 * ```
 */
export async function handleFinalizer<T extends KubeObject>(
  client: Client,
  object: T,
  name: string,
  cleanup: (object: T) => unknown,
  options: FinalizerOptions = {},
): Promise<FinalizerResult<T>> {
  checkFinalizerName(name);
  if (!isDeleting(object)) {
    if (hasFinalizer(object, name)) return { state: "present", object };
    return { state: "added", object: await addFinalizer(client, object, name, options) };
  }
  if (!hasFinalizer(object, name)) return { state: "not-ours", object };
  await cleanup(object);
  return { state: "finalized", object: await removeFinalizer(client, object, name, options) };
}

function checkFinalizerName(name: string): void {
  if (typeof name !== "string" || !isQualifiedName(name)) {
    throw new TypeError(
      `Finalizer ${JSON.stringify(name)} is not a valid name: use a domain-qualified name such as ` +
        `"example.com/cleanup" (a DNS-subdomain prefix, "/", then up to 63 letters, digits, "-", "_", ".")`,
    );
  }
}

type Target = ReturnType<typeof identify>;

async function read<T extends KubeObject>(client: Client, target: Target): Promise<T> {
  const namespace = target.namespace ? { namespace: target.namespace } : {};
  return (await client.get(target.type, target.name, namespace)) as T;
}

/** The ops, guarded by the resourceVersion they were computed from (a stale one → 409 Conflict). */
async function write<T extends KubeObject>(
  client: Client,
  target: Target,
  current: T,
  ops: object[],
  options: FinalizerOptions,
): Promise<T> {
  const guard = {
    op: "replace",
    path: "/metadata/resourceVersion",
    value: current.metadata?.resourceVersion,
  };
  return (await client.patch(target.type, target.name, [guard, ...ops], {
    type: "json",
    ...(target.namespace ? { namespace: target.namespace } : {}),
    ...(options.fieldManager ? { fieldManager: options.fieldManager } : {}),
  })) as T;
}
