import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { APP_DIR, type AppBuild, buildApp } from "./app.js";
import { LICENSES_FILE } from "./licenses.js";
import { lockRootOf } from "./lock-root.js";

// The licences an operator image carries: the nginx example's app layer (esbuild's bundle, as
// `kubeloop build` makes it, without the base and runtime layers), whose THIRD-PARTY-LICENSES.txt
// must hold, for every package the bundle took code from, its licence field and files.

const NGINX = join(import.meta.dirname, "../../../../../examples/nginx");
const lockRoot = lockRootOf(NGINX);
let app: AppBuild;
let text = "";

beforeAll(async () => {
  app = await buildApp(NGINX, join(NGINX, "src/main.ts"), lockRoot);
  const entry = app.files.find((file) => file.path === `${APP_DIR}/${LICENSES_FILE}`);
  text = Buffer.from(entry?.data ?? []).toString("utf8");
}, 120_000);

describe("the image's third-party licences", () => {
  it("are in the app layer, the same text `kubeloop build` writes beside the SBOM", () => {
    expect(text.length).toBeGreaterThan(0);
    expect(text).toBe(app.licenses);
  });

  it("name every bundled package with its licence field, and hold the text of each of its licence files", () => {
    const packages = [...app.bundled, ...app.external];
    expect(packages.map((p) => p.name)).toEqual(expect.arrayContaining(["kubeloop", "typebox", "yaml"]));
    for (const pkg of packages) {
      expect(text).toContain(`${pkg.name}@${pkg.version} (license: ${pkg.license ?? "NOASSERTION"})`);
      const dir = join(lockRoot, pkg.path);
      const files = readdirSync(dir).filter((f) => /^(LICEN[CS]E|COPYING|NOTICE)([.-].*)?$/i.test(f));
      for (const file of files) expect(text).toContain(readFileSync(join(dir, file), "utf8").trimEnd());
    }
    // kubeloop's own: Apache-2.0, with its LICENSE.
    expect(existsSync(join(lockRoot, "packages/kubeloop/LICENSE"))).toBe(true);
    expect(text).toMatch(/kubeloop@[^ ]+ \(license: Apache-2\.0\)\n=+\n--- LICENSE\n\n\s+Apache License/);
  });

  it("leave out what is not in the image: no devDependency's licence", () => {
    for (const name of ["vitest", "typescript", "@biomejs/biome", "esbuild"]) {
      expect(text).not.toMatch(new RegExp(`^${name.replace("/", "\\/")}@`, "m"));
    }
  });
});
