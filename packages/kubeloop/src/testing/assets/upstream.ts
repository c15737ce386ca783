import { arch as machineArch } from "node:os";
import { AssetsError } from "./errors.js";
import { type BinaryName, type ComponentName, type ComponentSpec, minorOf } from "./versions.js";

/**
 * Where upstream publishes each component as a prebuilt binary, and the checksum it publishes
 * beside it. Every pattern names the upstream file that produces it. A mirror
 * (`KUBELOOP_ASSETS_MIRROR`) serves the same paths under one base URL: `<mirror>/<host>/<path>`.
 *
 * Not here, so built from Go modules as before: OLM's operator-verify (no binary release), and OLM
 * v0's operators, which upstream ships only as images (opm has binaries, but it is built with OLM so
 * that it is the operator-registry OLM requires).
 */

/** The CPU architectures upstream publishes Linux binaries for that kubeloop runs on. */
export type Arch = "amd64" | "arm64";

/** This machine's architecture in Go's spelling, or an error naming the ones supported. */
export function hostArch(nodeArch: string = machineArch()): Arch {
  if (nodeArch === "x64") return "amd64";
  if (nodeArch === "arm64") return "arm64";
  throw new AssetsError(
    `No prebuilt binaries for ${nodeArch}: upstream publishes Linux amd64 and arm64. Build them with Go ` +
      "(`npx kubeloop assets build`) or set KUBEBUILDER_ASSETS.",
  );
}

/** A file upstream publishes: a bare binary, or a `.tar.gz` holding the binaries. */
export interface FileArtifact {
  kind: "file";
  url: string;
  /** The file beside it with its checksum. */
  checksumUrl: string;
  algorithm: "sha256" | "sha512";
  /**
   * `hex`: the file holds only the hash; `sums`: `sha256sum` lines (`<hash>  <name>`); `github`: the
   * GitHub release's API record, whose assets carry the `digest` GitHub computed on upload.
   */
  checksumFormat: ChecksumFormat;
  /** Each binary and where it is: its path in the archive, or `""` when the file is the binary. */
  members: Partial<Record<BinaryName, string>>;
  /** A data file kept as is under this name (kwok's stages), instead of binaries. */
  saveAs?: string;
}

export type ChecksumFormat = "hex" | "sums" | "github";

/** A single-binary image in an OCI registry (the sandbox image); its blobs are checked by digest. */
export interface ImageArtifact {
  kind: "image";
  /** `https://registry.k8s.io/v2/pause`: the repository's API base. */
  repository: string;
  tag: string;
  binary: BinaryName;
  /** The binary's path in the image's layer. */
  path: string;
}

export type Artifact = FileArtifact | ImageArtifact;

const GITHUB = "https://github.com";

/**
 * The pause (sandbox) image tag each Kubernetes minor's build/pause/Makefile sets (`TAG ?=`).
 * Upstream publishes pause only as an image, registry.k8s.io/pause.
 */
const PAUSE_TAGS: Readonly<Record<string, string>> = { "1.36": "3.10.2" };

/** How one component's release is published: its artifacts for a version, or none to check. */
type Release = (v: string, arch: Arch, spec: ComponentSpec) => Artifact[] | undefined;

