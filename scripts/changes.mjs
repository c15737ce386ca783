// Change notes (Changesets' files in .changeset/) and the check that the public API's change since
// the last release is covered by them. Plain files and no git: the same answer in a fresh clone with
// no tags and no network.
//
//   node scripts/changes.mjs check                  (npm run lint:changes, part of npm run lint)
//   node scripts/changes.mjs add BUMP "summary"     (npm run change -- BUMP "summary")
//
// The API of the last release is packages/kubeloop/api/released/*.api.md (API Extractor's reports,
// copied there by `npm run release`); the current one is packages/kubeloop/api/*.api.md (kept
// current by `npm run lint:api`). A line of a report that is gone (a removed export, or a changed
// signature, which is a removal and an addition) is a breaking change; a line that is new only is
// an addition. What each needs follows the versioning policy (CONTRIBUTING.md, "Versions").
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const BUMPS = ["patch", "minor", "major"];
const PACKAGE = "kubeloop";

/** The pending notes: `{ file, bumps: { package: bump }, summary }` for each .changeset/*.md. */
export function readNotes(root) {
  const dir = join(root, ".changeset");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith(".md") && file !== "README.md")
    .sort()
    .map((file) => {
      const text = readFileSync(join(dir, file), "utf8");
      const match = /^---\n([\s\S]*?)\n---\n?([\s\S]*)$/.exec(text);
      if (!match) throw new Error(`.changeset/${file} has no front matter (--- "package": bump ---)`);
      const bumps = {};
      for (const line of match[1].split("\n").filter((l) => l.trim())) {
        const entry = /^\s*["']?([^"':]+)["']?\s*:\s*(\w+)\s*$/.exec(line);
        if (!entry || !BUMPS.includes(entry[2])) {
          throw new Error(`.changeset/${file}: "${line}" is not \`"package": patch|minor|major\``);
        }
        bumps[entry[1]] = entry[2];
      }
      return { file, bumps, summary: match[2].trim() };
    });
}

/** The lines of a report's code block that say something: not its comments, not blank. */
function surface(file) {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, "utf8");
  const block = text.slice(text.indexOf("```ts") + 5, text.lastIndexOf("```"));
  return block
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("//"));
}

/** Every line removed from and added to the reports since the last release, by report. */
export function apiDifference(root) {
  const api = join(root, "packages/kubeloop/api");
  const released = join(api, "released");
  const names = new Set(
    [api, released].flatMap((dir) =>
      existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".api.md")) : [],
    ),
  );
  const removed = [];
  const added = [];
  for (const name of [...names].sort()) {
    const before = surface(join(released, name));
    const after = surface(join(api, name));
    const count = (lines) => lines.reduce((m, l) => m.set(l, (m.get(l) ?? 0) + 1), new Map());
    const [was, is] = [count(before), count(after)];
    for (const [line, n] of was) if ((is.get(line) ?? 0) < n) removed.push(`${name}: ${line}`);
    for (const [line, n] of is) if ((was.get(line) ?? 0) < n) added.push(`${name}: ${line}`);
  }
  return { removed, added };
}

/**
 * The least bump a difference needs. Before 1.0, as npm's caret reads 0.x (`^0.2.0` takes 0.2.x
 * only): breaking → minor, addition → patch. From 1.0: breaking → major, addition → minor.
 */
export function requiredBump(version, { removed, added }) {
  const zero = version.startsWith("0.");
  if (removed.length > 0) return { bump: zero ? "minor" : "major", kind: "breaking" };
  if (added.length > 0) return { bump: zero ? "patch" : "minor", kind: "an addition" };
  return undefined;
}

/** The problem with the pending notes, or undefined when they cover the API's change. */
export function checkChanges(root) {
  const { version } = JSON.parse(readFileSync(join(root, "packages/kubeloop/package.json"), "utf8"));
  const difference = apiDifference(root);
  const needed = requiredBump(version, difference);
  if (!needed) return undefined;
  const notes = readNotes(root).filter((note) => note.bumps[PACKAGE]);
  const rank = (bump) => BUMPS.indexOf(bump);
  const best = notes.reduce((top, note) => Math.max(top, rank(note.bumps[PACKAGE])), -1);
  if (best >= rank(needed.bump)) return undefined;
  const lines = [...difference.removed.map((l) => `  - ${l}`), ...difference.added.map((l) => `  + ${l}`)];
  const shown = lines.length > 20 ? [...lines.slice(0, 20), `  … and ${lines.length - 20} more`] : lines;
  const have = notes.length
    ? `the pending notes bump it by ${BUMPS[best]} at most (${notes.map((n) => `.changeset/${n.file}`).join(", ")})`
    : "there is no change note for it in .changeset/";
  return [
    `kubeloop's public API changed since the last release (packages/kubeloop/api/released/): the change is ${needed.kind}, ` +
      `which needs a ${needed.bump} change note at ${version}, and ${have}.`,
    ...shown,
    `Add one (say what changed and, if it breaks, what users do instead):`,
    `  npm run change -- ${needed.bump} "…"`,
  ].join("\n");
}

/** Writes a note bumping kubeloop (and create-kubeloop, released with it) by `bump`. */
export function addNote(root, bump, summary) {
  if (!BUMPS.includes(bump)) throw new Error(`the bump is one of ${BUMPS.join(", ")}, not "${bump}"`);
  if (!summary?.trim()) throw new Error('say what changed: npm run change -- BUMP "summary"');
  const slug = summary
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .slice(0, 48)
    .replace(/^-+|-+$/g, "");
  const dir = join(root, ".changeset");
  mkdirSync(dir, { recursive: true });
  let file = `${slug || "change"}.md`;
  for (let n = 2; existsSync(join(dir, file)); n++) file = `${slug}-${n}.md`;
  writeFileSync(join(dir, file), `---\n"${PACKAGE}": ${bump}\n---\n\n${summary.trim()}\n`);
  return join(".changeset", file);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = resolve(process.env.KUBELOOP_REPO ?? join(import.meta.dirname, ".."));
  const [command, ...args] = process.argv.slice(2);
  try {
    if (command === "check") {
      const problem = checkChanges(root);
      if (problem) {
        console.error(problem);
        process.exit(1);
      }
      console.log("change notes: the API's change since the last release is covered");
    } else if (command === "add") {
      console.log(`wrote ${addNote(root, args[0], args.slice(1).join(" "))}`);
    } else {
      console.error('usage: node scripts/changes.mjs check | add patch|minor|major "summary"');
      process.exit(2);
    }
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
}
