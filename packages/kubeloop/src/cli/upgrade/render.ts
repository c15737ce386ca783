import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { CliError } from "../errors.js";
import { replay, type ScaffoldRecord } from "../scaffold/record.js";

/**
 * The scaffold a kubeloop version makes for a project: its `init` and each of its `create api`,
 * replayed from the project's record by that version's own CLI in an empty folder, with nothing
 * installed (so nothing is generated: `kubeloop generate`'s output is made afresh after the merge).
 * Returns every file it wrote, by path relative to the project.
 */
export function renderScaffold(
  cli: string,
  record: ScaffoldRecord,
  version: string,
  dir: string,
): Map<string, string> {
  const project = join(dir, "project");
  const [init, ...apis] = replay(record, version, project);
  runCli(cli, init ?? [], dir);
  for (const args of apis) runCli(cli, args, project);
  return readTree(project);
}

function runCli(cli: string, args: string[], cwd: string): void {
  const result = spawnSync(process.execPath, [cli, ...args], { cwd, encoding: "utf8" });
  if (result.status !== 0) {
    throw new CliError(
      `making the scaffold again failed: kubeloop ${args.join(" ")}\n${result.stdout}${result.stderr}`.trim(),
    );
  }
}

/** Every file under `root` (no node_modules), by its path with `/` separators. */
export function readTree(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules") continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile())
        files.set(relative(root, path).split(sep).join("/"), readFileSync(path, "utf8"));
    }
  };
  walk(root);
  return files;
}

/**
 * The CLI of kubeloop `version`, installed with npm into `dir` from the registry npm is configured
 * with (the project's .npmrc included), to make the scaffold of the version that made the project.
 */
export function installKubeloop(version: string, dir: string, projectRoot: string): string {
  writeFileSync(join(dir, "package.json"), '{ "private": true }\n');
  if (existsSync(join(projectRoot, ".npmrc"))) copyFileSync(join(projectRoot, ".npmrc"), join(dir, ".npmrc"));
  const args = ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=dev", "--no-package-lock"];
  const result = spawnSync("npm", [...args, `kubeloop@${version}`], { cwd: dir, encoding: "utf8" });
  const manifest = join(dir, "node_modules/kubeloop/package.json");
  if (result.status !== 0 || !existsSync(manifest)) {
    throw new CliError(
      `npm could not install kubeloop@${version}, the version that made this project, to make its scaffold ` +
        `again (npm's registry must have it; see \`npm config get registry\`):\n${(result.stderr ?? "").trim().slice(-1500)}`,
    );
  }
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin: { kubeloop: string } };
  return join(dir, "node_modules/kubeloop", bin.kubeloop);
}
