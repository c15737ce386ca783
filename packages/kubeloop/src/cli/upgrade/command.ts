import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CliError } from "../errors.js";
import { loadProject } from "../project.js";
import { CLI_MAIN } from "../regenerate.js";
import { readRecord } from "../scaffold/record.js";
import { KUBELOOP_VERSION } from "../scaffold/versions.js";
import { type MergeResult, mergeScaffold } from "./merge.js";
import { installKubeloop, renderScaffold } from "./render.js";

/**
 * `kubeloop upgrade`: takes a newer kubeloop's scaffold into a project made by an older one. The
 * scaffold of the version that made the project (from package.json's "kubeloop.scaffold") and that
 * of the new version are made again in temporary folders; their difference is merged into the
 * project file by file (merge.ts); then npm installs the new kubeloop and `kubeloop generate`
 * writes config/, the chart and the bundle afresh — generated files are never merged.
 * In a git repository it refuses uncommitted changes and works on a new branch.
 */

const USAGE = `Usage:
  kubeloop upgrade [--to VERSION] [--skip-install]

  Merges the change between the scaffold of the kubeloop version that made this project and that of
  VERSION (default: this kubeloop, ${KUBELOOP_VERSION}) into the project, with a 3-way merge: your edits
  stay; where you and kubeloop changed the same lines, the file gets conflict markers and is listed.
  In a git repository it needs a clean tree and works on a new branch, kubeloop-upgrade-VERSION,
  committed when nothing conflicts. Then npm install and \`kubeloop generate\` (regenerated, not merged).

  --to            the kubeloop version to take the scaffold of (fetched with npm when not this one)
  --skip-install  merge only; run \`npm install && npm run generate\` yourself`;

export async function upgradeCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      to: { type: "string" },
      "skip-install": { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const { root } = loadProject();
  const record = readRecord(root);
  const to = values.to ?? KUBELOOP_VERSION;
  if (record.version === to) {
    console.log(`${root} has the scaffold of kubeloop ${to} already: nothing to upgrade.`);
    return 0;
  }
  const repository = isRepository(root);
  if (repository) refuseDirty(root);
  else console.log("Not a git repository: merging in place (commit the project first to review the change).");
  const scratch = mkdtempSync(join(tmpdir(), "kubeloop-upgrade-"));
  try {
    const labels = { base: `kubeloop ${record.version}`, next: `kubeloop ${to}` };
    console.log(`Making the scaffold of ${labels.base} and of ${labels.next} …`);
    const render = (version: string) => {
      const dir = join(scratch, version);
      mkdirSync(join(dir, "cli"), { recursive: true });
      const cli = version === KUBELOOP_VERSION ? CLI_MAIN : installKubeloop(version, join(dir, "cli"), root);
      return renderScaffold(cli, record, version, dir);
    };
    const [base, next] = [render(record.version), render(to)];
    const branch = `kubeloop-upgrade-${to}`;
    if (repository) git(root, ["checkout", "-b", branch]);
    const merged = mergeScaffold(root, base, next, labels, scratch);
    report(merged);
    const regenerated = afterMerge(root, merged, values["skip-install"]);
    if (repository && merged.conflicted.length === 0 && regenerated) {
      git(root, ["add", "-A"]);
      git(root, ["commit", "-q", "-m", `Upgrade the kubeloop scaffold from ${record.version} to ${to}`]);
      console.log(`\nCommitted on the branch ${branch}: review it (git diff HEAD~1), then merge it.`);
    } else if (repository) {
      console.log(`\nOn the branch ${branch}, not committed: finish the steps above, then commit.`);
    }
    return merged.conflicted.length > 0 ? 1 : 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function report(merged: MergeResult): void {
  const lines = [
    ...merged.added.map((path) => `  added      ${path}`),
    ...merged.updated.map((path) => `  merged     ${path}`),
    ...merged.deleted.map((path) => `  deleted    ${path}`),
    ...merged.conflicted.map((path) => `  CONFLICT   ${path}`),
    ...merged.kept.map(({ path, why }) => `  kept       ${path} (${why})`),
  ];
  console.log(
    lines.length > 0 ? `The scaffold's change:\n${lines.join("\n")}` : "The scaffold did not change.",
  );
  if (merged.conflicted.length > 0) {
    console.log(
      `\n${merged.conflicted.length} file(s) have conflicts (between <<<<<<< yours and >>>>>>>): ` +
        `edit them, then run npm install && npm run generate:\n  ${merged.conflicted.join("\n  ")}`,
    );
  }
}

/** npm install and `kubeloop generate` with the newly installed kubeloop; whether both ran. */
function afterMerge(root: string, merged: MergeResult, skipInstall: boolean): boolean {
  const blocking = merged.conflicted.filter((path) => path === "package.json" || /\.(ts|json)$/.test(path));
  if (skipInstall || blocking.length > 0) {
    if (blocking.length > 0) console.log(`\nNot regenerating while ${blocking.join(", ")} conflict.`);
    else console.log("\nNext: npm install && npm run generate");
    return false;
  }
  console.log("\nInstalling the new kubeloop (npm install) …");
  const install = spawnSync("npm", ["install", "--no-audit", "--no-fund"], { cwd: root, encoding: "utf8" });
  if (install.status !== 0) {
    throw new CliError(
      `npm install failed in ${root}; fix the cause, then npm run generate:\n${install.stderr}`,
    );
  }
  const manifest = join(root, "node_modules/kubeloop/package.json");
  const { version, bin } = JSON.parse(readFileSync(manifest, "utf8")) as {
    version: string;
    bin: { kubeloop: string };
  };
  console.log(`Regenerating config/, the chart and the bundle (kubeloop ${version} generate) …`);
  const generate = spawnSync(
    process.execPath,
    [join(root, "node_modules/kubeloop", bin.kubeloop), "generate"],
    {
      cwd: root,
      encoding: "utf8",
    },
  );
  if (generate.status !== 0) {
    throw new CliError(`kubeloop generate failed after the merge: ${generate.stderr.trim()}`);
  }
  return true;
}

function isRepository(root: string): boolean {
  if (!existsSync(join(root, ".git"))) {
    const inside = spawnSync("git", ["rev-parse", "--is-inside-work-tree"], { cwd: root, encoding: "utf8" });
    return inside.status === 0 && inside.stdout.trim() === "true";
  }
  return true;
}

function refuseDirty(root: string): void {
  const status = git(root, ["status", "--porcelain", "--untracked-files=all", "--", "."]);
  const changes = status.split("\n").filter(Boolean);
  if (changes.length === 0) return;
  const shown =
    changes.slice(0, 10).join("\n  ") + (changes.length > 10 ? `\n  … ${changes.length - 10} more` : "");
  throw new CliError(
    `the project has uncommitted changes:\n  ${shown}\nCommit or stash them first (git stash --include-untracked): ` +
      "the upgrade works on a branch of its own, so its changes can be reviewed apart from yours.",
  );
}

function git(cwd: string, args: string[]): string {
  const result = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (result.status !== 0) {
    throw new CliError(
      `git ${args.join(" ")} failed: ${(result.stderr || result.error?.message || "").trim()}`,
    );
  }
  return result.stdout;
}
