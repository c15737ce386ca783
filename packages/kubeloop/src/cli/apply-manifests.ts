import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Client, KubeObject } from "../client/index.js";
import { NotFound } from "../client/index.js";
import type { apiextensions_v1 } from "../k8s/index.js";
import { readManifests } from "../testing/index.js";
import { sleep } from "../util/index.js";
import { CliError } from "./errors.js";

/**
 * Reading config/ and writing it to a cluster, as `kubectl apply -f` would but without kubectl:
 * server-side apply under one field manager (so a second run changes nothing, and fields someone
 * else set are left alone), CRDs awaited until their kinds are served.
 */

export const FIELD_MANAGER = "kubeloop";
/** A CRD is usually Established within a second; a loaded API server may take several. */
const CRD_ESTABLISHED_TIMEOUT_MS = 60_000;

export const CRD_TYPE = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  plural: "customresourcedefinitions",
  namespaced: false,
} as const;

/** The generated CustomResourceDefinition type (k8s/), the one CRD shape of the library. */
export type Crd = apiextensions_v1.CustomResourceDefinition;

/** Every object in these folders of config/ (the ones that exist). */
export function readConfig(config: string, dirs: string[]): KubeObject[] {
  const paths = dirs.map((dir) => join(config, dir)).filter((path) => existsSync(path));
  return readManifests(paths) as KubeObject[];
}

export function isCrd(object: KubeObject): object is Crd {
  return object.kind === "CustomResourceDefinition";
}

/** Applies the objects in order; CRDs first are awaited until established, so later objects may use them. */
export async function applyAll(client: Client, objects: KubeObject[]): Promise<void> {
  for (const object of objects) {
    await client.apply(object, { fieldManager: FIELD_MANAGER, force: true });
    console.log(`  applied ${describe(object)}`);
  }
  const crds = objects.filter(isCrd);
  if (crds.length > 0) await waitEstablished(client, crds);
}

/** Deletes the objects in reverse order (what depends on others goes first); absent ones are skipped. */
export async function deleteAll(client: Client, objects: KubeObject[]): Promise<void> {
  for (const object of [...objects].reverse()) {
    try {
      await client.delete(
        { apiVersion: object.apiVersion ?? "", kind: object.kind ?? "" },
        object.metadata?.name ?? "",
        object.metadata?.namespace ? { namespace: object.metadata.namespace } : {},
      );
      console.log(`  deleted ${describe(object)}`);
    } catch (error) {
      if (error instanceof NotFound) continue;
      throw error;
    }
  }
}

async function waitEstablished(client: Client, crds: Crd[]): Promise<void> {
  const deadline = Date.now() + CRD_ESTABLISHED_TIMEOUT_MS;
  for (const crd of crds) {
    for (;;) {
      const current = (await client.get(CRD_TYPE, crd.metadata?.name ?? "")) as Crd;
      const established = current.status?.conditions?.find((c) => c.type === "Established");
      if (established?.status === "True") break;
      if (Date.now() > deadline) {
        const problem = current.status?.conditions?.find(
          (c) => c.type === "NamesAccepted" && c.status !== "True",
        );
        throw new CliError(
          `CRD ${crd.metadata?.name} is not established after ${CRD_ESTABLISHED_TIMEOUT_MS / 1000}s` +
            (problem?.message ? `: ${problem.message}` : ""),
        );
      }
      await sleep(100);
    }
  }
}

export function describe(object: KubeObject): string {
  const namespace = object.metadata?.namespace ? `${object.metadata.namespace}/` : "";
  return `${object.kind} ${namespace}${object.metadata?.name}`;
}
