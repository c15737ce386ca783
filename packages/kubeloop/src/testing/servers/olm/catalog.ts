import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { catalogImage, type OlmPlane, olmAssets, pushToPlaneRegistry } from "./images.js";

/** A bundle image in a catalog's channel. */
export interface CatalogBundle {
  /** The bundle image, as the nodes pull it (e.g. `<plane.registry>/nginx-operator-bundle:0.1.0`). */
  image: string;
  /** The CSV this one replaces (`<package>.v<version>`), the upgrade edge OLM follows. */
  replaces?: string;
  /** The versions this one upgrades from directly (`olm.skipRange`, e.g. `<0.2.0`). */
  skipRange?: string;
}

/** A file-based catalog of one package and one channel. */
export interface CatalogOptions {
  /** The catalog image's name, `<plane.registry>/<name>:<tag>`. */
  ref: string;
  /** The channel the bundles are entries of, in order (default `alpha`, kubeloop's default). */
  channel?: string;
  /** The channel's entries, oldest first; the first bundle's package is the catalog's. */
  bundles: readonly CatalogBundle[];
}

const POLICY = JSON.stringify({ default: [{ type: "insecureAcceptAnything" }] });

interface RenderedBundle {
  schema: "olm.bundle";
  name: string;
  package: string;
}

/**
 * The file-based catalog (YAML) of `bundles`: each rendered from its image in the plane's registry
 * by `opm render` (what a catalog's author runs), then the package and the channel.
 */
export async function renderCatalog(options: Omit<CatalogOptions, "ref">): Promise<string> {
  const opm = join(await olmAssets(), "opm");
  // opm pulls with containers/image, which wants a signature policy (podman's default: accept).
  const home = mkdtempSync(join(tmpdir(), "kubeloop-opm-"));
  mkdirSync(join(home, ".config", "containers"), { recursive: true });
  writeFileSync(join(home, ".config", "containers", "policy.json"), POLICY);
  const env = { ...process.env, HOME: home };
  let rendered: RenderedBundle[];
  try {
    rendered = options.bundles.map(({ image }) => renderBundle(opm, image, env));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  const pkg = rendered[0]?.package;
  if (!pkg) throw new Error("a catalog needs at least one bundle");
  const channel = options.channel ?? "alpha";
  const entries = options.bundles.map((bundle, i) => ({
    name: rendered[i]?.name,
    ...(bundle.replaces ? { replaces: bundle.replaces } : {}),
    ...(bundle.skipRange ? { skipRange: bundle.skipRange } : {}),
  }));
  return [
    { schema: "olm.package", name: pkg, defaultChannel: channel },
    { schema: "olm.channel", package: pkg, name: channel, entries },
    ...rendered,
  ]
    .map((doc) => `---\n${stringify(doc)}`)
    .join("");
}

/**
 * Renders a catalog of `bundles` (already in the plane's registry), builds its image (opm serving
 * it, made on this machine without Docker) and pushes it to the plane's registry as `ref`, for a
 * CatalogSource of `sourceType: grpc`. Returns `ref`.
 *
 * @example
 * ```ts
 * import { ControlPlane } from "kubeloop/testing";
 * import { installOlm, publishCatalog } from "kubeloop/testing/servers";
 *
 * const plane = await new ControlPlane({ profile: "node", nodes: 1 }).start();
 * await installOlm(plane);
 * const catalog = await publishCatalog(plane, {
 *   ref: `${plane.registry}/my-catalog:1`,
 *   bundles: [{ image: `${plane.registry}/my-operator-bundle:0.1.0` }],
 * });
 * ```
 */
export async function publishCatalog(plane: OlmPlane, options: CatalogOptions): Promise<string> {
  const fbc = await renderCatalog(options);
  return pushToPlaneRegistry(plane, catalogImage(await olmAssets(), options.ref, fbc), options.ref);
}

/** The `olm.bundle` of a bundle image, as `opm render` prints it. */
function renderBundle(opm: string, image: string, env: NodeJS.ProcessEnv): RenderedBundle {
  const result = spawnSync(opm, ["render", image, "--use-http", "-o", "yaml"], {
    encoding: "utf8",
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0)
    throw new Error(`opm render ${image} failed: ${result.error?.message ?? result.stderr.trim()}`);
  const docs = parseAllDocuments(result.stdout).map((doc) => doc.toJS() as RenderedBundle);
  const bundle = docs.find((doc) => doc?.schema === "olm.bundle");
  if (!bundle) throw new Error(`opm render ${image} printed no olm.bundle`);
  return bundle;
}
