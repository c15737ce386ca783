// A release in one command, everything but the final `npm publish` (a maintainer's, with their
// npm credentials):
//
//   npm run release -- --dry-run   in a temporary copy: prints the versions, the changelog entries,
//                                  the packed files and `npm publish --dry-run`, and the tag it would make
//   npm run release                the same in this tree, then a commit "Release X.Y.Z" and the tag vX.Y.Z
//
// The versions and changelogs come from the pending change notes (.changeset/*.md) through
// Changesets (`changeset version`, offline); kubeloop and create-kubeloop are released together at
// one version. The API reports become the new baseline of `npm run lint:changes`.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { checkChanges, readNotes } from "./changes.mjs";

const root = join(import.meta.dirname, "..");
const dryRun = process.argv.includes("--dry-run");
const PUBLISHED = ["packages/kubeloop", "packages/create-kubeloop"];

function sh(command, args, cwd, { quiet = false } = {}) {
  const result = spawnSync(command, args, { cwd, encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} (in ${cwd}) failed:\n${result.stdout}${result.stderr}`);
  }
  if (!quiet && result.stdout.trim()) console.log(result.stdout.trimEnd());
  return result.stdout;
}

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));

/** Every workspace folder (root package.json's globs, one level of `*`). */
function workspaces() {
  return readJson(join(root, "package.json")).workspaces.flatMap((pattern) =>
    pattern.endsWith("/*")
      ? readdirSync(join(root, pattern.slice(0, -2)))
          .map((name) => `${pattern.slice(0, -2)}/${name}`)
          .filter((dir) => existsSync(join(root, dir, "package.json")))
      : [pattern],
  );
}

/**
 * What Changesets and npm publish read, copied to a temporary folder: every workspace's
 * package.json and CHANGELOG.md, the notes, and the files each published package packs.
 */
function copyForDryRun() {
  const work = mkdtempSync(join(tmpdir(), "kubeloop-release-"));
  const copy = (path) => {
    if (!existsSync(join(root, path))) return;
    mkdirSync(dirname(join(work, path)), { recursive: true });
    cpSync(join(root, path), join(work, path), { recursive: true });
  };
  for (const path of ["package.json", "package-lock.json", ".changeset", "packages/kubeloop/api"]) copy(path);
  for (const dir of workspaces()) for (const file of ["package.json", "CHANGELOG.md"]) copy(`${dir}/${file}`);
  for (const dir of PUBLISHED) {
    const [{ files }] = JSON.parse(
      sh("npm", ["pack", "--dry-run", "--json"], join(root, dir), { quiet: true }),
    );
    for (const { path } of files) copy(`${dir}/${path}`);
  }
  return work;
}

/** The newest section of a CHANGELOG.md: from its first `## ` heading to the next. */
function newestEntry(file) {
  if (!existsSync(file)) return "(no CHANGELOG.md)";
  const text = readFileSync(file, "utf8");
  const start = text.indexOf("\n## ");
  if (start === -1) return "(empty)";
  const next = text.indexOf("\n## ", start + 1);
  return text.slice(start + 1, next === -1 ? undefined : next).trim();
}

function main() {
  const notes = readNotes(root);
  if (notes.length === 0) {
    console.log(
      "No pending change notes (.changeset/*.md): nothing to release. Add one with `npm run change`.",
    );
    return 0;
  }
  const problem = checkChanges(root);
  if (problem) throw new Error(problem);
  if (!dryRun) {
    const status = sh("git", ["status", "--porcelain"], root, { quiet: true });
    if (status.trim())
      throw new Error(`commit or stash these first, a release starts from a clean tree:\n${status}`);
  }
  const work = dryRun ? copyForDryRun() : root;
  try {
    console.log(`${dryRun ? "Dry run (in a temporary copy)" : "Releasing"}: ${notes.length} change note(s)`);
    sh(join(root, "node_modules/.bin/changeset"), ["version"], work, { quiet: true });
    const api = join(work, "packages/kubeloop/api");
    for (const report of readdirSync(api).filter((f) => f.endsWith(".api.md")))
      cpSync(join(api, report), join(api, "released", report));
    const versions = PUBLISHED.map((dir) => readJson(join(work, dir, "package.json")));
    for (const { name, version } of versions) console.log(`\n${name} → ${version}`);
    for (const dir of PUBLISHED) {
      const { name } = readJson(join(work, dir, "package.json"));
      console.log(`\n${name} CHANGELOG.md:\n${newestEntry(join(work, dir, "CHANGELOG.md"))}`);
    }
    for (const dir of PUBLISHED) {
      const [{ id, files }] = JSON.parse(
        sh("npm", ["pack", "--dry-run", "--json"], join(work, dir), { quiet: true }),
      );
      const top = new Map();
      for (const { path } of files) {
        const [first, ...rest] = path.split("/");
        const key = rest.length ? `${first}/` : first;
        top.set(key, (top.get(key) ?? 0) + 1);
      }
      const listed = [...top].sort().map(([path, n]) => (path.endsWith("/") ? `${path} (${n} files)` : path));
      console.log(`\n${id} packs ${files.length} files:\n  ${listed.join("\n  ")}`);
      sh("npm", ["publish", "--dry-run", "--tag", "latest"], join(work, dir), { quiet: true });
      console.log(`npm publish --dry-run ${id}: ok`);
    }
    const tag = `v${versions[0].version}`;
    if (dryRun) {
      console.log(
        `\nWould commit "Release ${versions[0].version}" and tag ${tag}; nothing was changed here.`,
      );
      return 0;
    }
    sh("npm", ["install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"], root, {
      quiet: true,
    });
    sh("git", ["add", "-A"], root, { quiet: true });
    sh("git", ["commit", "-m", `Release ${versions[0].version}`], root, { quiet: true });
    sh("git", ["tag", "-a", tag, "-m", `kubeloop ${versions[0].version}`], root, { quiet: true });
    console.log(
      `\nCommitted and tagged ${tag}. To publish: npm publish -w packages/kubeloop && ` +
        "npm publish -w packages/create-kubeloop && git push --follow-tags",
    );
    return 0;
  } finally {
    if (dryRun) rmSync(work, { recursive: true, force: true });
  }
}

try {
  process.exitCode = main();
} catch (error) {
  console.error(`release: ${error instanceof Error ? error.message : error}`);
  process.exitCode = 1;
}
