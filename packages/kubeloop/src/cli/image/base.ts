import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { CliError } from "../errors.js";
import { tool } from "./cache.js";
import { NONROOT, type Platform } from "./oci.js";
import { readTar, type TarEntry } from "./tar.js";

/**
 * The base of an image, made here from Debian's packages instead of pulled from a registry: what a
 * Node binary needs to start (glibc, libstdc++, libgcc), CA certificates and time zones, a
 * `nonroot` user and a writable /tmp — distroless's `cc` image, without its registry. No shell,
 * no package manager, no coreutils: an attacker in the container finds nothing to run.
 *
 * The .deb files are fetched with `apt-get download` (the machine's apt sources; for arm64 the
 * foreign architecture must be enabled: done here when running as root, otherwise the error says
 * which commands to run) and kept in the cache: the base only changes when the cache is cleared, so
 * rebuilds give the same digest.
 */

/** The packages whose files the base holds. Architecture-independent ones go into their own layer. */
export const ARCH_PACKAGES = ["libc6", "libgcc-s1", "libstdc++6"] as const;
export const COMMON_PACKAGES = ["ca-certificates", "tzdata"] as const;

const DEBIAN_ARCH = { amd64: "amd64", arm64: "arm64" } as const;

/** What Node never uses at run time: documentation, tools that need a shell, iconv's modules. */
const DOCUMENTATION = /^usr\/share\/(doc|man|info|lintian|locale|bug|doc-base)\//;
const DROPPED = [
  DOCUMENTATION,
  /^(usr\/)?s?bin\//,
  /^usr\/libexec\//,
  /^usr\/lib\/[^/]+\/gconv\//,
  /^usr\/share\/ca-certificates\//,
  /^etc\/ca-certificates\//,
];

export interface DebianPackage {
  name: string;
  version: string;
  architecture: string;
  /** The .deb's file name in the cache. */
  file: string;
}

/** The .deb files of `packages` for one architecture (`all` for the common ones), downloaded when missing. */
export async function debianPackages(
  packages: readonly string[],
  architecture: Platform["architecture"] | "all",
  cache: string,
): Promise<DebianPackage[]> {
  const dir = join(cache, "debian", architecture);
  mkdirSync(dir, { recursive: true });
  const found = () =>
    packages.map((name) => ({ name, file: readdirSync(dir).find((f) => f.startsWith(`${name}_`)) }));
  const missing = found().filter((p) => !p.file);
  if (missing.length > 0) {
    const specs = missing.map((p) =>
      architecture === "all" ? p.name : `${p.name}:${DEBIAN_ARCH[architecture]}`,
    );
    if (architecture !== "all" && !(await archEnabled(architecture))) await enableArch(architecture);
    const download = () =>
      tool("apt-get", ["download", "-q", ...specs], {
        cwd: dir,
        hint: "The image's base is made from Debian packages: run on a Debian or Ubuntu machine whose apt sources are reachable.",
      });
    await download().catch(async (error: Error) => {
      // The architecture can be enabled while apt has no lists for it yet (enabled by another
      // process whose `apt-get update` has not finished, or failed): update once and try again.
      if (!/Unable to locate package/.test(error.message) || process.getuid?.() !== 0) throw error;
      await tool("apt-get", ["update", "-q"]);
      await download();
    });
  }
  return found().map(({ name, file }) => {
    const match = file ? /^[^_]+_([^_]+)_([^_]+)\.deb$/.exec(file) : null;
    if (!file || !match) throw new CliError(`apt-get download left no .deb for ${name} in ${dir}`);
    return {
      name,
      version: decodeURIComponent(match[1] ?? ""),
      architecture: match[2] ?? "",
      file: join(dir, file),
    };
  });
}

async function archEnabled(architecture: Platform["architecture"]): Promise<boolean> {
  const { stdout } = await tool("dpkg", ["--print-architecture"]);
  const foreign = await tool("dpkg", ["--print-foreign-architectures"]);
  const enabled = `${stdout}\n${foreign.stdout}`.split(/\s+/);
  return enabled.includes(DEBIAN_ARCH[architecture]);
}

async function enableArch(architecture: Platform["architecture"]): Promise<void> {
  const arch = DEBIAN_ARCH[architecture];
  if (process.getuid?.() !== 0) {
    throw new CliError(
      `apt cannot download ${arch} packages yet (the base of the ${arch} image is made from them). As root, run:\n` +
        `  dpkg --add-architecture ${arch} && apt-get update\n` +
        "then build again (or pass --platform linux/amd64 for an amd64-only image).",
    );
  }
  await tool("dpkg", ["--add-architecture", arch]);
  await tool("apt-get", ["update", "-q"]);
}

/** A Debian package name, as apt takes it (nothing an option or a shell could read otherwise). */
const PACKAGE_NAME = /^[a-z0-9][a-z0-9+.-]+$/;

