/**
 * `npm run generate:k8s`: kubeloop/k8s from the captured OpenAPI documents
 * (packages/kubeloop/k8s-openapi/v<minor>.json, `npm run capture:openapi`): one module of types per
 * API package (src/k8s/types/apps/v1.ts, …), a resourceType for every served kind
 * (src/k8s/kinds.ts), and the list table of strategic merge and apply (src/k8s/lists.json).
 * With several versions captured, what the older ones lack is tagged `@since`, and what the newest
 * lacks `@deprecated Removed in …`. Output is formatted with biome: a run with no change leaves no diff.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { doc, type Schema, TypeWriter } from "./emit.js";
import {
  type Capture,
  type CapturedResource,
  kindNames,
  type ListEntry,
  listTable,
  moduleOf,
} from "./model.js";

export interface Sources {
  /** Captures, oldest first. */
  captures: { minor: string; data: Capture }[];
}

/** The files to write, by path relative to src/k8s. */
export function generate({ captures }: Sources): Map<string, string> {
  const newest = captures.at(-1);
  if (!newest) throw new Error("no OpenAPI capture: run `npm run capture:openapi`");
  const minors = captures.map((c) => c.minor);
  const { schemas, since, last } = history(captures);
  const oldest = minors[0];
  const removedAfter = (seen: string | undefined) =>
    seen && seen !== newest.minor ? minors[minors.indexOf(seen) + 1] : undefined;
  const tagsFor = (name: string): string[] => {
    const tags: string[] = [];
    const first = since.get(name);
    if (first && first !== oldest) tags.push(`@since Kubernetes ${first}`);
    const removed = removedAfter(last.get(name));
    if (removed) tags.push(`@deprecated Removed in Kubernetes ${removed}.`);
    return tags;
  };

  const files = new Map<string, string>();
  const byModule = new Map<string, string[]>();
  for (const name of [...schemas.keys()].sort()) {
    const { module } = moduleOf(name);
    byModule.set(module, [...(byModule.get(module) ?? []), name]);
  }
  for (const [module, names] of byModule) {
    const imports = new Set<string>();
    const writer = new TypeWriter({
      opaqueObject: "object",
      ref: (ref) => {
        const target = moduleOf(ref.replace("#/components/schemas/", ""));
        if (target.module === module) return target.type;
        imports.add(target.module);
        return `${alias(target.module)}.${target.type}`;
      },
      propertyTags: (type, field) => {
        const first = since.get(`${prefixOf(names[0] ?? "")}${type}#${field}`);
        return first && first !== oldest ? [`@since Kubernetes ${first}`] : [];
      },
    });
    for (const name of names) writer.reserve(moduleOf(name).type);
    for (const name of names) {
      const captured = schemas.get(name) ?? {};
      // Servers answer quantities as strings; kubernetes-types typed them so, and users' code relies on it.
      const schema = name === QUANTITY ? { description: captured.description, type: "string" } : captured;
      const gvks = gvksOf(schema);
      const gvk = gvks?.length === 1 ? gvks[0] : undefined;
      const literals: Record<string, string> =
        gvk && schema.properties?.apiVersion && schema.properties.kind
          ? { apiVersion: gvk.group ? `${gvk.group}/${gvk.version}` : gvk.version, kind: gvk.kind }
          : {};
      writer.declare(moduleOf(name).type, schema, literals, tagsFor(name));
    }
    const head = [...imports]
      .sort()
      .map((m) => `import type * as ${alias(m)} from "${relative(module, m)}";\n`)
      .join("");
    files.set(`types/${module}.ts`, `${GENERATED}\n${head}\n${writer.declarations.join("\n")}`);
  }

  files.set("kinds.ts", kindsModule(captures, schemas));
  files.set("lists.json", `${JSON.stringify(listTable(schemas))}\n`);
  files.set(
    "index.ts",
    indexModule(
      [...byModule.keys()].sort(),
      newest.data,
      schemas,
      kindNames(servedKinds(captures), newest.data.groupVersions),
    ),
  );
  return files;
}

/**
 * The union of every version's schemas, the newest's winning; when each name (`since`, `last`) and
 * each field (`since`, key `name#field`) first and last appeared.
 */
