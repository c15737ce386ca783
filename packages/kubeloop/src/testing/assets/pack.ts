import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { stringify } from "yaml";
import { type BuildInfo, isInstalled, readBuildInfo } from "./build.js";
import { envtestSelfLink, envtestTarballName } from "./envtest-index.js";
import { AssetsError } from "./errors.js";
import { componentDir } from "./locate.js";
import { type TarEntry, writeTarGz } from "./tar.js";
import {
  type Arch,
  artifactsFor,
  type FileArtifact,
  hostArch,
  type ImageArtifact,
  mirrored,
  mirrorPath,
} from "./upstream.js";
import {
  type ComponentName,
  type ComponentSpec,
  componentsFor,
  resolveKubernetesVersion,
} from "./versions.js";

/**
 * The cache, written back out the way upstream publishes it: envtest tarballs with an index in
 * controller-tools' `envtest-releases.yaml` shape (for `setup-envtest sideload` or `--index`), and
 * with `mirror`, every downloadable component as its upstream release file and checksum, at the
 * paths a `KUBELOOP_ASSETS_MIRROR` serves.
 */

/** What {@link packAssets} reads, and where and how it writes. */
export interface PackOptions {
  /** The cache to read. */
  root: string;
  /** The folder to write into. */
  out: string;
  /** Which Kubernetes build (default: `$KUBELOOP_K8S_VERSION`, else the newest). */
  kubernetesVersion?: string | undefined;
  /** Write the whole mirror tree (`<out>/dl.k8s.io/…`, `<out>/github.com/…`), not just envtest tarballs. */
  mirror?: boolean;
  /** The URL the mirror will be served at; the index's `selfLink`s point there. */
  baseUrl?: string | undefined;
  /** Only these components in the mirror tree (default: every downloadable one the cache has). */
  components?: readonly ComponentName[] | undefined;
  /** Write the envtest tarball and index (default true). */
  envtest?: boolean;
}

/** What {@link packAssets} wrote. */
export interface PackResult {
  /** Every file written, relative to `out`. */
  files: string[];
  /** The index, relative to `out`. */
  index: string;
  /** Components skipped because the cache does not have them. */
  missing: string[];
}

/**
 * Writes the cache out as upstream publishes it (see the module comment); what `kubeloop assets pack`
 * runs.
 *
 * @example
 * ```ts
 * import { defaultAssetsRoot, packAssets } from "kubeloop/testing/assets";
 *
 * // On a machine with a filled cache: a tree to serve as KUBELOOP_ASSETS_MIRROR for the others.
 * const { files, missing } = packAssets({ root: defaultAssetsRoot(), out: "/srv/kubeloop-mirror", mirror: true });
 * // files: every path the mirror serves, checksum files included
 * if (missing.length > 0) throw new Error(`not cached, so not packed: ${missing.join(", ")} (${files.length} files)`);
 * ```
 */
export function packAssets(options: PackOptions): PackResult {
  const arch = hostArch();
  const specs = componentsFor(resolveKubernetesVersion(options.kubernetesVersion));
  const files: string[] = [];
  const missing: string[] = [];
  const write = (path: string, data: Buffer | string) => {
    mkdirSync(dirname(join(options.out, path)), { recursive: true });
    writeFileSync(join(options.out, path), data);
    files.push(path);
  };
  const index = options.envtest === false ? "" : packEnvtest(options, arch, write);
  if (options.mirror) {
    for (const spec of Object.values(specs)) {
      const artifacts = artifactsFor(spec, arch);
      if (!artifacts || (options.components && !options.components.includes(spec.name))) continue;
      if (!isInstalled(options.root, spec)) {
        missing.push(spec.name);
        continue;
      }
      const info = readBuildInfo(options.root, spec) as BuildInfo;
      for (const artifact of artifacts) {
        if (artifact.kind === "image") packImage(options.root, spec, artifact, arch, info, write);
        else packFile(options.out, options.root, spec, artifact, info, write);
      }
    }
  }
  return { files, index, missing };
}

/** The envtest tarball, its `.sha512` (as controller-tools' Dockerfile writes it) and the index; returns the index's path. */
function packEnvtest(options: PackOptions, arch: Arch, write: Write): string {
  const specs = componentsFor(resolveKubernetesVersion(options.kubernetesVersion));
  if (!isInstalled(options.root, specs.kubernetes) || !isInstalled(options.root, specs.etcd)) {
    throw new AssetsError(
      `Nothing to pack: ${options.root} has no kube-apiserver v${specs.kubernetes.version} and etcd v${specs.etcd.version}. ` +
        "Run `npx kubeloop assets build` first.",
    );
  }
  const version = specs.kubernetes.version;
  const tarball = envtestTarball(options.root, specs.kubernetes, specs.etcd);
  const name = envtestTarballName(version, "linux", arch);
  const selfLink = mirrored(envtestSelfLink(version, name), options.baseUrl);
  const tarballPath = options.mirror ? mirrorPath(envtestSelfLink(version, name)) : name;
  write(tarballPath, tarball);
  write(`${tarballPath}.sha512`, `${sha(tarball, "sha512")}  /${name}\n`);
  const index = stringify({
    releases: { [`v${version}`]: { [name]: { hash: sha(tarball, "sha512"), selfLink } } },
  });
  const indexPath = options.mirror
    ? "raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml"
    : "envtest-releases.yaml";
  write(indexPath, index);
  return indexPath;
}

