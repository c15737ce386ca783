/**
 * `npm run capture:openapi [-- 1.35 …]`: the OpenAPI v3 documents and the discovery of the
 * Kubernetes versions kubeloop supports, captured from real kube-apiservers (ControlPlane, apiserver
 * profile, no CRDs) into packages/kubeloop/k8s-openapi/v<minor>.json, the one source of the
 * built-in kinds' generated types (`npm run generate:k8s`) and of the in-memory server's list keys.
 *
 * Without arguments it captures every supported version whose binaries are already built
 * (~/.cache/kubeloop/kubernetes-v*); a version named on the command line is built first if missing.
 * Only what generation needs is kept: each schema's shape, descriptions and x-kubernetes-* facts,
 * and from discovery the plural, scope, subresources and short names. One schema per line, sorted:
 * a capture with no change leaves no diff. k8s/openapi.test.ts compares the data with a live server.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "../../client/index.js";
import {
  ensureAssets,
  locateBinary,
  resolveKubernetesVersion,
  SUPPORTED_KUBERNETES_VERSIONS,
} from "../../testing/assets/index.js";
import { ControlPlane } from "../../testing/index.js";
import type { Schema } from "./emit.js";
import type { Capture, CapturedResource } from "./model.js";

type Json = Record<string, unknown>;

/** Where the captures live (not shipped: the package ships what is generated from them). */
export const OPENAPI_DIR = join(dirname(fileURLToPath(import.meta.url)), "../../../k8s-openapi");

/** The schema keywords generation reads; everything else (defaults, examples, paths) is left out. */
const KEEP = new Set([
  "type",
  "format",
  "description",
  "properties",
  "items",
  "additionalProperties",
  "required",
  "enum",
  "$ref",
  "allOf",
  "oneOf",
  "anyOf",
  "nullable",
  "x-kubernetes-group-version-kind",
  "x-kubernetes-patch-merge-key",
  "x-kubernetes-patch-strategy",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-int-or-string",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-embedded-resource",
]);

function trim(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!KEEP.has(key)) continue;
    if (key === "properties") {
      out[key] = Object.fromEntries(Object.entries(value as Json).map(([name, v]) => [name, trim(v)]));
    } else if (key === "items" || key === "additionalProperties") out[key] = trim(value);
    else if (key === "allOf" || key === "oneOf" || key === "anyOf") out[key] = (value as unknown[]).map(trim);
    else out[key] = value;
  }
  // `allOf: [{$ref}]` is how v3 documents put a description beside a reference: one $ref instead.
  const allOf = out.allOf as Json[] | undefined;
  if (allOf?.length === 1 && allOf[0]?.$ref && Object.keys(allOf[0]).length === 1) {
    delete out.allOf;
    out.$ref = allOf[0].$ref;
  }
  return out;
}

const GVK = "x-kubernetes-group-version-kind";
const AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
interface DiscoveryResource {
  resource: string;
  responseKind?: { kind: string };
  scope: "Namespaced" | "Cluster";
  verbs: string[];
  shortNames?: string[];
  subresources?: { subresource: string }[];
}
interface DiscoveryGroup {
  metadata: { name?: string };
  versions: { version: string; resources: DiscoveryResource[] }[];
}

