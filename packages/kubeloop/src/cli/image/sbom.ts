import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { BundledPackage } from "./app.js";
import type { BuiltImage } from "./build.js";

/**
 * The image's software bill of materials, SPDX 2.3 JSON: every npm package whose code is in the
 * bundle or shipped beside it (name, version, licence, and the resolved URL and sha512 integrity
 * from package-lock.json), the Node runtime of each platform, and the Debian packages of the base.
 * Only what the image holds: a devDependency is in the lockfile but never here.
 */
export function spdxDocument(image: BuiltImage): object {
  const lock = readLock(image.lockRoot);
  const npm = [...image.app.bundled, ...image.app.external].sort((a, b) => (a.path < b.path ? -1 : 1));
  const seen = new Set<string>();
  const packages: object[] = [];
  const add = (spdxId: string, pkg: object) => {
    if (seen.has(spdxId)) return;
    seen.add(spdxId);
    packages.push({ SPDXID: spdxId, ...pkg });
  };
  for (const pkg of npm) add(`SPDXRef-npm-${id(pkg.path)}`, npmPackage(pkg, lock[pkg.path]));
  for (const runtime of image.runtimes) {
    add(`SPDXRef-node-${runtime.architecture}`, {
      name: "node",
      versionInfo: runtime.version,
      downloadLocation: `https://registry.npmjs.org/node-linux-${runtime.architecture === "amd64" ? "x64" : "arm64"}/-/node-linux-${runtime.architecture === "amd64" ? "x64" : "arm64"}-${runtime.version}.tgz`,
      licenseConcluded: "NOASSERTION",
      licenseDeclared: "MIT",
      copyrightText: "NOASSERTION",
      ...checksums(runtime.integrity),
      externalRefs: [purl(`pkg:generic/node@${runtime.version}?arch=${runtime.architecture}`)],
    });
  }
  for (const deb of image.debian) {
    add(`SPDXRef-deb-${id(`${deb.name}-${deb.architecture}`)}`, {
      name: deb.name,
      versionInfo: deb.version,
      downloadLocation: "NOASSERTION",
      licenseConcluded: "NOASSERTION",
      licenseDeclared: "NOASSERTION",
      copyrightText: "NOASSERTION",
      externalRefs: [
        purl(`pkg:deb/debian/${deb.name}@${encodeURIComponent(deb.version)}?arch=${deb.architecture}`),
      ],
    });
  }
  return {
    spdxVersion: "SPDX-2.3",
    dataLicense: "CC0-1.0",
    SPDXID: "SPDXRef-DOCUMENT",
    name: `${image.name}@${image.digest}`,
    documentNamespace: `https://spdx.org/spdxdocs/${encodeURIComponent(image.project.name)}-${image.digest.slice("sha256:".length)}`,
    // The build's inputs, not the clock: the same image gives the same SBOM.
    creationInfo: { created: "1970-01-01T00:00:00Z", creators: ["Tool: kubeloop build"] },
    packages,
    relationships: packages.map((p) => ({
      spdxElementId: "SPDXRef-DOCUMENT",
      relationshipType: "DESCRIBES",
      relatedSpdxElement: (p as { SPDXID: string }).SPDXID,
    })),
  };
}

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  license?: string;
}

function readLock(lockRoot: string): Record<string, LockEntry> {
  const file = join(lockRoot, "package-lock.json");
  if (!existsSync(file)) return {};
  return (JSON.parse(readFileSync(file, "utf8")) as { packages?: Record<string, LockEntry> }).packages ?? {};
}

function npmPackage(pkg: BundledPackage, lock: LockEntry | undefined): object {
  return {
    name: pkg.name,
    versionInfo: pkg.version,
    downloadLocation: downloadLocation(pkg, lock),
    licenseConcluded: "NOASSERTION",
    licenseDeclared: pkg.license ?? lock?.license ?? "NOASSERTION",
    copyrightText: "NOASSERTION",
    ...(lock?.integrity ? checksums(lock.integrity) : {}),
    externalRefs: [purl(`pkg:npm/${pkg.name.replace("@", "%40")}@${pkg.version}`)],
  };
}

/** The lockfile's `resolved`; npm leaves it out for registry packages, whose tarball URL is then npm's usual one. */
function downloadLocation(pkg: BundledPackage, lock: LockEntry | undefined): string {
  if (lock?.resolved?.startsWith("http")) return lock.resolved;
  if (!lock?.integrity) return "NOASSERTION";
  const base = pkg.name.split("/").pop() ?? pkg.name;
  return `https://registry.npmjs.org/${pkg.name}/-/${base}-${pkg.version}.tgz`;
}

function checksums(integrity: string): object {
  const match = /^sha512-(.+)$/.exec(integrity);
  if (!match?.[1]) return {};
  return {
    checksums: [{ algorithm: "SHA512", checksumValue: Buffer.from(match[1], "base64").toString("hex") }],
  };
}

function purl(locator: string): object {
  return { referenceCategory: "PACKAGE-MANAGER", referenceType: "purl", referenceLocator: locator };
}

function id(text: string): string {
  return text.replace(/[^A-Za-z0-9.-]+/g, "-");
}
