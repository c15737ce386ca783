import { AssetsError } from "../errors.js";
import { type BuildOptions, buildComponent } from "./build.js";
import {
  type AssetSources,
  defaultAssetsRoot,
  hasKwokStages,
  kwokStagesPath,
  locateBinary,
} from "./locate.js";
import {
  type BinaryName,
  type ComponentName,
  componentOf,
  KUBERNETES_VERSION,
  resolveKubernetesVersion,
} from "./versions.js";

export { type BuildInfo, type BuildOptions, buildComponent, isInstalled, readBuildInfo } from "./build.js";
export { type AssetSources, defaultAssetsRoot, kwokStagesPath, locateBinary } from "./locate.js";
export {
  type BinaryName,
  COMPONENTS,
  type ComponentName,
  type ComponentSpec,
  componentDirName,
  componentOf,
  componentsFor,
  ETCD_VERSION,
  HELM_VERSION,
  KARMADA_VERSION,
  KUBERNETES_VERSION,
  KUBERNETES_VERSION_ENV,
  KWOK_VERSION,
  MINIMUM_GO,
  minorOf,
  OLDEST_KUBERNETES_VERSION,
  OLM_API_VERSION,
  OLM_VERSION,
  resolveKubernetesVersion,
  SUPPORTED_KUBERNETES_VERSIONS,
} from "./versions.js";

/** Where {@link ensureAssets} looks for binaries ({@link AssetSources}) and how it builds missing ones ({@link BuildOptions}). */
export interface EnsureAssetsOptions extends AssetSources, BuildOptions {
  /**
   * Build what is missing (default). When false, a missing binary is an error that says how to get
   * it; CI jobs that build in a separate step use this to fail fast.
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

/** Finds each binary, building the components that are missing (at most once per component). */
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
  if (missing.size > 0 && options.build === false) {
    throw new AssetsError(
      `Control-plane binaries missing for ${[...missing].join(", ")} (Kubernetes ${kubernetesVersion}; looked in ${root}` +
        `${process.env.KUBEBUILDER_ASSETS ? ` and KUBEBUILDER_ASSETS=${process.env.KUBEBUILDER_ASSETS}` : ""}). ` +
        "Run `npx kubeloop assets build` to build them from Go modules" +
        (kubernetesVersion === KUBERNETES_VERSION
          ? "."
          : ` (with --kubernetes-version ${kubernetesVersion}).`),
    );
  }
  // Sequential on purpose: each build already uses every core, and they share Go's build cache.
  for (const component of missing) await buildComponent(component, { ...options, root, kubernetesVersion });

  const binaries: Partial<Record<BinaryName, string>> = {};
  for (const binary of needed) {
    const found = locateBinary(binary, sources);
    if (!found)
      throw new AssetsError(
        `${binary} is still missing after its build; see the build log under ${root}/.build`,
      );
    binaries[binary] = found.path;
  }
  const kwokStages = needed.includes("kwok") ? locateKwokStages(root) : undefined;
  return kwokStages ? { binaries, kwokStages } : { binaries };
}

function locateKwokStages(root: string): string | undefined {
  return hasKwokStages(root) ? kwokStagesPath(root) : undefined;
}
