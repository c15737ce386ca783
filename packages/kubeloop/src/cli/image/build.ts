import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CliError } from "../errors.js";
import { APP_DIR, type AppBuild, BUNDLE, buildApp, LAUNCHER } from "./app.js";
import type { DebianPackage } from "./base.js";
import { imageCacheDir } from "./cache.js";
import { sharedLayers } from "./layers.js";
import type { Image } from "./layout.js";
import { lockRootOf } from "./lock-root.js";
import {
  type Blob,
  type Compression,
  configBlob,
  indexBlob,
  type Layer,
  layerOf,
  manifestBlob,
  type Platform,
} from "./oci.js";
import { pullBase } from "./pull.js";
import { NODE_PATH, type NodeRuntime } from "./runtime.js";

/** The platforms an image is built for by default: operators run on arm64 clusters too. */
export const DEFAULT_PLATFORMS: readonly Platform["architecture"][] = ["amd64", "arm64"];

export interface BuildImageOptions {
  /** The project folder (its package.json). */
  dir: string;
  /** The image's reference, e.g. `ghcr.io/example/op:0.1.0` (default: package.json's `kubeloop.image`, else `<name>:<version>`). */
  name?: string;
  /** Default: amd64 and arm64; the build machine's only when the operator ships a native addon. */
  platforms?: readonly Platform["architecture"][];
  /** Default: the `node` package the project (or its workspace) pins, else the Node running this. */
  nodeVersion?: string;
  /** The module the image runs (default: package.json's `main`, else src/main.ts). */
  entry?: string;
  /** More labels, beside the org.opencontainers.image.* ones made from package.json. */
  labels?: Record<string, string>;
  /** Default: {@link imageCacheDir}. */
  cache?: string;
  /** Default gzip; zstd makes the image about a third smaller (see {@link Compression}). */
  compression?: Compression;
  /**
   * A base image in a registry (e.g. a distroless `cc` image: it must hold glibc and libstdc++ for
   * node) instead of the base made from Debian's packages.
   */
  base?: string;
  /**
   * Debian packages the operator runs (default: package.json's `kubeloop.imagePackages`), e.g.
   * `postgresql-client-15` for an operator that calls pg_dump: a layer of them and the shared
   * libraries they need, after the runtime. Their programs are not on PATH: call them by path.
   */
  packages?: readonly string[];
}

/** A built image: what {@link Image} holds, and what it is made of (for the SBOM and the output). */
export interface BuiltImage extends Image {
  /** The index's digest: the one to pin (`name@digest`). */
  digest: string;
  platforms: { platform: Platform; manifest: Blob; config: Blob; layers: Layer[] }[];
  app: AppBuild;
  runtimes: NodeRuntime[];
  debian: DebianPackage[];
  /** The project's name and version, from its package.json. */
  project: { name: string; version: string };
  /** The folder of the package-lock.json the packages come from. */
  lockRoot: string;
}

/**
 * Builds a project's operator image, daemonless: the base and runtime layers (cached), the bundled
 * operator, a config per platform (non-root, the entrypoint, labels), and an index over them.
 *
 * @example
 * ```ts
 * const image = await buildImage({ dir: "examples/nginx", name: "127.0.0.1:5000/nginx-operator:dev" });
 * writeFileSync("image.tar", layoutTar(image));
 * console.log(image.digest);
 * ```
 */
