import type { KubeObject } from "../../client/index.js";
import { groupOf } from "../../resources/internal.js";

/**
 * Which replica of a ring owns an object: rendezvous (highest-random-weight) hashing of the
 * object's key over the ring's available shards. Every shard scores `hash(shard, key)`; the
 * highest wins. Adding a shard moves only the objects it now wins (≈ 1/N of them), removing one
 * moves only its own, and no virtual nodes are needed for an even spread.
 *
 * The label keys are kubernetes-controller-sharding's, so its sharder can drive kubeloop shards
 * (and the other way round): `shard.alpha.sharding.timebertt.dev/<ring>` holds the assignment, the
 * presence of `drain.alpha.sharding.timebertt.dev/<ring>` asks the owner to let the object go, and
 * each shard's Lease is labelled `alpha.sharding.timebertt.dev/controllerring=<ring>`.
 */

/** The label on a shard's Lease naming its ring. */
export const RING_LABEL = "alpha.sharding.timebertt.dev/controllerring";

/** The label holding an object's shard. */
export function shardLabel(ring: string): string {
  return `shard.alpha.sharding.timebertt.dev/${ring}`;
}

/** The label asking the current shard to let an object go (only its presence matters). */
export function drainLabel(ring: string): string {
  return `drain.alpha.sharding.timebertt.dev/${ring}`;
}

/** Label values and label-key name parts: at most 63 alphanumerics, `-`, `_`, `.`, alphanumeric at both ends. */
const LABEL_VALUE = /^[a-zA-Z0-9]([-_.a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$/;
/** Lease names (DNS subdomains), and shard ids, which name Leases and are label values. */
const SHARD_ID = /^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/;

/** Checks a ring name (it becomes part of label keys); the error names the fix. */
export function checkRing(ring: string): string {
  if (!SHARD_ID.test(ring))
    throw new TypeError(
      `Sharding ring "${ring}" must be 1–63 lowercase letters, digits, "-" and "." (it is part of label keys)`,
    );
  return ring;
}

/** Checks a shard id (it names the shard's Lease and is the label value of its objects). */
export function checkShardId(id: string): string {
  if (!SHARD_ID.test(id) || !LABEL_VALUE.test(id))
    throw new TypeError(
      `Shard id "${id}" must be 1–63 lowercase letters, digits, "-" and "." (it names a Lease and is a label value); ` +
        "set sharding.id, or run in a pod whose name fits (the default is $POD_NAME or the hostname)",
    );
  return id;
}

/**
 * The key an object is hashed by: `group/kind/namespace/name` of itself, or of its controller
 * owner, so that an object and its children land on the same shard. The version is left out
 * (objects keep their shard across versions), and so is the UID (unset before creation).
 */
export function shardKey(object: KubeObject, type: { apiVersion: string; kind: string }): string {
  const namespace = object.metadata?.namespace ?? "";
  const owner = object.metadata?.ownerReferences?.find((ref) => ref.controller);
  if (owner) return `${groupOf(owner.apiVersion)}/${owner.kind}/${namespace}/${owner.name}`;
  return `${groupOf(type.apiVersion)}/${type.kind}/${namespace}/${object.metadata?.name ?? ""}`;
}

/**
 * The shard that owns `key` among `shards` (rendezvous hashing); `undefined` when there is none.
 *
 * @example
 * ```ts
 * ownerOf("apps/Deployment/default/web", ["replica-a", "replica-b", "replica-c"]); // e.g. "replica-b"
 * ```
 */
export function ownerOf(key: string, shards: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const shard of shards) {
    const score = score32(shard, key);
    // Ties (1 in 2³² per pair) go to the smaller name, so every sharder agrees.
    if (score > bestScore || (score === bestScore && best !== undefined && shard < best)) {
      best = shard;
      bestScore = score;
    }
  }
  return best;
}

/** FNV-1a over `shard \0 key`, finished with murmur3's fmix32 so that close inputs score far apart. */
function score32(shard: string, key: string): number {
  let h = 0x811c9dc5;
  const mix = (text: string) => {
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
  };
  mix(shard);
  h ^= 0;
  h = Math.imul(h, 0x01000193);
  mix(key);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