function history(captures: Sources["captures"]) {
  const schemas = new Map<string, Schema>();
  const since = new Map<string, string>();
  const last = new Map<string, string>();
  for (const { minor, data } of captures) {
    for (const [name, schema] of Object.entries(data.schemas) as [string, Schema][]) {
      schemas.set(name, schema);
      if (!since.has(name)) since.set(name, minor);
      last.set(name, minor);
      for (const field of Object.keys(schema.properties ?? {}))
        if (!since.has(`${name}#${field}`)) since.set(`${name}#${field}`, minor);
    }
  }
  return { schemas, since, last };
}

const QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity";

const GENERATED = "// Generated by `npm run generate:k8s` from packages/kubeloop/k8s-openapi: do not edit.\n";

/** `io.k8s.api.apps.v1.` for `io.k8s.api.apps.v1.Deployment` */
const prefixOf = (name: string) => name.slice(0, name.lastIndexOf(".") + 1);
/** `apps/v1` → `apps_v1` */
export const alias = (module: string): string => module.replaceAll("/", "_");
function relative(from: string, to: string): string {
  const path = posix.relative(posix.dirname(from), to);
  return `${path.startsWith(".") ? path : `./${path}`}.js`;
}

interface Served extends CapturedResource {
  since?: string;
  removedIn?: string;
}

/** Every kind any captured version serves, with its names in kubeloop/k8s. */
function servedKinds(captures: Sources["captures"]): Served[] {
  const byKey = new Map<string, Served>();
  const minors = captures.map((c) => c.minor);
  for (const [index, { minor, data }] of captures.entries()) {
    const present = new Set<string>();
    for (const r of data.resources) {
      if (r.kind.endsWith("List") || r.verbs.length === 0) continue;
      const key = `${r.group}/${r.version}/${r.kind}`;
      if (present.has(key)) continue; // core/v1 lists some kinds twice (e.g. under another resource)
      present.add(key);
      const first = byKey.get(key)?.since ?? (index > 0 ? minor : undefined);
      byKey.set(key, { ...r, ...(first ? { since: first } : {}) });
    }
    for (const [key, served] of byKey)
      if (!present.has(key) && !served.removedIn) byKey.set(key, { ...served, removedIn: minor });
  }
  void minors;
  return [...byKey.values()];
}

function kindsModule(captures: Sources["captures"], schemas: Map<string, Schema>): string {
  const newest = captures.at(-1)?.data as Capture;
  const kinds = servedKinds(captures);
  const names = kindNames(kinds, newest.groupVersions);
  const modules = new Set<string>();
  const lines: string[] = [];
  for (const r of kinds) {
    const apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
    const { module, type, schema } = schemaOfKind(r, schemas);
    modules.add(module);
    const tags = [
      `\`${apiVersion}\` ${r.kind}: \`${r.plural}\`, ${r.namespaced ? "namespaced" : "cluster-scoped"}${
        r.subresources?.length ? `, subresources ${r.subresources.join(", ")}` : ""
      }.`,
      r.since ? `@since Kubernetes ${r.since}` : undefined,
      r.removedIn ? `@deprecated Removed in Kubernetes ${r.removedIn}.` : undefined,
    ];
    const options = {
      plural: r.plural,
      namespaced: r.namespaced,
      ...(r.subresources?.length ? { subresources: r.subresources } : {}),
      schema,
    };
    lines.push(
      `${doc(tags)}export const ${names.get(r)} = resourceType<${alias(module)}.${type}>(${JSON.stringify(apiVersion)}, ${JSON.stringify(r.kind)}, ${JSON.stringify(options)});\n`,
    );
  }
  const imports = [...modules]
    .sort()
    .map((m) => `import type * as ${alias(m)} from "./types/${m}.js";\n`)
    .join("");
  const all = kinds.map((r) => names.get(r)).join(", ");
  return `${GENERATED}import { resourceType } from "../client/index.js";\n${imports}\n${lines.join("\n")}
/** Every built-in kind above, in discovery order. */
export const BUILTIN_KINDS = [${all}] as const;
`;
}

/** The schema a served kind's objects have: the one whose x-kubernetes-group-version-kind names it alone. */
function schemaOfKind(
  r: CapturedResource,
  schemas: Map<string, Schema>,
): { module: string; type: string; schema: string } {
  const candidates: { name: string; shared: boolean }[] = [];
  for (const [name, schema] of schemas) {
    const gvks = gvksOf(schema);
    if (gvks?.some((g) => g.group === r.group && g.version === r.version && g.kind === r.kind))
      candidates.push({ name, shared: gvks.length > 1 });
  }
  const found = candidates.find((c) => !c.shared) ?? candidates[0];
  if (!found) throw new Error(`no schema for ${r.group}/${r.version} ${r.kind}`);
  const { module, type } = moduleOf(found.name);
  return { module, type, schema: `${module}.${type}` };
}