/**
 * What an operator asks for beside the base (package.json's `kubeloop.imagePackages`, e.g.
 * `postgresql-client-15` for pg_dump): the packages named, and the shared libraries they need,
 * found by `apt-cache depends --recurse`. Only library packages (`lib*`, `zlib1g`) are followed:
 * the programs and interpreters a package's scripts or wrappers want (perl, dpkg, tar) would bring
 * a shell world back into an image that has none, and an ELF program needs only its libraries.
 * What the base holds is left out. Sorted, so the layer is the same for the same apt sources.
 */
export async function packageClosure(
  packages: readonly string[],
  architecture: Platform["architecture"],
): Promise<string[]> {
  const invalid = packages.filter((name) => !PACKAGE_NAME.test(name));
  if (invalid.length > 0)
    throw new CliError(
      `not a Debian package name: ${invalid.join(", ")} (kubeloop.imagePackages in package.json)`,
    );
  if (packages.length === 0) return [];
  const arch = DEBIAN_ARCH[architecture];
  const { stdout } = await tool(
    "apt-cache",
    [
      "depends",
      "--recurse",
      "--no-recommends",
      "--no-suggests",
      "--no-conflicts",
      "--no-breaks",
      "--no-replaces",
      "--no-enhances",
      ...packages.map((name) => `${name}:${arch}`),
    ],
    {
      hint: "The image's packages come from Debian: run on a Debian or Ubuntu machine whose apt sources are reachable.",
    },
  );
  const base = new Set<string>([...ARCH_PACKAGES, ...COMMON_PACKAGES, "gcc-12-base"]);
  const names = new Set<string>(packages);
  for (const line of String(stdout).split("\n")) {
    // Package lines start at the margin; `<virtual>` ones name no package of their own.
    if (!line || line.startsWith(" ") || line.startsWith("<")) continue;
    const [name, qualifier] = line.trim().split(":");
    if (!name || (qualifier && qualifier !== arch)) continue;
    if (/^(lib|zlib1g$)/.test(name) && !base.has(name)) names.add(name);
  }
  return [...names].sort();
}

/** The files of packages asked for: everything but documentation (their programs are why they are there). */
export function keptExtra(entries: readonly TarEntry[]): TarEntry[] {
  return entries.filter((entry) => !DOCUMENTATION.test(entry.path));
}

/** Every file of a .deb (`dpkg-deb --fsys-tarfile`), owned by root. */
export async function debEntries(deb: DebianPackage): Promise<TarEntry[]> {
  const { stdout } = await tool("dpkg-deb", ["--fsys-tarfile", deb.file], { maxBuffer: 512 * 1024 * 1024 });
  return readTar(stdout)
    .filter((entry) => entry.type !== "dir")
    .map((entry) => ({ ...entry, uid: 0, gid: 0 }));
}

/** The files of a .deb the image keeps (no docs, tools or iconv modules). */
export function kept(entries: readonly TarEntry[]): TarEntry[] {
  return entries.filter((entry) => !DROPPED.some((pattern) => pattern.test(entry.path)));
}

/**
 * The files no package provides: the users and groups (root and nonroot, 65532, as distroless),
 * nonroot's home, a world-writable /tmp, the CA bundle update-ca-certificates would have made
 * (every Mozilla certificate among `certificates`, the ca-certificates package's files,
 * concatenated in name order), UTC as local time.
 */
export function baseFiles(certificates: readonly TarEntry[]): TarEntry[] {
  const text = (path: string, content: string, mode = 0o644): TarEntry => ({
    path,
    type: "file",
    mode,
    data: Buffer.from(content),
  });
  const bundle = certificates
    .filter(
      (entry) => entry.type === "file" && /^usr\/share\/ca-certificates\/mozilla\/.+\.crt$/.test(entry.path),
    )
    .sort((a, b) => (a.path < b.path ? -1 : 1))
    .map((entry) => {
      const pem = Buffer.from(entry.data ?? []).toString();
      return pem.endsWith("\n") ? pem : `${pem}\n`;
    })
    .join("");
  return [
    text(
      "etc/passwd",
      `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${NONROOT}:${NONROOT}:nonroot:/home/nonroot:/sbin/nologin\n`,
    ),
    text("etc/group", `root:x:0:\nnonroot:x:${NONROOT}:\n`),
    text("etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n"),
    text("etc/ssl/certs/ca-certificates.crt", bundle),
    text("etc/timezone", "Etc/UTC\n"),
    { path: "etc/localtime", type: "symlink", mode: 0o777, target: "/usr/share/zoneinfo/Etc/UTC" },
    { path: "root", type: "dir", mode: 0o700 },
    { path: "home/nonroot", type: "dir", mode: 0o700, uid: NONROOT, gid: NONROOT },
    { path: "tmp", type: "dir", mode: 0o1777 },
  ];
}
