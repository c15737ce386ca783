import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { buildComponent, COMPONENTS, defaultAssetsRoot } from "../../assets/index.js";
import { componentDirName } from "../../assets/internal.js";
import { filesImage } from "../../control-plane/node-images.js";

/** What OLM's helpers need of a node-profile plane (a `ControlPlane` started with `profile: "node"`). */
export interface OlmPlane {
  /** The kubeconfig OLM's manifests are applied with. */
  readonly kubeconfigPath: string;
  /** The plane's registry, `host:port` (plain HTTP), which every node pulls from. */
  readonly registry: string;
  /** The nodes' containerd sockets: images are pushed to the registry from the first node's. */
  readonly containerRuntimeSockets: readonly string[];
  /** Imports an image archive into every node; returns the names it holds. */
  loadImage(archive: string): Promise<string[]>;
}

const SPEC = COMPONENTS["olm-lifecycle"];

/**
 * The folder of OLM's binaries and CRDs (`crds/`) in the asset cache, built from Go modules at first
 * use (`kubeloop assets build --component olm-lifecycle` builds it ahead; about 10 minutes on 2 cores).
 */
export async function olmAssets(root = defaultAssetsRoot()): Promise<string> {
  await buildComponent("olm-lifecycle", { root });
  return join(root, componentDirName(SPEC));
}

/** OLM's programs as its images have them in /bin (the unpack Job runs `/bin/cp` and `/bin/cpb`). */
function olmFiles(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const binary of SPEC.binaries) files[`/bin/${binary}`] = join(dir, binary);
  // This machine's cp (and its libraries): the unpack Job copies cpb with it.
  files["/bin/cp"] = "/bin/cp";
  return files;
}

/**
 * OLM's image (docker-archive): olm and catalog, and the utilities catalog-operator runs in its pods
 * (`-util-image`, `-opmImage`): cpb, copy-content, opm, cp.
 */
export function olmImage(dir: string, ref: string, cacheDir = defaultAssetsRoot()): string {
  return filesImage({ ref, user: "65532:65532", cacheDir, files: olmFiles(dir), linked: ["/bin/cp"] });
}

/**
 * A catalog image (docker-archive) as `opm generate dockerfile` describes it: opm serving the
 * file-based catalog `fbc` from /configs, with grpc_health_probe for the probes OLM gives its pod.
 */
export function catalogImage(dir: string, ref: string, fbc: string, cacheDir = defaultAssetsRoot()): string {
  return filesImage({
    ref,
    user: "65532:65532",
    cacheDir,
    files: { "/bin/opm": join(dir, "opm"), "/bin/grpc_health_probe": join(dir, "grpc_health_probe") },
    texts: { "/configs/catalog.yaml": fbc },
    entrypoint: ["/bin/opm"],
    // No --cache-dir: opm builds its cache in a temporary folder at start (an empty one fails its check).
    cmd: ["serve", "/configs"],
  });
}

/**
 * Loads an image archive into the plane's nodes and pushes it to the plane's registry as `ref`
 * (`<plane.registry>/<name>:<tag>`), with containerd's own client; returns `ref`.
 */
export async function pushToPlaneRegistry(plane: OlmPlane, archive: string, ref: string): Promise<string> {
  const [name] = await plane.loadImage(archive);
  const [socket] = plane.containerRuntimeSockets;
  if (!name || !socket)
    throw new Error(`pushing ${archive}: the plane loaded no image from it, or has no node`);
  const ctr = join(defaultAssetsRoot(), componentDirName(COMPONENTS.containerd), "ctr");
  const base = ["--address", socket, "-n", "k8s.io", "images"];
  if (name !== ref) runCtr(ctr, [...base, "tag", "--force", name, ref]);
  runCtr(ctr, [...base, "push", "--plain-http", ref]);
  return ref;
}

function runCtr(ctr: string, args: string[]): void {
  const result = spawnSync(ctr, args, { encoding: "utf8" });
  if (result.status !== 0)
    throw new Error(`ctr ${args.slice(4).join(" ")} failed: ${result.error?.message ?? result.stderr}`);
}
