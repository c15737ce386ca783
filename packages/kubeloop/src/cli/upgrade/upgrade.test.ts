import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NpmRegistry, packAt, startNpmRegistry } from "../../../test/npm-registry.js";
import { developerShell } from "../../../test/shell.js";
import { KUBELOOP_VERSION } from "../scaffold/versions.js";

// `kubeloop upgrade` across two real scaffold versions, both published to an npm registry on
// loopback (verdaccio): "old" is this kubeloop; "new" is a copy of it with a bumped version and a
// changed scaffold (a line added to .gitignore, the README's first sentence, vitest's timeout, a new
// .editorconfig) and a changed `generate` (the Deployment's grace period). A project made by the old
// one, with a kind and its owner's edits, committed in git, is upgraded by the new one's CLI.

const packageDir = join(import.meta.dirname, "../../..");
const workspaceModules = join(packageDir, "../../node_modules");
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-upgrade-test-"));
const project = join(tmp, "demo-operator");
const stamp = Date.now();
const OLD = `${KUBELOOP_VERSION}-upgrade.${stamp}`;
const NEW = `${KUBELOOP_VERSION.replace(/^(\d+)\.(\d+)\..*$/, (_, major, minor) => `${major}.${Number(minor) + 1}.0`)}-upgrade.${stamp}`;
let registry: NpmRegistry | undefined;
let env: Record<string, string> = {};

