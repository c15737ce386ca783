import { clone } from "./clone.js";
import { StatusError } from "./errors.js";
import { type BuiltinKind, builtinLists } from "./patch.js";

/**
 * Server-side apply and field ownership (managedFields): which manager owns which fields, what an
 * apply removes (fields its manager applied before and no longer does, unless someone else owns
 * them), and conflicts (a field another manager owns, set to a different value; `force` takes it).
 *
 * Lists follow the schema: `x-kubernetes-list-type: map` (a custom resource's, or a built-in kind's
 * OpenAPI schema: containers by name, …) merge item by item; `set` as sets; any other list is atomic.
 */

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** How a list merges: by key fields, as a set of scalars, or whole. */
export type ListKind =
  | { type: "map"; keys: string[] }
  | { type: "set" }
  | { type: "atomic" }
  | { type: "atomic-struct" };
/** The list type at a path of field names (indices left out). */
export type ListTypes = (path: string[]) => ListKind;

/** Lists of custom resources, from their structural schema. */
export function schemaListTypes(schema: Obj | undefined): ListTypes {
  return (path) => {
    let node: Obj | undefined = schema;
    for (const name of path) {
      if (!node) break;
      if (node.type === "array") node = node.items as Obj | undefined;
      const properties = node?.properties as Record<string, Obj> | undefined;
      node =
        properties?.[name] ??
        (isObject(node?.additionalProperties) ? (node?.additionalProperties as Obj) : undefined);
    }
    if (path[0] === "metadata") return metadataListTypes(path);
    const type = node?.["x-kubernetes-list-type"];
    if (type === "map")
      return { type: "map", keys: (node?.["x-kubernetes-list-map-keys"] as string[]) ?? [] };
    if (type === "set") return { type: "set" };
    return { type: "atomic" };
  };
}

/** Lists of built-in kinds, from their OpenAPI schemas (kubeloop/k8s's generated list table). */
export function builtinListTypes(kind: BuiltinKind): ListTypes {
  const lists = builtinLists(kind);
  return (path) => {
    const list = lists(path);
    return list.type === "map" ? { type: "map", keys: [...(list.keys ?? [])] } : { type: list.type };
  };
}

const metadataListTypes = builtinListTypes({ group: "", version: "", kind: "" });

/** A path segment: a field, a keyed list item, or a set value. */
type Segment = string; // "f:name" | "k:{...}" | "v:..."
type Path = Segment[];
const SEP = "\u0001";

function itemKey(item: Obj, keys: string[]): string {
  const key: Obj = {};
  // A port's protocol is defaulted (TCP) before keys are compared.
  for (const k of [...keys].sort()) key[k] = item[k] ?? (k === "protocol" ? "TCP" : undefined);
  return `k:${JSON.stringify(key)}`;
}

/**
 * The fields a value sets, as paths: leaves (scalars, atomic lists, empty objects), and keyed list
 * items themselves. `withNodes` adds every object node too (what an Update's ownership covers).
 */
export function fieldSet(value: unknown, listTypes: ListTypes): Set<string> {
  return new Set(leafValues(value, listTypes).keys());
}

/**
 * Each field a value sets (see {@link fieldSet}) → its value as JSON for leaves, "" for keyed list
 * items and set members: comparing two of these maps finds the changed fields in one walk each.
 */
export function leafValues(
  value: unknown,
  listTypes: ListTypes,
  names: string[] = [],
  prefix = "",
  out = new Map<string, string>(),
): Map<string, string> {
  // `names` is pushed and popped in place (no array per field): this walk runs on every write.
  if (isObject(value) && !(prefix && listTypes(names).type === "atomic-struct")) {
    const keys = Object.keys(value);
    if (keys.length === 0 && prefix) out.set(prefix, "{}");
    for (const name of keys) {
      names.push(name);
      leafValues(value[name], listTypes, names, prefix ? `${prefix}${SEP}f:${name}` : `f:${name}`, out);
      names.pop();
    }
    return out;
  }
  if (Array.isArray(value)) {
    const kind = listTypes(names);
    if (kind.type === "map") {
      for (const item of value) {
        if (!isObject(item)) continue;
        const key = itemKey(item, kind.keys);
        const path = prefix ? `${prefix}${SEP}${key}` : key;
        out.set(path, "");
        leafValues(item, listTypes, names, path, out);
      }
      return out;
    }
    if (kind.type === "set") {
      for (const item of value) {
        const member = `v:${JSON.stringify(item)}`;
        out.set(prefix ? `${prefix}${SEP}${member}` : member, "");
      }
      return out;
    }
  }
  if (prefix) out.set(prefix, leafText(value));
  return out;
}

