import { accessSync, constants, existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import {
  type BinaryName,
  type ComponentSpec,
  componentDirName,
  componentOf,
  resolveKubernetesVersion,
} from "./versions.js";

/** Where binaries may come from, highest priority first. */
export interface AssetSources {
  /** Explicit paths for single binaries; they win over everything else. */
  binaries?: Partial<Record<BinaryName, string>>;
  /**
   * A folder of envtest binaries as setup-envtest lays them out (`etcd`, `kube-apiserver`, …).
   * Defaults to `$KUBEBUILDER_ASSETS`, so Go users' existing downloads are reused.
   */
  kubebuilderAssets?: string | undefined;
  /** The version-keyed cache kubeloop builds into. Defaults to {@link defaultAssetsRoot}. */
  root?: string;
  /**
   * Which Kubernetes build to take from the cache: a minor (`1.33`) or an exact release. Defaults to
   * `$KUBELOOP_K8S_VERSION`, else the newest supported; see {@link resolveKubernetesVersion}.
   */
  kubernetesVersion?: string | undefined;
}

/**
 * The asset cache: `$KUBELOOP_ASSETS`, else `$XDG_CACHE_HOME/kubeloop`, else `~/.cache/kubeloop`.
 * It lives outside any project so every project and every clone shares one build.
 */
export function defaultAssetsRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KUBELOOP_ASSETS) return resolve(env.KUBELOOP_ASSETS);
  const cache = env.XDG_CACHE_HOME ? resolve(env.XDG_CACHE_HOME) : join(homedir(), ".cache");
  return join(cache, "kubeloop");
}

/** The folder a component's pinned build is installed in. */
export function componentDir(root: string, spec: ComponentSpec): string {
  return join(root, componentDirName(spec));
}

export interface Located {
  path: string;
  /** Where it was found, for messages: `option`, `KUBEBUILDER_ASSETS` or `cache`. */
  source: "option" | "KUBEBUILDER_ASSETS" | "cache";
}

/** Finds one binary without building anything; `undefined` when no source has it. */
export function locateBinary(binary: BinaryName, sources: AssetSources = {}): Located | undefined {
  const explicit = sources.binaries?.[binary];
  if (explicit) return { path: resolve(explicit), source: "option" };
  const envtest = "kubebuilderAssets" in sources ? sources.kubebuilderAssets : process.env.KUBEBUILDER_ASSETS;
  if (envtest) {
    const candidate = join(resolve(envtest), binary);
    if (isExecutable(candidate)) return { path: candidate, source: "KUBEBUILDER_ASSETS" };
  }
  const root = sources.root ?? defaultAssetsRoot();
  const spec = componentOf(binary, resolveKubernetesVersion(sources.kubernetesVersion));
  const cached = join(componentDir(root, spec), binary);
  if (isExecutable(cached)) return { path: cached, source: "cache" };
  return undefined;
}

/** The kwok stage definitions (node heartbeat, pod ready, …) installed beside the kwok build. */
export function kwokStagesPath(root: string): string {
  return join(componentDir(root, componentOf("kwok")), "stages.yaml");
}

export function hasKwokStages(root: string): boolean {
  return existsSync(kwokStagesPath(root));
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
