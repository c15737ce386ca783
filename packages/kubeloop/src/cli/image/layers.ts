import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ARCH_PACKAGES,
  baseFiles,
  COMMON_PACKAGES,
  type DebianPackage,
  debEntries,
  debianPackages,
  kept,
  keptExtra,
  packageClosure,
} from "./base.js";
import {
  blobOf,
  type Compression,
  type Layer,
  layerOf,
  MEDIA_TYPES,
  type Platform,
  sha256,
  ZSTD_LEVEL,
} from "./oci.js";
import { type NodeRuntime, nodeRuntime, runtimeEntries } from "./runtime.js";
import type { TarEntry } from "./tar.js";

/**
 * The layers every operator image shares, made once and cached as blobs (compressing a 120 MB node
 * binary takes seconds, and a minute or two for zstd's smallest; a warm build reads the blob): the base's common files, its libraries for
 * the architecture, and the Node runtime. Keys name their inputs (package file names with versions,
 * the runtime's npm integrity), so a different input is a different layer.
 */

interface CachedMeta {
  diffId: string;
  uncompressedSize: number;
}

async function cachedLayer(
  cache: string,
  compression: Compression,
  key: string,
  comment: string,
  make: () => Promise<TarEntry[]>,
): Promise<Layer> {
  const dir = join(cache, "layers");
  const name = sha256(Buffer.from(`${compression}:${key}`)).slice("sha256:".length);
  const blobPath = join(dir, `${name}.tar.${compression === "zstd" ? "zst" : "gz"}`);
  const metaPath = join(dir, `${name}.json`);
  if (existsSync(blobPath) && existsSync(metaPath)) {
    const meta = JSON.parse(readFileSync(metaPath, "utf8")) as CachedMeta;
    const mediaType = compression === "zstd" ? MEDIA_TYPES.zstdLayer : MEDIA_TYPES.layer;
    return { blob: blobOf(mediaType, readFileSync(blobPath)), ...meta, comment };
  }
  const layer = layerOf(await make(), comment, compression, ZSTD_LEVEL.shared);
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${blobPath}.tmp`, layer.blob.bytes);
  renameSync(`${blobPath}.tmp`, blobPath);
  writeFileSync(metaPath, JSON.stringify({ diffId: layer.diffId, uncompressedSize: layer.uncompressedSize }));
  return layer;
}

export interface SharedLayers {
  layers: Layer[];
  debian: DebianPackage[];
  runtime: NodeRuntime;
}

/**
 * The common base, the architecture's libraries and its Node runtime, in that order; with
 * `pulledBase` (a registry image's layers, `--base`), those layers instead of the Debian ones.
 * With `packages` (Debian packages the operator runs, e.g. `postgresql-client-15`), a layer of
 * them and their libraries comes after the runtime, so that the layers before it stay the ones
 * every operator shares.
 */
export async function sharedLayers(
  platform: Platform,
  nodeVersion: string,
  cache: string,
  compression: Compression = "gzip",
  pulledBase?: Layer[],
  packages: readonly string[] = [],
): Promise<SharedLayers> {
  const shared = await baseAndRuntime(platform, nodeVersion, cache, compression, pulledBase);
  if (packages.length === 0) return shared;
  const names = await packageClosure(packages, platform.architecture);
  const debs = await debianPackages(names, platform.architecture, cache);
  const extra = await cachedLayer(
    cache,
    compression,
    `packages:${debs.map((deb) => deb.file.split("/").pop()).join(",")}`,
    `packages: ${packages.join(", ")} (${platform.architecture})`,
    async () => keptExtra((await Promise.all(debs.map(debEntries))).flat()),
  );
  return { ...shared, layers: [...shared.layers, extra], debian: [...shared.debian, ...debs] };
}

async function baseAndRuntime(
  platform: Platform,
  nodeVersion: string,
  cache: string,
  compression: Compression,
  pulledBase: Layer[] | undefined,
): Promise<SharedLayers> {
  const runtime = await nodeRuntime(nodeVersion, platform.architecture, cache);
  const node = await cachedLayer(
    cache,
    compression,
    `runtime:${runtime.version}:${platform.architecture}:${runtime.integrity}`,
    `runtime: node v${runtime.version} (${platform.architecture})`,
    async () => runtimeEntries(runtime),
  );
  if (pulledBase) return { layers: [...pulledBase, node], debian: [], runtime };
  const common = await debianPackages(COMMON_PACKAGES, "all", cache);
  const libs = await debianPackages(ARCH_PACKAGES, platform.architecture, cache);
  const files = (debs: DebianPackage[]) => debs.map((deb) => deb.file.split("/").pop()).join(",");
  const base = await cachedLayer(
    cache,
    compression,
    `base-common:${files(common)}`,
    "base: users, /tmp, CA certificates, time zones",
    async () => {
      const entries = (await Promise.all(common.map(debEntries))).flat();
      return [...kept(entries), ...baseFiles(entries)];
    },
  );
  const libraries = await cachedLayer(
    cache,
    compression,
    `base-libs:${files(libs)}`,
    `base: glibc, libstdc++, libgcc (${platform.architecture})`,
    async () => kept((await Promise.all(libs.map(debEntries))).flat()),
  );
  return { layers: [base, libraries, node], debian: [...common, ...libs], runtime };
}