/**
 * A leaf's value as a string that only equal values share (compared, never parsed): JSON, but a
 * string is its text after a quote (no escaping: the quote alone keeps it apart from the others).
 */
function leafText(value: unknown): string {
  if (typeof value === "string") return `"${value}`;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value) ?? "null";
}

/** The value at a path (undefined if absent). */
function valueAt(root: unknown, path: string): unknown {
  let node: unknown = root;
  for (const segment of path.split(SEP)) {
    if (segment.startsWith("f:")) node = isObject(node) ? node[segment.slice(2)] : undefined;
    else if (segment.startsWith("k:")) {
      const key = JSON.parse(segment.slice(2)) as Obj;
      node = Array.isArray(node)
        ? node.find(
            (item) =>
              isObject(item) &&
              Object.entries(key).every(
                ([k, v]) =>
                  JSON.stringify(item[k] ?? (k === "protocol" ? "TCP" : undefined)) === JSON.stringify(v),
              ),
          )
        : undefined;
    } else if (segment.startsWith("v:")) {
      const wanted = segment.slice(2);
      node = Array.isArray(node) && node.some((item) => JSON.stringify(item) === wanted) ? true : undefined;
    }
    if (node === undefined) return undefined;
  }
  return node;
}

/** Removes the value at a path, if there. */
function removeAt(root: Obj, path: string): void {
  const segments = path.split(SEP);
  const last = segments.pop() ?? "";
  const parent = segments.length ? valueAt(root, segments.join(SEP)) : root;
  if (last.startsWith("f:") && isObject(parent)) delete parent[last.slice(2)];
  else if (Array.isArray(parent)) {
    const index = parent.findIndex((item) => {
      if (last.startsWith("v:")) return JSON.stringify(item) === last.slice(2);
      const key = JSON.parse(last.slice(2)) as Obj;
      return (
        isObject(item) && Object.entries(key).every(([k, v]) => JSON.stringify(item[k]) === JSON.stringify(v))
      );
    });
    if (index >= 0) parent.splice(index, 1);
  }
}

/** Merges an applied configuration into the live object (lists as their type says). */
export function mergeApplied(
  live: unknown,
  applied: unknown,
  listTypes: ListTypes,
  names: string[] = [],
): unknown {
  if (isObject(applied) && !(names.length && listTypes(names).type === "atomic-struct")) {
    const result: Obj = isObject(live) ? { ...live } : {};
    for (const [key, value] of Object.entries(applied)) {
      result[key] = mergeApplied(result[key], value, listTypes, [...names, key]);
    }
    return result;
  }
  if (Array.isArray(applied) && Array.isArray(live)) {
    const kind = listTypes(names);
    if (kind.type === "map") {
      const merged = [...live];
      for (const item of applied) {
        if (!isObject(item)) continue;
        const key = itemKey(item, kind.keys);
        const at = merged.findIndex((c) => isObject(c) && itemKey(c, kind.keys) === key);
        if (at >= 0) merged[at] = mergeApplied(merged[at], item, listTypes, names);
        else merged.push(clone(item));
      }
      return merged;
    }
    if (kind.type === "set") {
      const seen = new Set(live.map((v) => JSON.stringify(v)));
      return [...live, ...applied.filter((v) => !seen.has(JSON.stringify(v)))];
    }
  }
  return clone(applied);
}

