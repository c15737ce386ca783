import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { type BuildInfo, installFolder, isInstalled, lockComponent, readBuildInfo } from "./build.js";
import { type DownloadOptions, downloadText, downloadTo } from "./download.js";
import { AssetsError } from "./errors.js";
import { componentDir } from "./locate.js";
import { pullImageBinary } from "./oci.js";
import { fileIn, readTarGz } from "./tar.js";
import { type Arch, artifactsFor, checksumFrom, type FileArtifact, hostArch, mirrored } from "./upstream.js";
import { type ComponentSpec, componentDirName } from "./versions.js";

/**
 * Installs a component from upstream's prebuilt release artifacts (or a mirror of them): each file
 * is checked against the checksum upstream publishes beside it before anything is unpacked, the
 * binaries are run once, and the folder is moved into the cache in one rename, under the same lock
 * the Go build takes. A failure leaves the cache as it was.
 */

/** The environment variable naming a mirror laid out like upstream (`<mirror>/dl.k8s.io/release/…`). */
export const MIRROR_ENV = "KUBELOOP_ASSETS_MIRROR";

export interface FetchOptions extends DownloadOptions {
  root: string;
  /** A base URL serving upstream's paths; defaults to `$KUBELOOP_ASSETS_MIRROR`. */
  mirror?: string | undefined;
  arch?: Arch;
  onProgress?: (line: string) => void;
}

/** Whether upstream publishes checked binaries for this component (else it is built with Go). */
export function isDownloadable(spec: ComponentSpec): boolean {
  return artifactsFor(spec, "amd64") !== undefined;
}

export async function fetchComponent(spec: ComponentSpec, options: FetchOptions): Promise<BuildInfo> {
  const { root } = options;
  const progress = options.onProgress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const arch = options.arch ?? hostArch();
  const artifacts = artifactsFor(spec, arch);
  if (!artifacts)
    throw new AssetsError(`${spec.name} has no prebuilt release to download; it is built with Go`);
  const mirror = options.mirror ?? (process.env[MIRROR_ENV] || undefined);
  const lock = await lockComponent(root, spec, progress);
  const work = join(root, ".download", `${componentDirName(spec)}-${process.pid}`);
  try {
    const existing = readBuildInfo(root, spec);
    if (existing && isInstalled(root, spec)) return existing;
    const started = Date.now();
    const out = join(work, "out");
    rmSync(work, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    const from: string[] = [];
    progress(`Downloading ${spec.name} v${spec.version} (linux/${arch}) from ${mirror ?? "upstream"}`);
    const tty = process.stderr.isTTY === true && !process.env.CI;
    const onProgress = tty
      ? (line: string) => process.stderr.write(`\r  ${spec.name}: ${line}   `)
      : undefined;
    const download = { ...options, onProgress };
    for (const artifact of artifacts) {
      if (artifact.kind === "image") {
        const base = mirrored(artifact.repository, mirror);
        const data = await pullImageBinary(artifact, base, arch, download);
        install(out, artifact.binary, data);
        writeFileSync(join(out, `${artifact.binary}.version`), `${artifact.tag}\n`);
        from.push(`${base}/manifests/${artifact.tag}`);
      } else {
        from.push(await fetchFile(artifact, mirror, work, out, download));
      }
    }
    if (tty) process.stderr.write("\n");
    const info = installFolder(root, spec, out, started, { go: "", source: "download", from });
    const target = componentDir(root, spec);
    progress(`Downloaded ${spec.name} v${spec.version} in ${info.seconds}s → ${target}`);
    return info;
  } finally {
    rmSync(work, { recursive: true, force: true });
    lock.release();
  }
}

/** Downloads one file and its checksum, compares them, and unpacks its binaries into `out`. */
async function fetchFile(
  artifact: FileArtifact,
  mirror: string | undefined,
  work: string,
  out: string,
  options: DownloadOptions,
): Promise<string> {
  const url = mirrored(artifact.url, mirror);
  const checksumUrl = mirrored(artifact.checksumUrl, mirror);
  const name = basename(new URL(artifact.url).pathname);
  const expected = checksumFrom(
    await downloadText(checksumUrl, options),
    name,
    artifact.checksumFormat,
    checksumUrl,
  );
  const file = join(work, name);
  const got = await downloadTo(url, file, options);
  const actual = artifact.algorithm === "sha256" ? got.sha256 : got.sha512;
  if (actual !== expected) {
    throw new AssetsError(
      `Checksum mismatch for ${url}: ${basename(checksumUrl)} says ${artifact.algorithm} ${expected}, ` +
        `the download is ${actual}. Nothing was installed; if a proxy or mirror rewrites files, fix or bypass it.`,
    );
  }
  if (artifact.saveAs) {
    writeFileSync(join(out, artifact.saveAs), readFileSync(file));
    return url;
  }
  const members = Object.entries(artifact.members) as [string, string][];
  if (members.length === 1 && members[0]?.[1] === "") {
    install(out, members[0][0], readFileSync(file));
    return url;
  }
  const entries = readTarGz(readFileSync(file), url);
  for (const [binary, path] of members) install(out, binary, fileIn(entries, path, url).data);
  return url;
}

function install(out: string, binary: string, data: Buffer): void {
  const path = join(out, binary);
  writeFileSync(path, data);
  chmodSync(path, 0o755);
}