/** Per component with checkable upstream releases, where they are and how they are checked. */
const RELEASES: Partial<Record<ComponentName, Release>> = {
  kubernetes: (v, arch, spec) => spec.binaries.map((binary) => kubernetesBinary(v, arch, binary)),
  "kubernetes-node": (v, arch) => {
    const tag = PAUSE_TAGS[minorOf(v)];
    if (!tag) return undefined;
    return [
      kubernetesBinary(v, arch, "kubelet"),
      kubernetesBinary(v, arch, "kube-proxy"),
      {
        kind: "image",
        repository: "https://registry.k8s.io/v2/pause",
        tag,
        binary: "pause",
        path: "pause",
      },
    ];
  },
  kwok: (v, arch) => {
    // kwok's hack/releases.sh uploads bare `kwok-linux-<arch>` binaries and hack/manifests.sh the
    // `stage-fast.yaml` it builds from kustomize/stage/fast, with no checksum file: the check is the
    // SHA-256 GitHub records for each release asset (the release API's `digest`).
    const base = `${GITHUB}/kubernetes-sigs/kwok/releases/download/v${v}`;
    const api = `https://api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v${v}`;
    const github = {
      kind: "file",
      checksumUrl: api,
      algorithm: "sha256",
      checksumFormat: "github",
    } as const;
    return [
      { ...github, url: `${base}/kwok-linux-${arch}`, members: { kwok: "" } },
      { ...github, url: `${base}/stage-fast.yaml`, members: {}, saveAs: "stages.yaml" },
    ];
  },
  // etcd's scripts/build-binary.sh packs etcd-v<ver>-linux-<arch>/ into a .tar.gz, and
  // scripts/release.sh writes SHA256SUMS (`shasum -a 256`) over every asset and uploads it.
  etcd: (v, arch) => [
    sums(
      `${GITHUB}/etcd-io/etcd/releases/download/v${v}/etcd-v${v}-linux-${arch}.tar.gz`,
      `${GITHUB}/etcd-io/etcd/releases/download/v${v}/SHA256SUMS`,
      { etcd: `etcd-v${v}-linux-${arch}/etcd` },
    ),
  ],
  // containerd's Makefile, `release` target: `tar -czf containerd-<ver>-linux-<arch>.tar.gz -C … bin`
  // and `sha256sum … > ….tar.gz.sha256sum`; .github/workflows/release.yml uploads both.
  containerd: (v, arch) => [
    sums(
      `${GITHUB}/containerd/containerd/releases/download/v${v}/containerd-${v}-linux-${arch}.tar.gz`,
      `${GITHUB}/containerd/containerd/releases/download/v${v}/containerd-${v}-linux-${arch}.tar.gz.sha256sum`,
      {
        containerd: "bin/containerd",
        "containerd-shim-runc-v2": "bin/containerd-shim-runc-v2",
        ctr: "bin/ctr",
      },
    ),
  ],
  // runc's script/release_build.sh: bare `runc.<arch>` binaries, hashed into `runc.sha256sum`.
  runc: (v, arch) => [
    sums(
      `${GITHUB}/opencontainers/runc/releases/download/v${v}/runc.${arch}`,
      `${GITHUB}/opencontainers/runc/releases/download/v${v}/runc.sha256sum`,
      { runc: "" },
    ),
  ],
  "cni-plugins": (v, arch, spec) => {
    // containernetworking/plugins .github/workflows/release.yaml: `tar cfzpv` of the plugins
    // (entries `./ptp`, …) and `sha256sum … | tee ….tgz.sha256`.
    const base = `${GITHUB}/containernetworking/plugins/releases/download/v${v}/cni-plugins-linux-${arch}-v${v}.tgz`;
    const members = Object.fromEntries(spec.binaries.map((binary) => [binary, `./${binary}`]));
    return [sums(base, `${base}.sha256`, members)];
  },
  coredns: (v, arch) => {
    // coredns's Makefile.release: `tar -zcf coredns_<ver>_linux_<arch>.tgz -C … coredns` and
    // `sha256sum $asset > $asset.sha256`.
    const base = `${GITHUB}/coredns/coredns/releases/download/v${v}/coredns_${v}_linux_${arch}.tgz`;
    return [sums(base, `${base}.sha256`, { coredns: "coredns" })];
  },
  registry: (v, arch) => {
    // distribution's Dockerfile (releaser stage): `registry_<ver>_linux_<arch>.tar.gz` holding
    // registry, README.md and LICENSE, and a `.sha256` with the bare hash (`awk '{ print $1 }'`).
    const base = `${GITHUB}/distribution/distribution/releases/download/v${v}/registry_${v}_linux_${arch}.tar.gz`;
    return [
      {
        kind: "file",
        url: base,
        checksumUrl: `${base}.sha256`,
        algorithm: "sha256",
        checksumFormat: "hex",
        members: { registry: "registry" },
      },
    ];
  },
  helm: (v, arch) => {
    // helm's Makefile (dist, checksum targets): get.helm.sh/helm-v<ver>-linux-<arch>.tar.gz
    // (linux-<arch>/helm) with `.sha256sum` (`<hash>  <file>`) beside it.
    const base = `https://get.helm.sh/helm-v${v}-linux-${arch}.tar.gz`;
    return [sums(base, `${base}.sha256sum`, { helm: `linux-${arch}/helm` })];
  },
};