/** One manager's fields: the `managedFields` entry, with its field set kept as paths. */
export interface ManagedEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time: string;
  subresource?: string;
  fields: Set<string>;
  /** The `managedFields` entry read, reused as it is unless `dirty` (rebuilding trees is costly). */
  raw?: Obj;
  dirty?: boolean;
}

/** Field sets already parsed from a `managedFields` entry (entries are shared, never changed). */
const parsedFields = new WeakMap<Obj, Set<string>>();

/** `metadata.managedFields` → entries (unknown formats are dropped: the server owns this field). */
export function readManaged(metadata: Obj): ManagedEntry[] {
  const list = (metadata.managedFields as Obj[] | undefined) ?? [];
  return list.map((entry) => {
    const known = parsedFields.get(entry);
    const fields = new Set<string>(known);
    const walk = (node: unknown, prefix: Path) => {
      if (!isObject(node)) return;
      const keys = Object.keys(node);
      if (keys.length === 0 && prefix.length) fields.add(prefix.join(SEP));
      for (const key of keys) {
        if (key === ".") fields.add(prefix.join(SEP));
        else walk(node[key], [...prefix, key]);
      }
    };
    if (!known) {
      walk(entry.fieldsV1, []);
      parsedFields.set(entry, new Set(fields));
    }
    return {
      raw: entry,
      manager: String(entry.manager ?? ""),
      operation: entry.operation === "Apply" ? "Apply" : "Update",
      apiVersion: String(entry.apiVersion ?? ""),
      time: String(entry.time ?? ""),
      ...(entry.subresource ? { subresource: String(entry.subresource) } : {}),
      fields,
    };
  });
}

/** Entries → `metadata.managedFields` (fieldsV1 trees; a node owned itself and with children gets "."). */
export function writeManaged(entries: ManagedEntry[]): Obj[] {
  return entries
    .filter((e) => e.fields.size > 0)
    .map((entry) => {
      if (entry.raw && !entry.dirty) return entry.raw;
      // The same fields as the entry read (an apply of the same configuration): its tree still holds.
      const known = entry.raw && parsedFields.get(entry.raw);
      if (entry.raw && known?.size === entry.fields.size && [...entry.fields].every((f) => known.has(f))) {
        if (entry.raw.time === entry.time) return entry.raw;
        const retimed = { ...entry.raw, time: entry.time };
        parsedFields.set(retimed, known);
        return retimed;
      }
      const written: Obj = {
        manager: entry.manager,
        operation: entry.operation,
        apiVersion: entry.apiVersion,
        time: entry.time,
        fieldsType: "FieldsV1",
        fieldsV1: fieldsTree(entry.fields),
        ...(entry.subresource ? { subresource: entry.subresource } : {}),
      };
      // The next write reads it back: no need to walk the tree again.
      parsedFields.set(written, new Set(entry.fields));
      return written;
    });
}

/**
 * fieldsV1 subtrees already built, by their field list: objects of one shape (every Deployment a
 * test's controller applies) own the same fields under `spec`, and building trees is the costliest
 * part of bookkeeping (their `metadata` differs: an owner reference's uid). Subtrees are shared
 * and never changed (stored objects are not; readers get copies).
 */
const subtrees = new Map<string, Obj>();
const SUBTREES_KEPT = 5_000;

function fieldsTree(fields: Set<string>): Obj {
  // Top-level field → the paths under it ("" when the field itself is owned).
  const groups = new Map<string, string[]>();
  for (const path of fields) {
    const cut = path.indexOf(SEP);
    const top = cut < 0 ? path : path.slice(0, cut);
    let group = groups.get(top);
    if (!group) {
      group = [];
      groups.set(top, group);
    }
    group.push(cut < 0 ? "" : path.slice(cut + 1));
  }
  const tree: Obj = {};
  for (const top of [...groups.keys()].sort()) tree[top] = subtree(groups.get(top) ?? []);
  return tree;
}

function subtree(paths: string[]): Obj {
  const key = paths.join("\u0002");
  const known = subtrees.get(key);
  if (known) return known;
  const children = paths.filter((path) => path !== "");
  const tree = buildTree(children, children.length < paths.length);
  if (subtrees.size >= SUBTREES_KEPT) subtrees.clear();
  subtrees.set(key, tree);
  return tree;
}

