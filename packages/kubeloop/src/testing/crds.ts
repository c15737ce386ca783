import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import { parseAllDocuments } from "yaml";
import { ControlPlaneError } from "./errors.js";
import type { AdminHttp } from "./http.js";
import { waitFor } from "./wait.js";

/**
 * Installs CustomResourceDefinitions from files or folders and waits until the API server serves
 * them: `Established` is not enough on its own, because discovery (which clients use to map a kind
 * to its resource) lags behind it, so we also wait for every served version to appear there.
 */

export interface CrdObject {
  apiVersion: string;
  kind: "CustomResourceDefinition";
  metadata: { name: string; resourceVersion?: string };
  spec: {
    group: string;
    names: { plural: string; kind: string };
    versions: { name: string; served: boolean }[];
  };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const MANIFEST_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);
/** envtest waits 10 s; CRDs with large schemas on a busy 2-core machine deserve more. */
export const CRD_READY_TIMEOUT_MS = 30_000;

/**
 * Reads every object in the given YAML/JSON files and folders (folders recursively, sorted). A
 * kustomize `Kustomization` (a kustomization.yaml in a kubebuilder-style config/) is not an object
 * of the API and is left out.
 */
export function readManifests(paths: string[]): Record<string, unknown>[] {
  const objects: Record<string, unknown>[] = [];
  for (const path of paths) {
    for (const file of manifestFiles(path)) {
      for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
        if (doc.errors.length > 0) {
          throw new ControlPlaneError(`${file} is not valid YAML: ${doc.errors[0]?.message}`);
        }
        const object = doc.toJS() as Record<string, unknown> | null;
        if (object && !isKustomization(object)) objects.push(object);
      }
    }
  }
  return objects;
}

/** Reads every CustomResourceDefinition in the given files and folders (folders recursively). */
export function readCrds(paths: string[]): CrdObject[] {
  const crds = readManifests(paths).filter(
    (o) => o.kind === "CustomResourceDefinition",
  ) as unknown as CrdObject[];
  if (crds.length === 0) {
    throw new ControlPlaneError(`No CustomResourceDefinition found in ${paths.join(", ")}`);
  }
  return crds;
}

function manifestFiles(path: string): string[] {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch {
    throw new ControlPlaneError(`${path} does not exist`);
  }
  if (stat.isFile()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((entry) => {
      const full = join(path, entry);
      if (statSync(full).isDirectory()) return manifestFiles(full);
      return MANIFEST_EXTENSIONS.has(extname(entry)) ? [full] : [];
    });
}

/** Creates or updates each CRD, then waits until all are established and discoverable. */
export async function installCrds(http: AdminHttp, crds: CrdObject[], timeoutMs = CRD_READY_TIMEOUT_MS) {
  for (const crd of crds) await createOrReplace(http, crd);
  await waitFor(
    `CRDs ${crds.map((crd) => crd.metadata.name).join(", ")} to be established and served`,
    async () => {
      for (const crd of crds) {
        if (!(await isServed(http, crd))) return false;
      }
      return true;
    },
    { timeoutMs },
  );
  return crds.map((crd) => crd.metadata.name);
}

async function createOrReplace(http: AdminHttp, crd: CrdObject): Promise<void> {
  const created = await http.post(CRD_PATH, crd);
  if (created.status === 201) return;
  if (created.status === 409) {
    const current = await http.get<CrdObject>(`${CRD_PATH}/${crd.metadata.name}`);
    const replaced = await http.put(`${CRD_PATH}/${crd.metadata.name}`, {
      ...crd,
      metadata: { ...crd.metadata, resourceVersion: current.body.metadata.resourceVersion },
    });
    if (replaced.status === 200) return;
    throw rejected(crd, replaced.status, replaced.body);
  }
  throw rejected(crd, created.status, created.body);
}

function rejected(crd: CrdObject, status: number, body: unknown): ControlPlaneError {
  const message = (body as { message?: string } | null)?.message ?? JSON.stringify(body);
  return new ControlPlaneError(
    `The API server rejected CRD ${crd.metadata.name} (HTTP ${status}): ${message}`,
  );
}

async function isServed(http: AdminHttp, crd: CrdObject): Promise<boolean> {
  const current = await http.get<CrdObject>(`${CRD_PATH}/${crd.metadata.name}`);
  if (current.status !== 200) return false;
  const established = current.body.status?.conditions?.find((c) => c.type === "Established");
  if (established?.status !== "True") return false;
  for (const version of crd.spec.versions.filter((v) => v.served)) {
    const discovery = await http.get<{ resources?: { name: string }[] }>(
      `/apis/${crd.spec.group}/${version.name}`,
    );
    if (discovery.status !== 200) return false;
    if (!discovery.body.resources?.some((resource) => resource.name === crd.spec.names.plural)) return false;
  }
  return true;
}

function isKustomization(object: Record<string, unknown>): boolean {
  return object.kind === "Kustomization" && String(object.apiVersion).startsWith("kustomize.config.k8s.io/");
}
