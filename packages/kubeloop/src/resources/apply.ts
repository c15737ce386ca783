import { isDeepStrictEqual } from "node:util";
import type {
  ApplyOptions,
  Client,
  KubeObject,
  ResourceType,
  WriteOptions,
  Written,
} from "../client/index.js";
import { AlreadyExists, Conflict, ignoreNotFound, refOfKey, refTo } from "../client/index.js";
import { setControllerReference } from "./owner-references.js";
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from "./retry.js";

/**
 * The two ways a controller writes its children: server-side apply of the desired state
 * ({@link applyOwned}, the default and idempotent by construction), and read-mutate-update
 * ({@link createOrUpdate}, for types or fields where apply does not fit, e.g. merging into an
 * object a user also edits by hand).
 */

export interface ApplyOwnedOptions extends Omit<ApplyOptions, "force"> {
  /**
   * Take over fields another field manager owns. Default true, as controller-runtime recommends
   * for a controller's own children (`client.ForceOwnership`): the controller is the source of truth
   * for every field it sets, and without force one `kubectl edit` of such a field would make each
   * later apply fail with a Conflict, so the controller could never restore its desired state.
   * Fields the controller leaves out stay with their owners (leave out `replicas` under an HPA).
   */
  force?: boolean;
  /**
   * The object as it is now (e.g. from the cache), if known: when another owner controls it,
   * fail with `AlreadyOwned` instead of writing. Without it, apply cannot tell (see below).
   */
  current?: KubeObject;
}

/**
 * Sets `owner` as `object`'s controller (see `setControllerReference`) and server-side applies it
 * as `fieldManager`. Applying the same object again changes nothing (not even the resourceVersion).
 *
 * Apply sends the desired object, not the live one, so a controller reference already on the child
 * is only seen by the server: if another field manager wrote it, the server refuses a second
 * controller (422 Invalid); if this same manager wrote it (two primaries of one controller
 * claiming a child of the same name), apply replaces it, as it replaces any field the manager no
 * longer sets, and the child changes hands. Pass `current` to refuse that instead.
 */
export async function applyOwned<T extends KubeObject>(
  client: Client,
  object: T,
  owner: KubeObject,
  options: ApplyOwnedOptions,
): Promise<Written<T>> {
  const { current, force, ...applyOptions } = options;
  if (current) setControllerReference(current, owner); // throws AlreadyOwned if another controls it
  return client.apply(setControllerReference(object, owner), { ...applyOptions, force: force ?? true });
}

/** What {@link createOrUpdate} did. */
export type Operation = "created" | "updated" | "unchanged";

/** What `createOrUpdate` did (created, updated, or nothing to change), and the object as the server has it. */
export interface CreateOrUpdateResult<T extends KubeObject> {
  operation: Operation;
  /** The object as the server has it now. */
  object: T;
}

/** Options of `createOrUpdate`: the writes' options, and how often to retry a conflict. */
export interface CreateOrUpdateOptions extends WriteOptions {
  /** Attempts in all when the object changes (or appears) under us. Default {@link DEFAULT_CONFLICT_ATTEMPTS}. */
  attempts?: number;
}

/**
 * Changes an object in place, or builds it from nothing. Return the object, or nothing to keep
 * the one given. It must not change the name or namespace, and must be a pure function of the
 * object it gets: it runs again on each retry.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a mutate that edits in place returns nothing (void).
export type Mutate<T> = (object: T) => T | void | Promise<T | void>;

/**
 * controller-runtime's `controllerutil.CreateOrUpdate`: reads the object; if it does not exist,
 * creates `mutate({ apiVersion, kind, metadata: { name, namespace } })`; else runs `mutate` on a
 * copy and updates only if something changed. The update is a compare-and-swap on the
 * resourceVersion read, so a concurrent change is never overwritten: on Conflict (or AlreadyExists,
 * when another writer created it first) the whole read-mutate-write is retried, a bounded number of times.
 *
 * @example
 * ```ts
 * const { operation } = await createOrUpdate(client, ConfigMap, { name: "settings", namespace: "default" }, (cm) => {
 *   cm.data = { ...cm.data, color: "blue" };
 * });
 * ```
 */
export async function createOrUpdate<T extends KubeObject>(
  client: Client,
  type: ResourceType<T>,
  key: string | { name: string; namespace?: string },
  mutate: Mutate<T>,
  options: CreateOrUpdateOptions = {},
): Promise<CreateOrUpdateResult<T>> {
  const { name, namespace } = parseKey(key);
  const { attempts, ...writeOptions } = options;
  const where = namespace ? { namespace } : {};
  return retryOnConflict<CreateOrUpdateResult<T>>(
    async () => {
      const existing = await client.get(refTo(type, name, namespace)).catch(ignoreNotFound);
      if (!existing) {
        const empty = { apiVersion: type.apiVersion, kind: type.kind, metadata: { name, ...where } } as T;
        const desired = await mutated(mutate, empty, name, namespace);
        return { operation: "created", object: await client.create(desired, writeOptions) };
      }
      const desired = await mutated(mutate, structuredClone(existing), name, namespace);
      // Through JSON, as the server will see it: a field set to `undefined` is no change.
      if (isDeepStrictEqual(existing, JSON.parse(JSON.stringify(desired)))) {
        return { operation: "unchanged", object: existing };
      }
      return { operation: "updated", object: await client.update(desired, writeOptions) };
    },
    attempts ?? DEFAULT_CONFLICT_ATTEMPTS,
    (error) => error instanceof Conflict || error instanceof AlreadyExists,
  );
}

async function mutated<T extends KubeObject>(
  mutate: Mutate<T>,
  object: T,
  name: string,
  namespace: string | undefined,
): Promise<T> {
  const result = (await mutate(object)) ?? object;
  if (result.metadata?.name !== name || (result.metadata?.namespace || undefined) !== namespace) {
    throw new TypeError(
      `createOrUpdate: mutate must not change the object's name or namespace (${namespace ? `${namespace}/` : ""}${name})`,
    );
  }
  return result;
}

function parseKey(key: string | { name: string; namespace?: string }): { name: string; namespace?: string } {
  if (typeof key !== "string") return key.namespace ? key : { name: key.name };
  const { name, namespace } = refOfKey(key);
  return namespace ? { name, namespace } : { name };
}