/**
 * The artifacts to fetch for a component on `arch`, or undefined when upstream publishes none that
 * can be checked (see the list above): those components keep their Go build.
 */
export function artifactsFor(spec: ComponentSpec, arch: Arch): Artifact[] | undefined {
  return RELEASES[spec.name]?.(spec.version, arch, spec);
}

/**
 * kube-apiserver and the others, as the release publishes them: `dl.k8s.io/release/v<ver>/bin/linux/
 * <arch>/<binary>` with `<binary>.sha256` (the bare hash) beside it — kubernetes.io's "Install and
 * Set Up kubectl on Linux", and the URL controller-tools' hack/envtest/linux/Dockerfile downloads.
 */
function kubernetesBinary(version: string, arch: Arch, binary: BinaryName): FileArtifact {
  const url = `https://dl.k8s.io/release/v${version}/bin/linux/${arch}/${binary}`;
  return {
    kind: "file",
    url,
    checksumUrl: `${url}.sha256`,
    algorithm: "sha256",
    checksumFormat: "hex",
    members: { [binary]: "" },
  };
}

function sums(url: string, checksumUrl: string, members: Partial<Record<BinaryName, string>>): FileArtifact {
  return { kind: "file", url, checksumUrl, algorithm: "sha256", checksumFormat: "sums", members };
}

/** An upstream URL as a mirror serves it: `https://dl.k8s.io/x` → `<mirror>/dl.k8s.io/x`. */
export function mirrored(url: string, mirror: string | undefined): string {
  if (!mirror) return url;
  const parsed = new URL(url);
  return `${mirror.replace(/\/+$/, "")}/${parsed.host}${parsed.pathname}`;
}

/** Where a mirror tree keeps an upstream URL: `dl.k8s.io/release/…` under the mirror's folder. */
export function mirrorPath(url: string): string {
  const parsed = new URL(url);
  return `${parsed.host}${parsed.pathname}`;
}

/**
 * The hash a checksum file gives for `fileName`: the whole file when it is a bare hash, else the
 * `sha256sum` line naming it (a single line is taken whatever it names, as `.sha256sum` files
 * beside one asset are).
 */
export function checksumFrom(
  text: string,
  fileName: string,
  format: ChecksumFormat,
  checksumUrl: string,
): string {
  const lines = text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  const pick = () => {
    if (format === "hex") return lines[0];
    if (format === "github") return githubDigest(text, fileName);
    if (lines.length === 1) return lines[0]?.split(/\s+/)[0];
    const line = lines.find((candidate) => candidate.split(/\s+/)[1]?.replace(/^\*/, "") === fileName);
    return line?.split(/\s+/)[0];
  };
  const hash = pick()?.toLowerCase();
  if (!hash || !/^[0-9a-f]{64,128}$/.test(hash)) {
    throw new AssetsError(
      `${checksumUrl} has no checksum for ${fileName} (it reads: ${text.slice(0, 200).trim() || "nothing"})`,
    );
  }
  return hash;
}

/** The `sha256:` digest of a release asset in a GitHub release's API record. */
function githubDigest(text: string, fileName: string): string | undefined {
  try {
    const release = JSON.parse(text) as { assets?: { name?: string; digest?: string }[] };
    return release.assets?.find((asset) => asset.name === fileName)?.digest?.replace(/^sha256:/, "");
  } catch {
    return undefined;
  }
}
