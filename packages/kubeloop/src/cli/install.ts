import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Client } from "../client/index.js";
import { NotFound } from "../client/index.js";
import { applyAll, CRD_TYPE, type Crd, deleteAll, describe, isCrd, readConfig } from "./apply-manifests.js";
import { CliError } from "./errors.js";
import { loadProject } from "./project.js";
import { regenerate } from "./regenerate.js";
import { requireCluster } from "./target.js";

/**
 * `kubeloop install` / `uninstall`: the project's CRDs on the current cluster (kubebuilder's
 * `make install` / `make uninstall`). Install regenerates config/ first, so what goes to the
 * cluster is what the code says. Uninstall refuses while objects of the kinds exist — deleting a
 * CRD deletes every one of its objects, which is rarely what "uninstall" was meant to do.
 */

const INSTALL_USAGE = `Usage:
  kubeloop install             regenerate config/ and apply config/crd to the current cluster`;
const UNINSTALL_USAGE = `Usage:
  kubeloop uninstall [--force] delete the project's CRDs from the current cluster

  --force  delete them even while objects of them exist (the API server deletes those too)`;

export async function installCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { help: { type: "boolean", short: "h" } } });
  if (values.help) {
    console.log(INSTALL_USAGE);
    return 0;
  }
  const project = loadProject();
  const target = await requireCluster("install the CRDs on");
  try {
    regenerate(project.root, { quiet: true });
    const crds = projectCrds(project.config);
    console.log(`Installing ${crds.length} CRD${crds.length === 1 ? "" : "s"} on ${target.description}`);
    await applyAll(target.client, crds);
  } finally {
    await target.client.close();
  }
  return 0;
}

export async function uninstallCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { force: { type: "boolean", default: false }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    console.log(UNINSTALL_USAGE);
    return 0;
  }
  const project = loadProject();
  const crds = projectCrds(project.config);
  const target = await requireCluster("uninstall the CRDs from");
  console.log(`Uninstalling the CRDs from ${target.description}`);
  try {
    if (!values.force) await refuseWhileObjectsExist(target.client, crds, "pass --force");
    await deleteAll(target.client, crds);
  } finally {
    await target.client.close();
  }
  return 0;
}

export function projectCrds(config: string): Crd[] {
  const crds = readConfig(config, ["crd"]).filter(isCrd);
  if (crds.length === 0) {
    throw new CliError(`no CRDs in ${join(config, "crd")}: add a kind with \`kubeloop create api\``);
  }
  return crds;
}

/**
 * Throws while objects of these CRDs exist: deleting a CRD deletes every object of it, which is
 * rarely what uninstalling was meant to do. `alternatives` says how to go ahead anyway.
 */
export async function refuseWhileObjectsExist(client: Client, crds: Crd[], alternatives: string) {
  const remaining = (await Promise.all(crds.map((crd) => objectsOf(client, crd)))).flat();
  if (remaining.length === 0) return;
  const shown = remaining.slice(0, 10).join(", ") + (remaining.length > 10 ? ", …" : "");
  const plural = remaining.length !== 1;
  throw new CliError(
    `${remaining.length} custom resource${plural ? "s" : ""} still exist${plural ? "" : "s"}: ${shown}\n` +
      "Deleting the CRDs would delete them too. Delete them first (with the operator running, so their " +
      `finalizers run), or ${alternatives}.`,
  );
}

/** `kind namespace/name` of every object of the CRD's kind on the cluster (none if it is not installed). */
async function objectsOf(client: Client, crd: Crd): Promise<string[]> {
  try {
    await client.get(CRD_TYPE, crd.metadata?.name ?? "");
  } catch (error) {
    if (error instanceof NotFound) return [];
    throw error;
  }
  const version = crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0];
  const list = await client.list({
    apiVersion: `${crd.spec.group}/${version?.name}`,
    kind: crd.spec.names.kind,
    plural: crd.spec.names.plural,
    namespaced: crd.spec.scope === "Namespaced",
  });
  return list.items.map((item) => describe({ ...item, kind: crd.spec.names.kind }));
}