/** A copy of the built package at `version`, runnable in place (its node_modules: the workspace's). */
function packageCopy(version: string, edit: (dir: string) => void = () => {}): string {
  const dir = join(tmp, `kubeloop-${version}`);
  for (const path of ["bin", "dist", "package.json", "README.md", "LICENSE"]) {
    cpSync(join(packageDir, path), join(dir, path), { recursive: true });
  }
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ ...manifest, version }, null, 2)}\n`);
  edit(dir);
  symlinkSync(workspaceModules, join(dir, "node_modules"));
  return dir;
}

/** Replaces `from` (which must be there) with `to` in a file of the copy. */
function change(file: string, from: string, to: string): void {
  const text = readFileSync(file, "utf8");
  if (!text.includes(from)) throw new Error(`${file} has no ${JSON.stringify(from)}`);
  writeFileSync(file, text.replace(from, to));
}

function sh(command: string, args: string[], cwd = project) {
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8", timeout: 600_000 });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

const read = (path: string) => readFileSync(join(project, path), "utf8");
let newCli = "";

beforeAll(async () => {
  registry = await startNpmRegistry(tmp);
  env = developerShell({
    npm_config_userconfig: registry.userconfig,
    npm_config_prefer_offline: "true",
    GIT_AUTHOR_NAME: "dev",
    GIT_AUTHOR_EMAIL: "dev@example.com",
    GIT_COMMITTER_NAME: "dev",
    GIT_COMMITTER_EMAIL: "dev@example.com",
  });
  const old = packageCopy(OLD);
  const next = packageCopy(NEW, (dir) => {
    const scaffold = join(dir, "dist/cli/scaffold/project.js");
    change(scaffold, "\n*.log\n", "\n*.log\n# test coverage reports\ncoverage/\n");
    change(scaffold, "testTimeout: 60_000", "testTimeout: 90_000");
    change(scaffold, "A Kubernetes operator built with", "A Kubernetes operator made with");
    change(
      scaffold,
      '["tsconfig.json", TSCONFIG],',
      '["tsconfig.json", TSCONFIG], [".editorconfig", "root = true\\n"],',
    );
    change(
      join(dir, "dist/cli/manifests.js"),
      "terminationGracePeriodSeconds: 40",
      "terminationGracePeriodSeconds: 45",
    );
  });
  newCli = join(next, "bin/kubeloop.js");
  registry.publish(packAt(old, tmp, OLD));
  registry.publish(packAt(next, tmp, NEW));
  // The project, made by the old kubeloop (installed from the registry), with a kind, in git.
  const init = sh(process.execPath, [join(old, "bin/kubeloop.js"), "init", "demo-operator"], tmp);
  expect(init.code, init.output).toBe(0);
  const api = sh("node_modules/.bin/kubeloop", [
    "create",
    "api",
    "--group",
    "ship",
    "--version",
    "v1",
    "--kind",
    "Widget",
  ]);
  expect(api.code, api.output).toBe(0);
  for (const args of [
    ["init", "-q", "-b", "main"],
    ["add", "-A"],
    ["commit", "-q", "-m", "made by kubeloop"],
  ]) {
    expect(sh("git", args).code).toBe(0);
  }
  // Its owner's edits: one beside the new scaffold's change, one on the same line, one elsewhere.
  appendFileSync(join(project, ".gitignore"), "dist/\n");
  change(
    join(project, "README.md"),
    "A Kubernetes operator built with",
    "A Kubernetes operator for widgets, built with",
  );
  appendFileSync(join(project, "src/controllers/widget.ts"), "// our reconcile\n");
  for (const args of [
    ["add", "-A"],
    ["commit", "-q", "-m", "our edits"],
  ])
    expect(sh("git", args).code).toBe(0);
}, 600_000);

afterAll(async () => {
  await registry?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe("kubeloop upgrade", () => {
  it("refuses a tree with uncommitted changes, naming them, and changes nothing", () => {
    appendFileSync(join(project, "src/main.ts"), "// not committed\n");
    const upgrade = sh(process.execPath, [newCli, "upgrade"]);
    expect(upgrade.code).toBe(1);
    expect(upgrade.output).toContain("the project has uncommitted changes:\n   M src/main.ts");
    expect(upgrade.output).toContain("Commit or stash them first");
    expect(sh("git", ["branch", "--show-current"]).output.trim()).toBe("main");
    expect(sh("git", ["checkout", "--", "src/main.ts"]).code).toBe(0);
  });

  it("merges the new scaffold on a branch: edits apart merge cleanly, edits of the same line are marked", () => {
    const upgrade = sh(process.execPath, [newCli, "upgrade"]);
    expect(upgrade.code, upgrade.output).toBe(1); // one conflict
    expect(upgrade.output).toContain("added      .editorconfig");
    expect(upgrade.output).toContain("merged     .gitignore");
    expect(upgrade.output).toContain("merged     vitest.config.ts");
    expect(upgrade.output).toContain("merged     package.json");
    expect(upgrade.output).toContain("CONFLICT   README.md");
    expect(upgrade.output).toContain("1 file(s) have conflicts");
    expect(sh("git", ["branch", "--show-current"]).output.trim()).toBe(`kubeloop-upgrade-${NEW}`);
    expect(read(".gitignore")).toContain("*.log\n# test coverage reports\ncoverage/\n");
    expect(read(".gitignore")).toMatch(/dist\/\n$/);
    expect(read(".gitignore")).not.toContain("<<<<<<<");
    expect(read("vitest.config.ts")).toContain("testTimeout: 90_000");
    expect(read(".editorconfig")).toBe("root = true\n");
    expect(read("src/controllers/widget.ts")).toMatch(/\/\/ our reconcile\n$/);
    const readme = read("README.md");
    expect(readme).toContain("<<<<<<< yours\nA Kubernetes operator for widgets, built with");
    expect(readme).toContain(`=======\nA Kubernetes operator made with`);
    expect(readme).toContain(`>>>>>>> kubeloop ${NEW}`);
    const json = JSON.parse(read("package.json")) as {
      dependencies: Record<string, string>;
      kubeloop: { scaffold: { version: string; apis: object[] } };
    };
    expect(json.dependencies.kubeloop).toBe(`^${NEW}`);
    expect(json.kubeloop.scaffold.version).toBe(NEW);
    expect(json.kubeloop.scaffold.apis).toHaveLength(1);
  }, 600_000);

  it("regenerates kubeloop generate's output with the new kubeloop instead of merging it", () => {
    expect(JSON.parse(read("node_modules/kubeloop/package.json")).version).toBe(NEW);
    const manager = readdirSync(join(project, "config/manager")).map((f) => read(`config/manager/${f}`));
    expect(manager.join("\n")).toContain("terminationGracePeriodSeconds: 45");
    const check = sh("node_modules/.bin/kubeloop", ["generate", "--check"]);
    expect(check.code, check.output).toBe(0);
  });

  it("keeps the project's own tests green: it type-checks, config/ is current, its kind reconciles", () => {
    const build = sh("npm", ["run", "build"]);
    expect(build.code, build.output).toBe(0);
    const test = sh("npx", ["vitest", "run", "test/config.test.ts", "test/widget.test.ts"]);
    expect(test.code, test.output).toBe(0);
    expect(test.output).toMatch(/Tests\s+\d+ passed/);
    expect(test.output).not.toMatch(/failed|skipped/);
  }, 300_000);
});
