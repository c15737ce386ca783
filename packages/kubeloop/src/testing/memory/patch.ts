import { kindKeyOf } from "../../client/index.js";
import { BUILTIN_KINDS, type ListType, listTypeAt } from "../../k8s/index.js";
import { clone } from "./clone.js";
import { badRequest, internal, NotEmulated, StatusError } from "./errors.js";

/**
 * The three patch formats of PATCH requests: JSON merge patch (RFC 7386), JSON patch (RFC 6902)
 * and strategic merge patch (built-in kinds only, with their lists' patch merge keys from their
 * OpenAPI schemas).
 */

type Json = unknown;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** RFC 7386: objects merge key by key, `null` deletes, anything else (lists included) replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

type Operation = { op: string; path: string; value?: Json; from?: string };

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/"))
    throw badRequest(`the server rejected our request due to an error in our request`);
  return path
    .slice(1)
    .split("/")
    .map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** kube-apiserver's (evanphx/json-patch's) errors come back as 422 with this wording. */
function patchFailed(message: string): StatusError {
  return new StatusError({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    message,
    reason: "Invalid",
    code: 422,
  } as StatusError["status"]);
}

/** RFC 6902, with the API server's error answers for a failed `test` or a missing path. */
export function jsonPatch(target: Json, operations: Json): Json {
  if (!Array.isArray(operations))
    throw badRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  let document = clone(target);
  for (const operation of operations as Operation[]) {
    const parts = pointer(operation.path);
    switch (operation.op) {
      case "add":
        document = put(document, parts, clone(operation.value), "add");
        break;
      case "replace":
        document = put(document, parts, clone(operation.value), "replace");
        break;
      case "remove":
        document = remove(document, parts, operation.path);
        break;
      case "test": {
        const found = get(document, parts);
        if (JSON.stringify(found) !== JSON.stringify(operation.value))
          throw patchFailed(`the server rejected our request due to an error in our request`);
        break;
      }
      case "move":
      case "copy": {
        const from = pointer(operation.from ?? "");
        const value = get(document, from);
        if (value === undefined)
          throw patchFailed(`the server rejected our request due to an error in our request`);
        if (operation.op === "move") document = remove(document, from, operation.from ?? "");
        document = put(document, parts, clone(value), "add");
        break;
      }
      default:
        throw badRequest(`Unexpected kind: ${operation.op}`);
    }
  }
  return document;
}

function get(document: Json, parts: string[]): Json {
  let node = document;
  for (const part of parts) {
    if (Array.isArray(node)) node = node[Number(part)];
    else if (isObject(node)) node = node[part];
    else return undefined;
  }
  return node;
}

function put(document: Json, parts: string[], value: Json, op: "add" | "replace"): Json {
  if (parts.length === 0) return value;
  const parent = get(document, parts.slice(0, -1));
  const last = parts.at(-1) ?? "";
  const missing = () =>
    patchFailed(
      op === "replace"
        ? `the server rejected our request due to an error in our request`
        : `the server rejected our request due to an error in our request`,
    );
  if (Array.isArray(parent)) {
    const index = last === "-" ? parent.length : Number(last);
    if (
      !Number.isInteger(index) ||
      index < 0 ||
      index > parent.length ||
      (op === "replace" && index >= parent.length)
    )
      throw missing();
    if (op === "add") parent.splice(index, 0, value);
    else parent[index] = value;
  } else if (isObject(parent)) {
    if (op === "replace" && !(last in parent)) throw missing();
    parent[last] = value;
  } else {
    throw missing();
  }
  return document;
}

function remove(document: Json, parts: string[], path: string): Json {
  const parent = get(document, parts.slice(0, -1));
  const last = parts.at(-1) ?? "";
  if (Array.isArray(parent) && Number(last) < parent.length) parent.splice(Number(last), 1);
  else if (isObject(parent) && last in parent) delete parent[last];
  else throw patchFailed(`the server rejected our request due to an error in our request`);
  void path;
  return document;
}

/** A built-in kind, as the server names it. */
export interface BuiltinKind {
  group: string;
  version: string;
  kind: string;
}

const BY_KIND = new Map<string, (typeof BUILTIN_KINDS)[number]>(BUILTIN_KINDS.map((t) => [kindKeyOf(t), t]));
const OBJECT_META = { schema: "meta/v1.ObjectMeta" };

/**
 * How the lists of a built-in kind merge, by the field names on their path: kubeloop/k8s's
 * `listTypeAt`, generated from the kind's OpenAPI schema (x-kubernetes-list-type and
 * list-map-keys for apply, patch-merge-key and patch-strategy for strategic merge). Any other
 * object's metadata merges as ObjectMeta's.
 */
export function builtinLists(kind: BuiltinKind): (path: readonly string[]) => ListType {
  const type = BY_KIND.get(`${kind.group ? `${kind.group}/` : ""}${kind.version}/${kind.kind}`);
  if (type) return (path) => listTypeAt(type, path);
  return (path) => (path[0] === "metadata" ? listTypeAt(OBJECT_META, path.slice(1)) : { type: "atomic" });
}

/** What strategic merge patch merges a list by: a key field, `"set"` (scalars), or nothing (replaced). */
function patchMergeKey(list: ListType): string | "set" | undefined {
  if (!list.patchStrategy?.split(",").includes("merge")) return undefined;
  return list.patchMergeKey ?? "set";
}

/**
 * Strategic merge patch: a merge patch whose lists with a patch merge key merge item by item.
 * The `$patch`, `$retainKeys`, `$setElementOrder` and `$deleteFromPrimitiveList` directives are
 * refused (not emulated).
 */
export function strategicMergePatch(
  target: Json,
  patch: Json,
  lists: (path: readonly string[]) => ListType,
  path: string[] = [],
): Json {
  if (!isObject(patch)) return clone(patch);
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$"))
      throw new NotEmulated(`strategic merge patch directives (${key} at ${path.join(".") || "<root>"})`);
    if (value === null) {
      delete result[key];
      continue;
    }
    const childPath = [...path, key];
    if (Array.isArray(value)) {
      const mergeKey = patchMergeKey(lists(childPath));
      const current = Array.isArray(result[key]) ? (result[key] as Json[]) : [];
      if (mergeKey === "set") {
        result[key] = [
          ...current,
          ...value.filter((v) => !current.some((c) => JSON.stringify(c) === JSON.stringify(v))),
        ];
      } else if (mergeKey) {
        const merged = current.map((c) => clone(c));
        for (const item of value) {
          if (isObject(item) && Object.keys(item).some((k) => k.startsWith("$")))
            throw new NotEmulated(`strategic merge patch directives (in ${childPath.join(".")})`);
          const at = isObject(item)
            ? merged.findIndex((c) => isObject(c) && c[mergeKey] === item[mergeKey])
            : -1;
          if (at >= 0) merged[at] = strategicMergePatch(merged[at], item, lists, childPath);
          else merged.push(clone(item));
        }
        result[key] = merged;
      } else {
        result[key] = clone(value);
      }
    } else {
      result[key] = strategicMergePatch(result[key], value, lists, childPath);
    }
  }
  return result;
}

export function parseBody(body: unknown): Json {
  if (typeof body !== "string") return body;
  try {
    return JSON.parse(body);
  } catch (error) {
    throw internal(`could not decode the request body: ${(error as Error).message}`);
  }
}
