import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll } from "vitest";

// What the tests of `kubeloop generate` and its kin share: a throwaway project, the built CLI run
// in it, and the resource module such a project declares.

/** The built package (`npm run build`): the CLI and the modules a test project imports. */
export const DIST = join(import.meta.dirname, "../dist");
export const CLI = join(DIST, "cli/main.js");

/**
 * A fresh project folder, removed after the test file. It lies in the workspace's
 * node_modules/.cache, so that the project's `import "typebox"` resolves.
 */
export function cachedProjectDir(name: string): string {
  const cache = join(import.meta.dirname, "../../../node_modules/.cache");
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, `kubeloop-${name}-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `kubeloop` CLI in `cwd` and waits for it. */
export function runCli(cwd: string, args: string[]): CliResult {
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8" });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * The source of a resource module: `Type` and `defineResource` imported (the latter from `from`,
 * "kubeloop/resources" or by default the built package), then `definitions`.
 */
export function resourceModule(definitions: string, from = join(DIST, "resources/index.js")): string {
  return `import Type from "typebox";
import { defineResource } from ${JSON.stringify(from)};
${definitions}`;
}

/**
 * The source of a module defining `kind` (in `group`, v1) with an integer `spec.size` and a
 * boolean `status.ready`, every part described, as OLM bundles and `kubeloop check` want.
 * `defineResource` is imported from `from`: "kubeloop/resources", or a path into dist.
 */
export function describedResourceModule(
  from: string,
  group: string,
  kind: string,
  description: string,
): string {
  return resourceModule(
    `export const ${kind} = defineResource({
  group: ${JSON.stringify(group)}, version: "v1", kind: ${JSON.stringify(kind)}, description: ${JSON.stringify(description)},
  spec: Type.Object({ size: Type.Integer({ description: "How big." }) }, { description: "Wanted." }),
  status: Type.Object({ ready: Type.Optional(Type.Boolean({ description: "Ready." })) }, { description: "Seen." }),
});
`,
    from,
  );
}