export async function buildImage(options: BuildImageOptions): Promise<BuiltImage> {
  const root = resolve(options.dir);
  const pkg = readPackage(root);
  const cache = options.cache ?? imageCacheDir();
  const entry = resolveEntry(root, pkg, options.entry);
  const lockRoot = lockRootOf(root);
  const app = await buildApp(root, entry, lockRoot);
  const host: Platform["architecture"] = process.arch === "arm64" ? "arm64" : "amd64";
  const platforms = options.platforms ?? (app.native ? [host] : DEFAULT_PLATFORMS);
  if (app.native && platforms.some((arch) => arch !== host)) {
    const natives = app.external.filter((p) => p.reason === "native addon").map((p) => p.name);
    throw new CliError(
      `${natives.join(", ")} ${natives.length === 1 ? "is a native addon" : "are native addons"}, compiled for this machine (${host}): ` +
        `an image for ${platforms.filter((a) => a !== host).join(", ")} would not run. Build with --platform linux/${host}, or on a machine of the other architecture.`,
    );
  }
  const nodeVersion = options.nodeVersion ?? pinnedNode(root) ?? process.versions.node;
  const name = options.name ?? pkg.kubeloop?.image ?? `${pkg.name ?? "operator"}:${pkg.version ?? "latest"}`;
  const compression = options.compression ?? "gzip";
  const packages = options.packages ?? pkg.kubeloop?.imagePackages ?? [];
  const appLayer = layerOf(app.files, "app: the bundled operator", compression);
  const labels: Record<string, string> = { ...labelsOf(pkg), ...options.labels };
  const built: BuiltImage["platforms"] = [];
  const runtimes: NodeRuntime[] = [];
  const debian = new Map<string, DebianPackage>();
  for (const architecture of platforms) {
    const platform: Platform = { architecture, os: "linux" };
    const pulled = options.base ? await pullBase(options.base, platform) : undefined;
    if (pulled) {
      labels["org.opencontainers.image.base.name"] = options.base ?? "";
      labels["org.opencontainers.image.base.digest"] = pulled.digest;
    }
    const shared = await sharedLayers(platform, nodeVersion, cache, compression, pulled?.layers, packages);
    runtimes.push(shared.runtime);
    for (const deb of shared.debian) debian.set(deb.file, deb);
    const layers = [...shared.layers, appLayer];
    const config = configBlob(
      {
        platform,
        // The launcher adds heap flags sized from the container's memory limit, then execs the bundle.
        // Source maps are shipped but off: Node parses them at load, +20 MiB RSS for an operator
        // (docs/performance.md); NODE_OPTIONS=--enable-source-maps turns them on.
        entrypoint: [NODE_PATH, `${APP_DIR}/${LAUNCHER}`, `${APP_DIR}/${BUNDLE}`],
        env: [
          "PATH=/usr/local/bin",
          "NODE_ENV=production",
          "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
          // glibc's malloc arenas (up to 8 per core, one per thread that allocates): two hold
          // 2–6 MiB less RSS for an operator (docs/performance.md); the Deployment's env overrides it.
          "MALLOC_ARENA_MAX=2",
        ],
        workingDir: APP_DIR,
        labels,
      },
      layers,
    );
    built.push({ platform, config, layers, manifest: manifestBlob(config, layers, labels) });
  }
  const index = indexBlob(built, labels);
  const blobs = built.flatMap((p) => [p.manifest, p.config, ...p.layers.map((l) => l.blob)]);
  return {
    name,
    index,
    digest: index.digest,
    blobs,
    platforms: built,
    app,
    runtimes,
    debian: [...debian.values()],
    project: { name: pkg.name ?? name, version: pkg.version ?? "0.0.0" },
    lockRoot,
  };
}

interface ProjectPackage {
  name?: string;
  version?: string;
  description?: string;
  license?: string;
  main?: string;
  homepage?: string;
  repository?: string | { url?: string };
  kubeloop?: { image?: string; imagePackages?: string[] };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

function readPackage(dir: string): ProjectPackage {
  const file = join(dir, "package.json");
  if (!existsSync(file))
    throw new CliError(`${dir} has no package.json: kubeloop build takes the folder of a project`);
  return JSON.parse(readFileSync(file, "utf8")) as ProjectPackage;
}

function resolveEntry(root: string, pkg: ProjectPackage, entry: string | undefined): string {
  const candidates = entry ? [entry] : [pkg.main, "src/main.ts"].filter((c): c is string => Boolean(c));
  const found = candidates.map((c) => resolve(root, c)).find((path) => existsSync(path));
  if (!found) {
    throw new CliError(`no entry point in ${root}: looked for ${candidates.join(", ")} (pass --entry FILE)`);
  }
  return found;
}

/** The exact version of the `node` package the project or a workspace above it depends on. */
function pinnedNode(root: string): string | undefined {
  for (let dir = root; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) {
      const pkg = readPackage(dir);
      const spec = pkg.devDependencies?.node ?? pkg.dependencies?.node;
      if (spec && /^\d+\.\d+\.\d+$/.test(spec)) return spec;
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** org.opencontainers.image.* labels from package.json (no date or commit: they would change the digest). */
function labelsOf(pkg: ProjectPackage): Record<string, string> {
  const source = typeof pkg.repository === "string" ? pkg.repository : pkg.repository?.url;
  const labels: Record<string, string | undefined> = {
    "org.opencontainers.image.title": pkg.name,
    "org.opencontainers.image.version": pkg.version,
    "org.opencontainers.image.description": pkg.description,
    "org.opencontainers.image.licenses": pkg.license,
    "org.opencontainers.image.url": pkg.homepage,
    "org.opencontainers.image.source": source?.replace(/^git\+/, ""),
  };
  return Object.fromEntries(Object.entries(labels).filter((e): e is [string, string] => Boolean(e[1])));
}
