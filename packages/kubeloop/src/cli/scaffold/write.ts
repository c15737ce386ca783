import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { CliError } from "../errors.js";
import { EMPTY_EXPORT } from "./project.js";

/**
 * Writes new files under `root`, all or none: if any of them exists already, nothing is written
 * and the error lists them — scaffolding never overwrites someone's work.
 */
export function writeNewFiles(root: string, files: Map<string, string>, what: string): void {
  const existing = [...files.keys()].filter((file) => existsSync(join(root, file)));
  if (existing.length > 0) {
    throw new CliError(
      `${what}: these files exist already, and would be overwritten:\n  ${existing.join("\n  ")}`,
    );
  }
  for (const [file, text] of files) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
    console.log(`  created ${file}`);
  }
}

/**
 * Adds `export { name } from "./…";` to an index module (src/resources.ts, …), replacing its
 * `export {};` placeholder the first time, and keeps the exports sorted by path after the module's
 * header comment (biome's import order), so the file stays as a formatter would leave it.
 */
export function addExport(
  root: string,
  indexPath: string,
  { name, file }: { name: string; file: string },
): void {
  let from = relative(dirname(indexPath), join(root, file)).split("\\").join("/");
  if (!from.startsWith(".")) from = `./${from}`;
  const line = `export { ${name} } from "${from}";`;
  const lines = existsSync(indexPath) ? readFileSync(indexPath, "utf8").split("\n") : [];
  if (lines.includes(line)) return;
  const headerEnd = lines.findIndex((text) => !text.startsWith("//"));
  const header = headerEnd === -1 ? lines : lines.slice(0, headerEnd);
  const body = [...lines.slice(header.length), line].filter(
    (text) => text.trim() !== "" && `${text}\n` !== EMPTY_EXPORT,
  );
  const reexports = body.every((text) => /^export \{[^}]*\} from "[^"]+";$/.test(text));
  if (reexports) body.sort((a, b) => sourceOf(a).localeCompare(sourceOf(b)));
  mkdirSync(dirname(indexPath), { recursive: true });
  writeFileSync(indexPath, `${header.length ? `${header.join("\n")}\n\n` : ""}${body.join("\n")}\n`);
  console.log(`  updated ${relative(root, indexPath)}`);
}

function sourceOf(line: string): string {
  return line.slice(line.indexOf(" from ") + 6);
}
