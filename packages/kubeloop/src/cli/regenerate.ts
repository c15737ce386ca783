import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CliError } from "./errors.js";

/** This CLI's entry point, to run a subcommand in a fresh process. */
export const CLI_MAIN = fileURLToPath(new URL("./main.js", import.meta.url));

/**
 * Whether the project's modules can import kubeloop: resolved as Node resolves it from the
 * project's folder, walking up its node_modules — so a project in an npm workspace, whose
 * kubeloop is hoisted to the workspace root, counts as installed.
 */
export function kubeloopResolvesFrom(root: string): boolean {
  try {
    createRequire(join(root, "package.json")).resolve("kubeloop/package.json");
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `kubeloop generate` in the project, in a process of its own: it imports the project's
 * modules, which must resolve from the project's node_modules and be read fresh each time.
 * Throws with generate's own message when it fails.
 */
export function regenerate(root: string, options: { check?: boolean; quiet?: boolean } = {}): void {
  if (!kubeloopResolvesFrom(root)) {
    throw new CliError(
      `kubeloop is not installed in ${root}: run \`npm install\` there first (the project's modules import it)`,
    );
  }
  const args = [CLI_MAIN, "generate", ...(options.check ? ["--check"] : [])];
  const result = spawnSync(process.execPath, args, {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", options.quiet ? "pipe" : "inherit", "pipe"],
  });
  if (result.status !== 0) {
    throw new CliError(
      `\`kubeloop generate\` failed in ${root}:\n${(result.stderr ?? "").replace(/^kubeloop: /, "").trim()}`,
    );
  }
}
