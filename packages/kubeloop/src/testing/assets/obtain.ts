import { type BuildInfo, type BuildOptions, buildComponent, isInstalled, readBuildInfo } from "./build.js";
import { DownloadError } from "./download.js";
import { AssetsError } from "./errors.js";
import { fetchComponent, isDownloadable, MIRROR_ENV } from "./fetch.js";
import { checkGo, goEnv } from "./go.js";
import { defaultAssetsRoot } from "./locate.js";
import { type ComponentName, componentsFor, MINIMUM_GO, resolveKubernetesVersion } from "./versions.js";

/**
 * Where a missing component comes from: upstream's checked release artifacts (or a mirror of
 * them) first, since that takes seconds; the Go build when there is none or the download failed
 * and Go is installed; else one error naming every way to get it.
 */

/** Forces one way of getting binaries: `download` only, `build` only, or `cache-only` (neither). */
export type AssetSourcePolicy = "auto" | "download" | "build" | "cache-only";

/** The environment variable that sets {@link AssetSourcePolicy} when no option does. */
export const SOURCE_ENV = "KUBELOOP_ASSETS_SOURCE";

/** How {@link obtainComponent} gets a component that is not cached yet. */
export interface ObtainOptions extends BuildOptions {
  /** Defaults to `$KUBELOOP_ASSETS_SOURCE`, else `auto` (download, then build). */
  source?: AssetSourcePolicy | undefined;
  /** A mirror of upstream's release files; defaults to `$KUBELOOP_ASSETS_MIRROR`. */
  mirror?: string | undefined;
  /** Abandon a download after this long without data (default `$KUBELOOP_ASSETS_TIMEOUT` s, else 30 s). */
  stallMs?: number | undefined;
}

/** The policy in force: the option, else `$KUBELOOP_ASSETS_SOURCE`, else `auto`; a typo is an error. */
export function sourcePolicy(requested?: string, env: NodeJS.ProcessEnv = process.env): AssetSourcePolicy {
  const raw = requested ?? env[SOURCE_ENV]?.trim();
  if (!raw) return "auto";
  if (raw === "auto" || raw === "download" || raw === "build" || raw === "cache-only") return raw;
  throw new AssetsError(
    `${SOURCE_ENV}=${raw} is not one of download, build, cache-only (or auto, the default).`,
  );
}

/**
 * Installs one component into the cache unless it is there: downloaded and checked, or built with
 * Go, as {@link ObtainOptions.source} allows. Returns its record (`source` says which way).
 *
 * @example
 * ```ts
 * import { obtainComponent } from "kubeloop/testing/assets";
 *
 * // In CI with no Go: fetch etcd from a company mirror of upstream's release files.
 * const info = await obtainComponent("etcd", { source: "download", mirror: "https://mirror.example.com/k8s" });
 * // info.from: ["https://mirror.example.com/k8s/github.com/etcd-io/…"], each file checked before install
 * if (info.source !== "download") throw new Error(`etcd came from ${info.source}, not the mirror`);
 * ```
 */
export async function obtainComponent(name: ComponentName, options: ObtainOptions = {}): Promise<BuildInfo> {
  const kubernetesVersion = resolveKubernetesVersion(options.kubernetesVersion);
  const spec = componentsFor(kubernetesVersion)[name];
  const root = options.root ?? defaultAssetsRoot();
  const existing = readBuildInfo(root, spec);
  if (existing && isInstalled(root, spec)) return existing;
  const policy = sourcePolicy(options.source);
  const mirror = options.mirror ?? (process.env[MIRROR_ENV] || undefined);
  const fetchOptions = {
    root,
    mirror,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.stallMs !== undefined ? { stallMs: options.stallMs } : {}),
  };
  const build = () => buildComponent(name, { ...options, root, kubernetesVersion });
  if (policy === "cache-only") {
    throw new AssetsError(
      `${name} v${spec.version} is not in ${root}, and ${SOURCE_ENV}=cache-only forbids downloading or building it.`,
    );
  }
  if (policy === "build") return build();
  if (!isDownloadable(spec)) {
    if (policy === "download") {
      throw new AssetsError(
        `${name} has no prebuilt upstream release to download (${SOURCE_ENV}=download); it is built with Go: ` +
          "unset KUBELOOP_ASSETS_SOURCE, or run `npx kubeloop assets build` where Go is installed.",
      );
    }
    return build();
  }
  try {
    return await fetchComponent(spec, fetchOptions);
  } catch (error) {
    // A checksum mismatch is not a network problem: stop rather than quietly build around it.
    if (policy === "download" || !(error instanceof DownloadError)) throw error;
    const goMissing = goProblem(options);
    if (!goMissing) {
      (options.onProgress ?? ((line: string) => process.stderr.write(`${line}\n`)))(
        `${error.message}\nBuilding ${name} v${spec.version} with Go instead.`,
      );
      return build();
    }
    throw new AssetsError(noWayMessage(name, spec.version, error.message, goMissing, mirror));
  }
}

/** Why Go cannot build, or undefined when it can. */
function goProblem(options: BuildOptions): string | undefined {
  try {
    checkGo(options.go ?? "go", goEnv(options.env));
    return undefined;
  } catch (error) {
    return (error as Error).message.split("\n")[0];
  }
}

function noWayMessage(name: string, version: string, download: string, go: string, mirror?: string): string {
  return (
    `Could not get ${name} v${version}:\n` +
    `  - download: ${download}\n` +
    `  - Go build: ${go}\n` +
    "Do one of these:\n" +
    (mirror
      ? `  - check the mirror ${MIRROR_ENV}=${mirror}: it must serve upstream's paths (\`kubeloop assets pack --mirror DIR\` writes them);\n`
      : `  - set ${MIRROR_ENV} to a mirror of upstream's release files (\`kubeloop assets pack --mirror DIR\` on a machine that has the binaries writes one);\n`) +
    "  - let this machine reach dl.k8s.io, github.com and registry.k8s.io (behind a proxy: set HTTPS_PROXY, and NODE_EXTRA_CA_CERTS for its CA);\n" +
    `  - install Go ${MINIMUM_GO} or newer to build the binaries from source;\n` +
    "  - set KUBEBUILDER_ASSETS to a folder of envtest binaries, or KUBELOOP_ASSETS to a cache filled on a machine of the same kind."
  );
}