/** The capture of the server `client` talks to. */
export async function capture(client: Client): Promise<Capture> {
  const get = async (path: string, accept?: string) =>
    (await client.transport.request({ method: "GET", path, ...(accept ? { accept } : {}) })).body as Json;
  const { gitVersion } = (await get("/version")) as { gitVersion: string };
  const groupVersions: string[] = [];
  const resources: CapturedResource[] = [];
  for (const path of ["/api", "/apis"]) {
    for (const group of (await get(path, AGGREGATED)).items as DiscoveryGroup[]) {
      const name = group.metadata.name ?? "";
      for (const { version, resources: served } of group.versions) {
        groupVersions.push(name ? `${name}/${version}` : version);
        for (const r of served) {
          if (!r.responseKind?.kind) continue;
          const subresources = (r.subresources ?? []).map((s) => s.subresource).sort();
          resources.push({
            group: name,
            version,
            kind: r.responseKind.kind,
            plural: r.resource,
            namespaced: r.scope === "Namespaced",
            ...(subresources.length ? { subresources } : {}),
            ...(r.shortNames?.length ? { shortNames: r.shortNames } : {}),
            verbs: [...r.verbs].sort(),
          });
        }
      }
    }
  }
  const index = (await get("/openapi/v3")).paths as Record<string, { serverRelativeURL: string }>;
  const schemas: Record<string, Schema & Json> = {};
  for (const [path, { serverRelativeURL }] of Object.entries(index).sort(([a], [b]) => a.localeCompare(b))) {
    if (!/^(api\/v1|apis\/[^/]+\/[^/]+)$/.test(path)) continue;
    const [urlPath = "", query = ""] = serverRelativeURL.split("?");
    const document = await get(`${urlPath}${query ? `?${query}` : ""}`);
    const found = (document.components as { schemas?: Record<string, Json> } | undefined)?.schemas ?? {};
    for (const [name, schema] of Object.entries(found)) {
      const trimmed = trim(schema) as Schema & Json;
      const seen = schemas[name];
      // Shared schemas (DeleteOptions, WatchEvent, …) list each document's own group version kind:
      // their union is kept; any other difference is an error.
      const { [GVK]: gvks = [], ...rest } = trimmed;
      if (seen) {
        const { [GVK]: seenGvks = [], ...seenRest } = seen;
        if (JSON.stringify(seenRest) !== JSON.stringify(rest))
          throw new Error(`schema ${name} differs between group versions (seen again in ${path})`);
        const all = [...(seenGvks as Json[]), ...(gvks as Json[])];
        const unique = [...new Map(all.map((g) => [`${g.group}/${g.version}/${g.kind}`, g])).entries()];
        seen[GVK] = unique.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, g]) => g);
      } else schemas[name] = trimmed;
    }
  }
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { capturedFrom: gitVersion, groupVersions, resources, schemas: sorted };
}

/** The capture as committed: one resource and one schema per line. */
export function serialize(data: Capture): string {
  const lines = (entries: string[]) => entries.map((e) => `    ${e}`).join(",\n");
  return `{
  "capturedFrom": ${JSON.stringify(data.capturedFrom)},
  "groupVersions": ${JSON.stringify(data.groupVersions)},
  "resources": [
${lines(data.resources.map((r) => JSON.stringify(r)))}
  ],
  "schemas": {
${lines(Object.entries(data.schemas).map(([name, s]) => `${JSON.stringify(name)}: ${JSON.stringify(s)}`))}
  }
}
`;
}

/** `1.36` → packages/kubeloop/k8s-openapi/v1.36.json */
export const captureFile = (minor: string): string => join(OPENAPI_DIR, `v${minor}.json`);

const built = (version: string) =>
  ["etcd", "kube-apiserver"].every((b) => locateBinary(b as "etcd", { kubernetesVersion: version }));

async function main(): Promise<void> {
  const asked = process.argv.slice(2).map((v) => resolveKubernetesVersion(v));
  const versions = asked.length ? asked : SUPPORTED_KUBERNETES_VERSIONS.filter(built);
  for (const version of SUPPORTED_KUBERNETES_VERSIONS)
    if (!versions.includes(version))
      console.error(
        `[capture:openapi] ${version}: no binaries built; \`npm run capture:openapi -- ${version}\``,
      );
  mkdirSync(OPENAPI_DIR, { recursive: true });
  for (const version of versions) {
    await ensureAssets(["etcd", "kube-apiserver"], { kubernetesVersion: version });
    const plane = await new ControlPlane({ profile: "apiserver", kubernetesVersion: version }).start();
    const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
    try {
      const data = await capture(client);
      const minor = version.split(".").slice(0, 2).join(".");
      writeFileSync(captureFile(minor), serialize(data));
      console.error(
        `[capture:openapi] ${data.capturedFrom}: ${data.resources.length} resources, ${Object.keys(data.schemas).length} schemas → ${captureFile(minor)}`,
      );
    } finally {
      await client.close();
      await plane.stop();
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
