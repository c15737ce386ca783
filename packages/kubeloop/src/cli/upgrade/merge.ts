import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CliError } from "../errors.js";

/** What the merge did to each file of the project. */
export interface MergeResult {
  /** New in the new scaffold, written. */
  added: string[];
  /** Changed by the new scaffold and merged cleanly with the project's version. */
  updated: string[];
  /** Gone from the new scaffold and untouched in the project: deleted. */
  deleted: string[];
  /** Merged with conflicts: the file holds git's conflict markers. */
  conflicted: string[];
  /** Left alone, with why. */
  kept: { path: string; why: string }[];
}

/**
 * A 3-way merge of the scaffold's change (`base` → `next`) into the project at `root`, file by file
 * with `git merge-file`: the project's own edits stay, the scaffold's land where they do not touch
 * the same lines, and where both changed the same lines the file gets conflict markers.
 */
export function mergeScaffold(
  root: string,
  base: Map<string, string>,
  next: Map<string, string>,
  labels: { base: string; next: string },
  scratch: string,
): MergeResult {
  const result: MergeResult = { added: [], updated: [], deleted: [], conflicted: [], kept: [] };
  for (const path of [...new Set([...base.keys(), ...next.keys()])].sort()) {
    const [before, after] = [base.get(path), next.get(path)];
    if (before === after) continue;
    const file = join(root, path);
    const mine = existsSync(file) ? readFileSync(file, "utf8") : undefined;
    if (after === undefined) {
      if (mine === before) {
        rmSync(file);
        result.deleted.push(path);
      } else if (mine !== undefined) {
        result.kept.push({ path, why: `${labels.next} no longer writes it, and you changed it` });
      }
      continue;
    }
    if (mine === undefined) {
      if (before === undefined) {
        write(file, after);
        result.added.push(path);
      } else {
        result.kept.push({ path, why: `you deleted it; ${labels.next} changes it` });
      }
      continue;
    }
    if (mine === after) continue;
    const merged = mergeFile(mine, before ?? "", after, labels, scratch);
    write(file, merged.text);
    (merged.conflicts ? result.conflicted : result.updated).push(path);
  }
  return result;
}

function write(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

function mergeFile(
  mine: string,
  base: string,
  next: string,
  labels: { base: string; next: string },
  scratch: string,
): { text: string; conflicts: boolean } {
  const [a, b, c] = ["yours", "base", "next"].map((name) => join(scratch, `merge-${name}`)) as [
    string,
    string,
    string,
  ];
  writeFileSync(a, mine);
  writeFileSync(b, base);
  writeFileSync(c, next);
  const result = spawnSync(
    "git",
    ["merge-file", "-p", "-L", "yours", "-L", labels.base, "-L", labels.next, a, b, c],
    { encoding: "utf8" },
  );
  // git merge-file exits with the number of conflicts, or a negative number (255 and up) on error.
  if (result.error || result.status === null || result.status > 127) {
    throw new CliError(
      `git merge-file failed (kubeloop upgrade needs git on the PATH): ${result.error?.message ?? result.stderr}`,
    );
  }
  return { text: result.stdout, conflicts: result.status > 0 };
}
