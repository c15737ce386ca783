/**
 * What the built-in generator reads from a capture: where each schema's type lives, the names of
 * the kinds in kubeloop/k8s, and the list table (how each list merges).
 */
import { pascal, type Schema } from "./emit.js";

/** A served kind, as the capture (scripts/capture-openapi.ts) records discovery. */
export interface CapturedResource {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  subresources?: string[];
  shortNames?: string[];
  verbs: string[];
}

/** One version's capture: packages/kubeloop/k8s-openapi/v<minor>.json. */
export interface Capture {
  capturedFrom: string;
  groupVersions: string[];
  resources: CapturedResource[];
  schemas: Record<string, Schema>;
}

/** The API packages' schema name prefixes, left out of module paths (as kubernetes-types does). */
const PREFIXES = [
  "io.k8s.api.",
  "io.k8s.apimachinery.pkg.apis.",
  "io.k8s.apimachinery.pkg.",
  "io.k8s.apiextensions-apiserver.pkg.apis.",
  "io.k8s.kube-aggregator.pkg.apis.",
];

/** `io.k8s.api.apps.v1.Deployment` → module `apps/v1`, type `Deployment`. */
export function moduleOf(name: string): { module: string; type: string } {
  const prefix = PREFIXES.find((p) => name.startsWith(p));
  if (!prefix) throw new Error(`schema ${name}: not from a known API package`);
  const parts = name.slice(prefix.length).split(".");
  const type = parts.pop() ?? "";
  return { module: parts.join("/"), type };
}

/** The kinds whose bare name goes to another group than discovery's first (today's names). */
const BARE_NAME_GROUP: Record<string, string> = { Event: "events.k8s.io" };

/**
 * The exported name of each kind: the bare kind for the group and version discovery prefers (the
 * group listed first, its preferred version first), `<Kind><Version>` for the group's other
 * versions, `<Group><Kind>` for other groups (`CoreEvent`).
 */
export function kindNames<R extends CapturedResource>(kinds: R[], groupVersions: string[]): Map<R, string> {
  const order = (r: CapturedResource) => {
    const at = groupVersions.indexOf(r.group ? `${r.group}/${r.version}` : r.version);
    return at < 0 ? Number.MAX_SAFE_INTEGER : at;
  };
  const names = new Map<R, string>();
  const byKind = new Map<string, R[]>();
  for (const r of kinds) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), r]);
  const taken = new Set<string>();
  for (const [kind, all] of byKind) {
    const sorted = [...all].sort((a, b) => order(a) - order(b));
    const bareGroup = BARE_NAME_GROUP[kind];
    const first = sorted.find((r) => bareGroup === undefined || r.group === bareGroup) ?? sorted[0];
    for (const r of sorted) {
      let name = kind;
      if (r !== first) {
        const groupPart = r.group === first?.group ? "" : pascal((r.group || "core").split(".")[0] ?? "");
        const versionPart =
          r.group === first?.group || sorted.some((o) => o !== r && o.group === r.group)
            ? pascal(r.version)
            : "";
        name = `${groupPart}${kind}${versionPart}`;
      }
      if (taken.has(name)) throw new Error(`two kinds named ${name}`);
      taken.add(name);
      names.set(r, name);
    }
  }
  return names;
}

/**
 * How one field of one schema merges: `of` the schema of its value (a list's items, a map's
 * values when `map`), the list's type and keys for apply and strategic merge, `atomic` for an
 * object apply replaces whole.
 */
export interface ListEntry {
  of?: string;
  map?: true;
  list?: "map" | "set" | "atomic";
  keys?: string[];
  merge?: string;
  strategy?: string;
  atomic?: true;
}

type Ext = Schema & {
  "x-kubernetes-list-type"?: "map" | "set" | "atomic";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-patch-merge-key"?: string;
  "x-kubernetes-patch-strategy"?: string;
  "x-kubernetes-map-type"?: string;
};

const refOf = (s: Schema | undefined) => s?.$ref ?? (s?.allOf?.length === 1 ? s.allOf[0]?.$ref : undefined);
const short = (ref: string) => {
  const { module, type } = moduleOf(ref.replace("#/components/schemas/", ""));
  return `${module}.${type}`;
};

/**
 * The list table: for each schema (`apps/v1.DeploymentSpec`), the fields that merge other than as a
 * plain value, or lead to a schema that has some. Only these are kept: the table stays small.
 */
export function listTable(schemas: Map<string, Schema>): Record<string, Record<string, ListEntry>> {
  const all: Record<string, Record<string, ListEntry>> = {};
  for (const [name, schema] of schemas) {
    const fields: Record<string, ListEntry> = {};
    for (const [field, raw] of Object.entries(schema.properties ?? {})) {
      const p = raw as Ext;
      const entry: ListEntry = {};
      if (p.type === "array") {
        const item = refOf(p.items);
        if (item) entry.of = short(item);
        const strategy = p["x-kubernetes-patch-strategy"];
        const merge = p["x-kubernetes-patch-merge-key"];
        const keys = p["x-kubernetes-list-map-keys"];
        let list = p["x-kubernetes-list-type"];
        // Without a list type, apply derives it from the patch strategy (structured-merge-diff).
        if (!list && strategy?.split(",").includes("merge")) list = merge ? "map" : "set";
        if (list && list !== "atomic") entry.list = list;
        if (list === "map") entry.keys = keys ?? (merge ? [merge] : []);
        if (merge) entry.merge = merge;
        if (strategy) entry.strategy = strategy;
      } else if (typeof p.additionalProperties === "object" && refOf(p.additionalProperties)) {
        entry.of = short(refOf(p.additionalProperties) ?? "");
        entry.map = true;
      } else {
        const ref = refOf(p);
        if (ref) entry.of = short(ref);
        const target = ref
          ? (schemas.get(ref.replace("#/components/schemas/", "")) as Ext | undefined)
          : undefined;
        if (p["x-kubernetes-map-type"] === "atomic" || target?.["x-kubernetes-map-type"] === "atomic")
          entry.atomic = true;
      }
      fields[field] = entry;
    }
    all[short(name)] = fields;
  }
  // Keep an entry if it says something itself or leads to a schema that keeps one (a fixpoint).
  const says = (e: ListEntry) => !!(e.list || e.merge || e.strategy || e.atomic);
  const useful = new Set<string>();
  for (let changed = true; changed; ) {
    changed = false;
    for (const [name, fields] of Object.entries(all)) {
      if (useful.has(name)) continue;
      if (Object.values(fields).some((e) => says(e) || (e.of && useful.has(e.of)))) {
        useful.add(name);
        changed = true;
      }
    }
  }
  const table: Record<string, Record<string, ListEntry>> = {};
  for (const name of [...useful].sort()) {
    const kept: Record<string, ListEntry> = {};
    for (const [field, e] of Object.entries(all[name] ?? {})) {
      if (!says(e) && !(e.of && useful.has(e.of))) continue;
      if (e.of && !useful.has(e.of)) delete e.of;
      if (!e.of) delete e.map;
      kept[field] = e;
    }
    table[name] = kept;
  }
  return table;
}
