import { parse } from "yaml";
import { AssetsError } from "./errors.js";

/**
 * controller-tools' `envtest-releases.yaml`, the index setup-envtest and envtest.DownloadBinaryAssets
 * read (controller-runtime tools/setup-envtest/remote/http_client.go): `releases` → version →
 * tarball name → `{hash, selfLink}`, the hash being the hex SHA-512 of the `.tar.gz`.
 */

export interface EnvtestArchive {
  /** `v1.36.2` */
  version: string;
  /** `envtest-v1.36.2-linux-amd64.tar.gz` */
  name: string;
  /** Hex SHA-512 of the tarball. */
  hash: string;
  selfLink: string;
}

export type EnvtestIndex = Map<string, Map<string, { hash: string; selfLink: string }>>;

export function parseEnvtestIndex(text: string, where: string): EnvtestIndex {
  const doc = parse(text) as {
    releases?: Record<string, Record<string, { hash?: unknown; selfLink?: unknown }>>;
  } | null;
  if (!doc?.releases || typeof doc.releases !== "object") {
    throw new AssetsError(`${where} is not an envtest index: it has no \`releases:\` map`);
  }
  const index: EnvtestIndex = new Map();
  for (const [version, archives] of Object.entries(doc.releases)) {
    const entries = new Map<string, { hash: string; selfLink: string }>();
    for (const [name, archive] of Object.entries(archives ?? {})) {
      if (typeof archive?.hash !== "string" || typeof archive.selfLink !== "string") {
        throw new AssetsError(`${where}: ${version} → ${name} needs a hash and a selfLink`);
      }
      entries.set(name, { hash: archive.hash, selfLink: archive.selfLink });
    }
    index.set(version, entries);
  }
  return index;
}

/** `envtest-v1.36.2-linux-amd64.tar.gz`, as controller-tools names its release assets. */
export function envtestTarballName(version: string, os: string, arch: string): string {
  return `envtest-v${version.replace(/^v/, "")}-${os}-${arch}.tar.gz`;
}

/** Where controller-tools' release workflow uploads a tarball (its `envtest-v<ver>` GitHub release). */
export function envtestSelfLink(version: string, name: string): string {
  const tag = `envtest-v${version.replace(/^v/, "")}`;
  return `https://github.com/kubernetes-sigs/controller-tools/releases/download/${tag}/${name}`;
}

/**
 * The archive for `wanted` on `os/arch`, choosing as setup-envtest does: an exact version as given;
 * a minor (`1.36`) or nothing means the newest release of it that is not a pre-release.
 */
export function pickEnvtestRelease(
  index: EnvtestIndex,
  wanted: string | undefined,
  os: string,
  arch: string,
): EnvtestArchive {
  const exact = wanted && /^v?\d+\.\d+\.\d+(-.+)?$/.test(wanted) ? `v${wanted.replace(/^v/, "")}` : undefined;
  const minor = wanted && !exact ? /^v?(\d+\.\d+)$/.exec(wanted)?.[1] : undefined;
  if (wanted && !exact && !minor)
    throw new AssetsError(`"${wanted}" is not a Kubernetes version (write 1.36 or 1.36.2)`);
  const candidates = [...index.keys()]
    .filter((version) =>
      exact ? version === exact : !version.includes("-") && (!minor || version.startsWith(`v${minor}.`)),
    )
    .sort(compareSemver)
    .reverse();
  const version = candidates[0];
  if (!version) {
    const known = [...index.keys()].sort(compareSemver).join(", ");
    throw new AssetsError(
      `The envtest index has no release for ${wanted ?? "any version"}; it lists ${known}`,
    );
  }
  const name = envtestTarballName(version, os, arch);
  const archive = index.get(version)?.get(name);
  if (!archive) {
    const platforms = [...(index.get(version)?.keys() ?? [])].map((file) =>
      file.replace(/^envtest-v[^-]+-|\.tar\.gz$/g, ""),
    );
    throw new AssetsError(
      `envtest ${version} is not published for ${os}/${arch}; it is for ${platforms.join(", ")}`,
    );
  }
  return { version, name, ...archive };
}

function compareSemver(a: string, b: string): number {
  const parts = (v: string) =>
    v
      .replace(/^v/, "")
      .split(/[.-]/)
      .map((p) => Number.parseInt(p, 10) || 0);
  const [pa, pb] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return a.includes("-") === b.includes("-") ? a.localeCompare(b) : a.includes("-") ? -1 : 1;
}