/**
 * setup-envtest's tarball, as controller-tools' hack/envtest/linux/Dockerfile makes it: GNU tar of
 * `/controller-tools/envtest` (stored without the leading slash: the folder, then kube-apiserver,
 * kubectl and etcd in the order they were added), gzip-compressed. kubectl is included when the
 * cache has one; kubeloop itself never needs it.
 */
export function envtestTarball(root: string, kubernetes: ComponentSpec, etcd: ComponentSpec): Buffer {
  const mtime = Math.floor(Date.parse(readBuildInfo(root, kubernetes)?.builtAt ?? "") / 1000) || 0;
  const dir = "controller-tools/envtest/";
  const entries: TarEntry[] = [{ name: dir, type: "directory", mode: 0o755, data: Buffer.alloc(0) }];
  const add = (spec: ComponentSpec, binary: string) => {
    const path = join(componentDir(root, spec), binary);
    if (existsSync(path))
      entries.push({ name: `${dir}${binary}`, type: "file", mode: 0o755, data: readFileSync(path) });
  };
  add(kubernetes, "kube-apiserver");
  add(kubernetes, "kubectl");
  add(etcd, "etcd");
  return writeTarGz(entries, { mtime });
}

type Write = (path: string, data: Buffer | string) => void;

/** One release file: the bare binary or an archive of them, and its checksum file as upstream writes it. */
function packFile(
  out: string,
  root: string,
  spec: ComponentSpec,
  artifact: FileArtifact,
  info: BuildInfo,
  write: Write,
): void {
  const members = Object.entries(artifact.members) as [string, string][];
  const read = (binary: string) => readFileSync(join(componentDir(root, spec), binary));
  const data = artifact.saveAs
    ? read(artifact.saveAs)
    : members.length === 1 && members[0]?.[1] === ""
      ? read(members[0][0])
      : writeTarGz(
          members.map(([binary, path]) => ({
            name: path,
            type: "file" as const,
            mode: 0o755,
            data: read(binary),
          })),
          { mtime: Math.floor(Date.parse(info.builtAt) / 1000) || 0 },
        );
  const path = mirrorPath(artifact.url);
  write(path, data);
  const hash = sha(data, artifact.algorithm);
  const name = basename(path);
  const checksumPath = mirrorPath(artifact.checksumUrl);
  if (artifact.checksumFormat === "hex") {
    write(checksumPath, `${hash}\n`);
    return;
  }
  const existing = existsSync(join(out, checksumPath)) ? readFileSync(join(out, checksumPath), "utf8") : "";
  if (artifact.checksumFormat === "github") {
    // The release's API record, with this asset's digest beside the others already written.
    const assets = existing ? (JSON.parse(existing) as { assets: { name: string }[] }).assets : [];
    const others = assets.filter((asset) => asset.name !== name);
    write(checksumPath, JSON.stringify({ assets: [...others, { name, digest: `sha256:${hash}` }] }, null, 2));
    return;
  }
  // A sums file can list several assets (runc.sha256sum, etcd's SHA256SUMS): keep the others' lines.
  const lines = existing.split("\n").filter((line) => line && !line.endsWith(`  ${name}`));
  write(checksumPath, `${[...lines, `${hash}  ${name}`].join("\n")}\n`);
}

/** A one-layer image holding the binary, as the registry API serves it: index, manifest, config, layer. */
function packImage(
  root: string,
  spec: ComponentSpec,
  artifact: ImageArtifact,
  arch: Arch,
  info: BuildInfo,
  write: Write,
): void {
  const binary = readFileSync(join(componentDir(root, spec), artifact.binary));
  const mtime = Math.floor(Date.parse(info.builtAt) / 1000) || 0;
  const layer = writeTarGz([{ name: artifact.path, type: "file", mode: 0o755, data: binary }], { mtime });
  const config = Buffer.from(
    JSON.stringify({
      architecture: arch,
      os: "linux",
      config: { Entrypoint: [`/${artifact.path}`] },
      rootfs: { type: "layers", diff_ids: [] },
    }),
  );
  const descriptor = (mediaType: string, data: Buffer) => ({
    mediaType,
    digest: `sha256:${sha(data, "sha256")}`,
    size: data.length,
  });
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: descriptor("application/vnd.oci.image.config.v1+json", config),
      layers: [descriptor("application/vnd.oci.image.layer.v1.tar+gzip", layer)],
    }),
  );
  const manifestDescriptor = {
    ...descriptor("application/vnd.oci.image.manifest.v1+json", manifest),
    platform: { os: "linux", architecture: arch },
  };
  const index = JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [manifestDescriptor],
  });
  const base = mirrorPath(artifact.repository);
  write(`${base}/manifests/${artifact.tag}`, index);
  write(`${base}/manifests/${manifestDescriptor.digest}`, manifest);
  for (const blob of [config, layer]) write(`${base}/blobs/sha256:${sha(blob, "sha256")}`, blob);
}

function sha(data: Buffer, algorithm: "sha256" | "sha512"): string {
  return createHash(algorithm).update(data).digest("hex");
}
