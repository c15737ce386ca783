import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

// The names layers share but users do not (each layer's internal.ts) are out of a user's reach:
// not on any entry point, and the package's `exports` refuse a deep import of the file.
const INTERNAL = {
  "kubeloop/client": ["apiErrorFor"],
  "kubeloop/resources": ["groupOf", "versionOf", "microTime"],
  "kubeloop/webhook": ["mapClientConfigs"],
  "kubeloop/testing": ["isProcessAlive"],
  "kubeloop/testing/assets": ["isProcessAlive", "isInstalled", "componentDirName", "quoteLog"],
  "kubeloop/testing/cluster": ["isProcessAlive"],
  "kubeloop/testing/faults": ["isProcessAlive"],
  "kubeloop/testing/servers": ["isProcessAlive"],
};

/** The entry points that took names from `kubeloop/testing` in 0.2 (its aliases of them go in 0.3). */
const MOVED_FROM_TESTING = [
  "kubeloop/testing/assets",
  "kubeloop/testing/cluster",
  "kubeloop/testing/faults",
  "kubeloop/testing/servers",
];

describe("entry points", () => {
  it.each(Object.entries(INTERNAL))("%s does not export its layer's internal names", async (entry, names) => {
    const exported = Object.keys(await import(entry));
    expect(exported.length).toBeGreaterThan(0);
    for (const name of names) expect(exported).not.toContain(name);
  });

  it("refuses a deep import of a layer's internal.ts", () => {
    // Node itself, as a user's program resolves (vitest's resolver is more lenient).
    for (const layer of ["client", "resources", "webhook", "testing", "testing/assets"]) {
      const run = spawnSync(
        process.execPath,
        ["--input-type=module", "-e", `await import("kubeloop/dist/${layer}/internal.js")`],
        {
          encoding: "utf8",
        },
      );
      expect(run.status).not.toBe(0);
      expect(run.stderr).toContain("ERR_PACKAGE_PATH_NOT_EXPORTED");
    }
  });

  it("maps every export of package.json to a module that loads", async () => {
    const { exports } = (await import("kubeloop/package.json", { with: { type: "json" } })).default;
    const entries = Object.keys(exports)
      .filter((subpath) => subpath !== "./package.json")
      .map((subpath) => (subpath === "." ? "kubeloop" : `kubeloop/${subpath.slice(2)}`));
    expect(entries).toEqual(expect.arrayContaining(MOVED_FROM_TESTING));
    for (const entry of entries) expect(Object.keys(await import(entry)).length, entry).toBeGreaterThan(0);
  });

  it.each(MOVED_FROM_TESTING)("kubeloop/testing's deprecated aliases are %s's own values", async (entry) => {
    const testing: Record<string, unknown> = await import("kubeloop/testing");
    const moved: Record<string, unknown> = await import(entry);
    const aliased = Object.keys(moved).filter((name) => name in testing);
    expect(aliased.length).toBeGreaterThan(0);
    // The same class, not a copy: a PostgresServerError caught by either import is the same kind.
    for (const name of aliased) expect(testing[name], name).toBe(moved[name]);
  });

  it("keeps the moved entry points apart: no name is exported by two of them", async () => {
    const seen = new Map<string, string>();
    for (const entry of MOVED_FROM_TESTING) {
      for (const name of Object.keys(await import(entry))) {
        expect(seen.get(name), `${name} in ${entry}`).toBeUndefined();
        seen.set(name, entry);
      }
    }
  });

  it("the repository imports no deprecated alias of kubeloop/testing: each moved name from its new entry point", () => {
    const repository = join(import.meta.dirname, "../../..");
    const moved = new Set(
      [
        ...readFileSync(join(import.meta.dirname, "testing/moved.ts"), "utf8").matchAll(
          /^export (?:const|type) (\w+)/gm,
        ),
      ].map((match) => match[1]),
    );
    expect(moved.size).toBeGreaterThan(0);
    const importOfTesting =
      /import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*["'](?:kubeloop\/testing|[./]*testing\/index\.js)["']/g;
    const offenders: string[] = [];
    for (const file of sources(repository)) {
      for (const match of readFileSync(file, "utf8").matchAll(importOfTesting)) {
        const names = (match[1] ?? "")
          .split(",")
          .map((name) => name.replace(/^\s*(type\s+)?|\s+as\s+.*$/gs, "").trim());
        for (const name of names)
          if (moved.has(name)) offenders.push(`${relative(repository, file)}: ${name}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

/** The code and docs of the workspace that import kubeloop (the migration's "before" in docs/releases.md aside). */
function sources(repository: string): string[] {
  const skip = new Set(["node_modules", "dist", ".git", "cache", ".kubeloop", "api"]);
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (skip.has(entry.name)) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|mts|mjs|md)$/.test(entry.name) && !path.endsWith("docs/releases.md")) files.push(path);
    }
  };
  for (const top of ["examples", "bench", "docs", "scripts", "packages", "README.md"]) {
    const path = join(repository, top);
    if (top.endsWith(".md")) files.push(path);
    else walk(path);
  }
  return files;
}