/** The tree of `fields`; `ownedItself`: its root is owned too (marked "." if it has children). */
function buildTree(fields: string[], ownedItself: boolean): Obj {
  // Sorted once at the end (sortTree), as the server writes fieldsV1.
  const tree: Obj = {};
  const owned: Obj[] = ownedItself ? [tree] : [];
  for (const path of fields) {
    let node = tree;
    for (const segment of path.split(SEP)) {
      let child = node[segment] as Obj | undefined;
      if (!child) {
        child = {};
        node[segment] = child;
      }
      node = child;
    }
    owned.push(node);
  }
  // A node owned itself that also has owned children is marked ".".
  for (const node of owned) if (!("." in node) && Object.keys(node).length > 0) node["."] = {};
  return sortTree(tree);
}

function sortTree(node: Obj): Obj {
  const sorted: Obj = {};
  for (const key of Object.keys(node).sort()) sorted[key] = sortTree(node[key] as Obj);
  return sorted;
}

/** Server-owned metadata an update keeps from the stored object, whatever the request says. */
export const KEPT_METADATA = [
  "uid",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "generation",
];

/** Metadata only the server sets: a create drops it from the request, and no manager owns it. */
export const SERVER_METADATA = [...KEPT_METADATA, "resourceVersion", "selfLink"];

/** The fields an object's owners track: everything but identity and server-owned metadata. */
export function ownedPart(object: Obj, part: "main" | "status", statusSubresource: boolean): Obj {
  const { apiVersion: _a, kind: _k, metadata, status, ...rest } = object;
  const meta = { ...(metadata as Obj) };
  for (const key of ["name", "namespace", "generateName", "managedFields", ...SERVER_METADATA])
    delete meta[key];
  if (part === "status") return status === undefined ? {} : { status };
  const owned: Obj = { ...rest };
  if (Object.keys(meta).length) owned.metadata = meta;
  if (!statusSubresource && status !== undefined) owned.status = status;
  return owned;
}

export interface ApplyInput {
  live: Obj | undefined;
  applied: Obj;
  manager: string;
  force: boolean;
  apiVersion: string;
  subresource: "status" | undefined;
  statusSubresource: boolean;
  listTypes: ListTypes;
  now: string;
}

/** The object after an apply, with its managedFields; a 409 naming each conflict otherwise. */
export function serverSideApply(input: ApplyInput): Obj {
  const part = input.subresource === "status" ? "status" : "main";
  const live: Obj = input.live ? clone(input.live) : {};
  const entries = readManaged((live.metadata as Obj | undefined) ?? {});
  const appliedPart = ownedPart(input.applied, part, input.statusSubresource);
  const livePart = ownedPart(live, part, input.statusSubresource);
  const appliedValues = leafValues(appliedPart, input.listTypes);
  const liveValues = leafValues(livePart, input.listTypes);
  const applied = new Set(appliedValues.keys());
  const mine = (e: ManagedEntry) =>
    e.manager === input.manager && e.operation === "Apply" && e.subresource === input.subresource;
  const conflicts: { entry: ManagedEntry; path: string }[] = [];
  for (const entry of entries) {
    if (mine(entry)) continue;
    for (const path of applied) {
      if (!entry.fields.has(path) || path.split(SEP).at(-1)?.startsWith("k:")) continue;
      const ours = appliedValues.get(path);
      if (ours !== liveValues.get(path) && ours !== "{}") conflicts.push({ entry, path });
    }
  }
  if (conflicts.length && !input.force) throw applyConflict(conflicts);
  for (const { entry, path } of conflicts) {
    entry.fields.delete(path);
    entry.dirty = true;
  }
  // Fields this manager applied before and no longer does go, unless another manager keeps them.
  const previous = entries.find(mine);
  const others = entries.filter((e) => !mine(e));
  let result = live;
  if (previous) {
    for (const path of previous.fields) {
      if (applied.has(path) || others.some((e) => e.fields.has(path))) continue;
      removeAt(result, path);
    }
  }
  result = mergeApplied(result, appliedPart, input.listTypes) as Obj;
  const entry: ManagedEntry = {
    manager: input.manager,
    operation: "Apply",
    apiVersion: input.apiVersion,
    time: input.now,
    ...(input.subresource ? { subresource: input.subresource } : {}),
    fields: applied,
    // Compared with the previous apply's fields when written: the same set keeps its tree.
    ...(previous?.raw ? { raw: previous.raw, dirty: true } : {}),
  };
  const next = previous ? entries.map((e) => (e === previous ? entry : e)) : [...entries, entry];
  result.metadata = { ...((result.metadata as Obj) ?? {}), managedFields: writeManaged(next) };
  return result;
}

