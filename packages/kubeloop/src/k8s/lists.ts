/**
 * How the lists of built-in kinds merge, from their OpenAPI schemas (lists.json, generated with the
 * types): by key, as a set, or whole. Server-side apply reads `x-kubernetes-list-type` and
 * `x-kubernetes-list-map-keys`, strategic merge patch `x-kubernetes-patch-merge-key` and
 * `x-kubernetes-patch-strategy`; an object with `x-kubernetes-map-type: atomic` is applied whole.
 */
import table from "./lists.json" with { type: "json" };

interface Entry {
  of?: string;
  map?: boolean;
  list?: string;
  keys?: string[];
  merge?: string;
  strategy?: string;
  atomic?: boolean;
}
const TABLE: Record<string, Record<string, Entry> | undefined> = table;

/** How the field at a path merges (see {@link listTypeAt}). */
export interface ListType {
  /**
   * `map`: a list whose items merge by `keys`; `set`: a list of scalars merged as a set; `atomic`:
   * replaced whole (any other field, too); `atomic-struct`: an object apply replaces whole.
   */
  type: "map" | "set" | "atomic" | "atomic-struct";
  /** A `map` list's keys (`x-kubernetes-list-map-keys`). */
  keys?: readonly string[];
  /** Strategic merge patch: the field items merge by (`x-kubernetes-patch-merge-key`). */
  patchMergeKey?: string;
  /** Strategic merge patch: `merge`, `retainKeys` or both (`x-kubernetes-patch-strategy`). */
  patchStrategy?: string;
}

/**
 * How the field at `path` of a built-in kind merges in server-side apply and strategic merge patch.
 * The path is field names, without list indices (a map's keys are in it).
 *
 * @example
 * ```ts
 * import { Deployment, listTypeAt } from "kubeloop/k8s";
 * listTypeAt(Deployment, ["spec", "template", "spec", "containers"]);
 * // { type: "map", keys: ["name"], patchMergeKey: "name", patchStrategy: "merge" }
 * ```
 */
export function listTypeAt(type: { readonly schema?: string }, path: readonly string[]): ListType {
  let schema = type.schema;
  let entry: Entry | undefined;
  for (let i = 0; i < path.length; i++) {
    entry = schema ? TABLE[schema]?.[path[i] ?? ""] : undefined;
    if (!entry) return { type: "atomic" };
    schema = entry.of;
    if (entry.map) i++; // the next segment is the map's key
  }
  if (!entry) return { type: "atomic" };
  const patch = {
    ...(entry.merge ? { patchMergeKey: entry.merge } : {}),
    ...(entry.strategy ? { patchStrategy: entry.strategy } : {}),
  };
  if (entry.list === "map") return { type: "map", keys: entry.keys ?? [], ...patch };
  if (entry.list === "set") return { type: "set", ...patch };
  if (entry.atomic) return { type: "atomic-struct" };
  return { type: "atomic", ...patch };
}