const gvksOf = (schema: Schema) =>
  (schema as { "x-kubernetes-group-version-kind"?: { group: string; version: string; kind: string }[] })[
    "x-kubernetes-group-version-kind"
  ];

function indexModule(
  modules: string[],
  newest: Capture,
  schemas: Map<string, Schema>,
  names: Map<Served, string>,
): string {
  // Each group's preferred version under the group's own name (`apps`, `autoscaling` = v2), as
  // kubeloop/k8s named them before (discovery lists the preferred version first); every module as
  // `group_version` too.
  const preferred = new Map<string, string>([["meta", "meta/v1"]]);
  for (const r of newest.resources) {
    if (r.kind.endsWith("List") || r.verbs.length === 0) continue;
    const { module } = schemaOfKind(r, schemas);
    const name = module.split("/")[0] ?? module;
    if (!preferred.has(name)) preferred.set(name, module);
  }
  const exports = [
    ...[...preferred].sort().map(([name, module]) => `export type * as ${name} from "./types/${module}.js";`),
    ...modules.map((m) => `export type * as ${alias(m)} from "./types/${m}.js";`),
  ];
  return `${INDEX_HEAD}${exports.join("\n")}\nexport { BUILTIN_KINDS, ${[...names.values()].sort().join(", ")} } from "./kinds.js";\nexport { type ListType, listTypeAt } from "./lists.js";\n`;
}

/**
 * The index's example, spelled so that the book's check of TSDoc examples does not take it for one
 * of this file's own (it checks it in the generated index.ts).
 */
const EXAMPLE = ["@", "example"].join("");
const FENCE = "`".repeat(3);
const INDEX_HEAD = `${GENERATED}/**
 * Every built-in Kubernetes kind, typed: the object types of every API group and version the
 * supported kube-apiservers serve, and a resourceType for each kind (plural, scope, subresources,
 * and the schema whose lists strategic merge and apply merge by key), generated from their OpenAPI
 * documents. Each group's preferred version is also under the group's name (\`apps\`, \`core\`, …).
 *
 * ${EXAMPLE}
 * ${FENCE}ts
 * import { Client } from "kubeloop/client";
 * import { ConfigMap, type core } from "kubeloop/k8s";
 * const client = await Client.connect();
 * const cm: core.ConfigMap = await client.get({ type: ConfigMap, namespace: "default", name: "settings" });
 * ${FENCE}
 *
 * @packageDocumentation
 */
`;

export type { ListEntry };

/**
 * `files` as the repository's formatter (biome, run from `cwd`) writes them: generated code passes
 * `npm run lint` as it is, and regenerating with no change leaves no diff.
 */
export function formatted(files: Map<string, string>, prefix: string, cwd: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, text] of files) {
    const file = posix.join(prefix, path);
    out.set(
      path,
      execFileSync(join(cwd, "node_modules/.bin/biome"), ["check", "--write", `--stdin-file-path=${file}`], {
        cwd,
        input: text,
        encoding: "utf8",
        maxBuffer: 64 << 20,
      }),
    );
  }
  return out;
}

/** The captures in `dir` (v<minor>.json), oldest first. */
export function readCaptures(dir: string): Sources["captures"] {
  const minors = readdirSync(dir)
    .map((f) => /^v(1\.\d+)\.json$/.exec(f)?.[1])
    .filter((m): m is string => !!m)
    .sort((a, b) => Number(a.split(".")[1]) - Number(b.split(".")[1]));
  return minors.map((minor) => ({
    minor,
    data: JSON.parse(readFileSync(join(dir, `v${minor}.json`), "utf8")) as Capture,
  }));
}

async function main(): Promise<void> {
  const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "../../..");
  const target = join(packageRoot, "src/k8s");
  const raw = generate({ captures: readCaptures(join(packageRoot, "k8s-openapi")) });
  const files = formatted(raw, "packages/kubeloop/src/k8s", join(packageRoot, "../.."));
  rmSync(join(target, "types"), { recursive: true, force: true });
  for (const [path, text] of files) {
    mkdirSync(dirname(join(target, path)), { recursive: true });
    writeFileSync(join(target, path), text);
  }
  process.stdout.write(`wrote ${files.size} files under ${target}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