/**
 * An Update (create, PUT, patch) by `manager`: it takes the fields whose value changed (all of
 * them on create); other managers lose those.
 */
export function recordUpdate(
  old: Obj | undefined,
  next: Obj,
  manager: string,
  subresource: "status" | undefined,
  apiVersion: string,
  statusSubresource: boolean,
  listTypes: ListTypes,
  now: string,
): void {
  const part = subresource === "status" ? "status" : "main";
  const entries = readManaged(((old ?? next).metadata as Obj | undefined) ?? {});
  const before = old ? ownedPart(old, part, statusSubresource) : {};
  const after = ownedPart(next, part, statusSubresource);
  const beforeValues = old ? leafValues(before, listTypes) : new Map<string, string>();
  const afterValues = leafValues(after, listTypes);
  const changed = new Set<string>();
  for (const [path, value] of afterValues) if (beforeValues.get(path) !== value) changed.add(path);
  for (const entry of entries) {
    for (const path of changed) if (entry.fields.delete(path)) entry.dirty = true;
    // Fields that no longer exist are no one's.
    if ((entry.subresource === "status") !== (part === "status")) continue;
    for (const path of entry.fields)
      if (!afterValues.has(path) && valueAt(after, path) === undefined) {
        entry.fields.delete(path);
        entry.dirty = true;
      }
  }
  if (changed.size) {
    const existing = entries.find(
      (e) => e.manager === manager && e.operation === "Update" && e.subresource === subresource,
    );
    if (existing) {
      for (const path of changed) existing.fields.add(path);
      existing.time = now;
      existing.dirty = true;
    } else {
      entries.push({
        manager,
        operation: "Update",
        apiVersion,
        time: now,
        ...(subresource ? { subresource } : {}),
        fields: changed,
      });
    }
  }
  const managed = writeManaged(entries);
  const metadata = next.metadata as Obj;
  if (managed.length) metadata.managedFields = managed;
  else delete metadata.managedFields;
}

function applyConflict(conflicts: { entry: ManagedEntry; path: string }[]): StatusError {
  const describe = (entry: ManagedEntry) =>
    `conflict with "${entry.manager}"${entry.operation === "Update" ? ` using ${entry.apiVersion}` : ""}${entry.subresource ? ` with subresource "${entry.subresource}"` : ""}`;
  const field = (path: string) =>
    path
      .split(SEP)
      .map((s) =>
        s.startsWith("f:")
          ? `.${s.slice(2)}`
          : s.startsWith("k:")
            ? `[${s
                .slice(2)
                .replace(/^\{|\}$/g, "")
                .replaceAll(":", "=")
                .replaceAll(",", ",")}]`
            : `[${s.slice(2)}]`,
      )
      .join("");
  const causes = conflicts.map(({ entry, path }) => ({
    reason: "FieldManagerConflict",
    message: describe(entry),
    field: field(path),
  }));
  const message =
    conflicts.length === 1
      ? `Apply failed with 1 conflict: ${describe(conflicts[0]?.entry as ManagedEntry)}: ${field(conflicts[0]?.path ?? "")}`
      : `Apply failed with ${conflicts.length} conflicts: ${conflicts.map(({ entry, path }) => `${describe(entry)}: ${field(path)}`).join("\n")}`;
  return new StatusError({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    message,
    reason: "Conflict",
    details: { causes },
    code: 409,
  } as StatusError["status"]);
}
