import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The licences of the third-party code an image holds, which most licences (MIT, ISC, BSD,
 * Apache-2.0's NOTICE) require to travel with it: for every npm package whose code is in the bundle
 * or shipped beside it (the packages the SBOM lists, from esbuild's metafile), its package.json
 * licence and the text of each LICENSE, LICENCE, COPYING and NOTICE file at its top, in one file.
 * The image holds it at /app/THIRD-PARTY-LICENSES.txt; `kubeloop build` also writes it beside the SBOM.
 */
export const LICENSES_FILE = "THIRD-PARTY-LICENSES.txt";

const LICENSE_FILE = /^(LICEN[CS]E|COPYING|NOTICE)([.-][^/]*)?$/i;
const RULE = "=".repeat(80);

export interface PackageLicense {
  name: string;
  version: string;
  /** package.json's `license` (an SPDX expression), or "NOASSERTION". */
  license: string;
  /** The package's licence and notice files, by name. */
  files: { name: string; text: string }[];
}

/** A package in the image (app.ts's BundledPackage): its folder relative to the lockfile's. */
interface ImagePackage {
  name: string;
  version: string;
  path: string;
  license?: string;
}

/** Each package's licence, once per name and version, sorted. */
export function packageLicenses(packages: readonly ImagePackage[], lockRoot: string): PackageLicense[] {
  const seen = new Map<string, PackageLicense>();
  for (const pkg of packages) {
    const key = `${pkg.name}@${pkg.version}`;
    if (seen.has(key)) continue;
    const dir = join(lockRoot, pkg.path);
    const names = existsSync(dir) ? readdirSync(dir).filter((name) => LICENSE_FILE.test(name)) : [];
    seen.set(key, {
      name: pkg.name,
      version: pkg.version,
      license: pkg.license ?? "NOASSERTION",
      files: names.sort().map((name) => ({ name, text: readFileSync(join(dir, name), "utf8").trimEnd() })),
    });
  }
  return [...seen.values()].sort((a, b) =>
    a.name === b.name ? (a.version < b.version ? -1 : 1) : a.name < b.name ? -1 : 1,
  );
}

/** The text of THIRD-PARTY-LICENSES.txt. */
export function licensesText(licenses: readonly PackageLicense[]): string {
  const sections = licenses.map(({ name, version, license, files }) =>
    [
      RULE,
      `${name}@${version} (license: ${license})`,
      RULE,
      ...(files.length > 0
        ? files.flatMap((file) => [`--- ${file.name}`, "", file.text, ""])
        : ["(the package holds no licence file; its package.json names the licence above)", ""]),
    ].join("\n"),
  );
  return [
    "Third-party software in this image, with the licence of each package, as the packages ship them.",
    "",
    ...sections,
  ].join("\n");
}
