/**
 * `kubeloop/testing/assets`: the binaries a control plane runs (etcd, kube-apiserver, kwok, the
 * node stack, helm, OLM, Karmada), pinned by version, downloaded from upstream's releases and
 * checked, or built from Go modules, and cached outside the project (`~/.cache/kubeloop`). A
 * `ControlPlane` gets what it needs by itself: import this to fill the cache ahead of time (CI),
 * pack it for a machine without network, or find a binary.
 *
 * @example
 * ```ts
 * import { ensureAssets, KUBERNETES_VERSION } from "kubeloop/testing/assets";
 *
 * const { binaries } = await ensureAssets(["etcd", "kube-apiserver"]);
 * const apiServer = binaries["kube-apiserver"]; // a path under the cache, named for KUBERNETES_VERSION
 * if (!apiServer?.includes(KUBERNETES_VERSION)) throw new Error(`unexpected binary ${apiServer}`);
 * ```
 */
import { AssetsError } from "./errors.js";
import {
  type AssetSources,
  defaultAssetsRoot,
  hasKwokStages,
  kwokStagesPath,
  locateBinary,
} from "./locate.js";
import { type ObtainOptions, obtainComponent, SOURCE_ENV, sourcePolicy } from "./obtain.js";
import {
  type BinaryName,
  type ComponentName,
  componentOf,
  KUBERNETES_VERSION,
  resolveKubernetesVersion,
} from "./versions.js";

export { type BuildInfo, type BuildOptions, buildComponent, readBuildInfo } from "./build.js";
export { DownloadError } from "./download.js";
export { AssetsError } from "./errors.js";
export { MIRROR_ENV } from "./fetch.js";
export { type AssetSources, defaultAssetsRoot, locateBinary } from "./locate.js";
export { type AssetSourcePolicy, type ObtainOptions, obtainComponent, SOURCE_ENV } from "./obtain.js";
export { type PackOptions, type PackResult, packAssets } from "./pack.js";
export {
  type BinaryName,
  COMPONENTS,
  type ComponentName,
  componentsFor,
  ETCD_VERSION,
  KARMADA_VERSION,
  KUBERNETES_VERSION,
  KUBERNETES_VERSION_ENV,
  KWOK_VERSION,
  OLDEST_KUBERNETES_VERSION,
  resolveKubernetesVersion,
  SUPPORTED_KUBERNETES_VERSIONS,
} from "./versions.js";

/**
 * Where {@link ensureAssets} looks for binaries ({@link AssetSources}) and how it gets missing ones
 * ({@link ObtainOptions}: downloaded from upstream or a mirror and checked, else built with Go).
 */
export interface EnsureAssetsOptions extends AssetSources, ObtainOptions {
  /**
   * Get what is missing (default). When false, a missing binary is an error that says how to get
   * it; CI jobs that fill the cache in a separate step use this to fail fast.
   */
  build?: boolean;
}

/** What {@link ensureAssets} found: the path of each binary asked for. */
export interface ResolvedAssets {
  /** Each needed binary's absolute path. */
  binaries: Partial<Record<BinaryName, string>>;
  /** The kwok stages file, when kwok was asked for. */
  kwokStages?: string;
}

/**
 * Finds each binary: an explicit path, `KUBEBUILDER_ASSETS`, the cache; else the component is
 * downloaded from upstream's release (or `KUBELOOP_ASSETS_MIRROR`) and checked, or built with Go
 * (at most once per component).
 */
export async function ensureAssets(
  needed: BinaryName[],
  options: EnsureAssetsOptions = {},
): Promise<ResolvedAssets> {
  const root = options.root ?? defaultAssetsRoot();
  const kubernetesVersion = resolveKubernetesVersion(options.kubernetesVersion);
  const sources = { ...options, root, kubernetesVersion };
  const missing = new Set<ComponentName>();
  for (const binary of needed) {
    if (!locateBinary(binary, sources)) missing.add(componentOf(binary, kubernetesVersion).name);
  }
  if (needed.includes("kwok") && !locateKwokStages(root)) missing.add("kwok");
  if (missing.size > 0 && (options.build === false || sourcePolicy(options.source) === "cache-only")) {
    throw new AssetsError(
      `Control-plane binaries missing for ${[...missing].join(", ")} (Kubernetes ${kubernetesVersion}; looked in ${root}` +
        `${process.env.KUBEBUILDER_ASSETS ? ` and KUBEBUILDER_ASSETS=${process.env.KUBEBUILDER_ASSETS}` : ""}). ` +
        `${options.build === false ? "" : `${SOURCE_ENV}=cache-only is set. `}` +
        "Run `npx kubeloop assets build` to download them (or build them with Go)" +
        (kubernetesVersion === KUBERNETES_VERSION
          ? "."
          : ` (with --kubernetes-version ${kubernetesVersion}).`),
    );
  }
  // Sequential on purpose: each build already uses every core, and they share Go's build cache.
  for (const component of missing) await obtainComponent(component, { ...options, root, kubernetesVersion });

  const binaries: Partial<Record<BinaryName, string>> = {};
  for (const binary of needed) {
    const found = locateBinary(binary, sources);
    if (!found)
      throw new AssetsError(
        `${binary} is still missing after its component was installed; see the build log under ${root}/.build`,
      );
    binaries[binary] = found.path;
  }
  const kwokStages = needed.includes("kwok") ? locateKwokStages(root) : undefined;
  return kwokStages ? { binaries, kwokStages } : { binaries };
}

function locateKwokStages(root: string): string | undefined {
  return hasKwokStages(root) ? kwokStagesPath(root) : undefined;
}
