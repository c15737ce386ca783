// The code blocks of the book and of the TSDoc `@example`s, as files to type-check against the
// built kubeloop (what a reader copies must compile).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

export interface Snippet {
  /** Where it is, `file:line`, for the test's name and its errors. */
  where: string;
  code: string;
}

/** Put on the line before a ```ts block that is a fragment on purpose; say why after the colon. */
export const NOT_COMPILED = /<!--\s*not compiled:[^>]*-->/;

const repository = join(import.meta.dirname, "../..");

function walk(dir: string, keep: (path: string) => boolean, skip: (name: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (skip(entry.name)) return [];
    if (entry.isDirectory()) return walk(path, keep, skip);
    return keep(path) ? [path] : [];
  });
}

/** The ```ts blocks of docs/**\/*.md, but for the generated reference and the marked fragments. */
export function bookSnippets(): Snippet[] {
  const docs = join(repository, "docs");
  const files = walk(
    docs,
    (path) => path.endsWith(".md"),
    (name) => ["node_modules", "reference", ".vitepress"].includes(name),
  );
  return files.flatMap((file) => {
    const lines = readFileSync(file, "utf8").split("\n");
    const snippets: Snippet[] = [];
    for (let i = 0; i < lines.length; i++) {
      if (!/^```(ts|typescript)\s*$/.test(lines[i] ?? "")) continue;
      const end = lines.findIndex((line, j) => j > i && line.startsWith("```"));
      if (end < 0) throw new Error(`${relative(repository, file)}:${i + 1}: a code block that never ends`);
      if (!NOT_COMPILED.test(lines[i - 1] ?? "") && !NOT_COMPILED.test(lines[i - 2] ?? "")) {
        snippets.push({
          where: `${relative(repository, file)}:${i + 1}`,
          code: lines.slice(i + 1, end).join("\n"),
        });
      }
      i = end;
    }
    return snippets;
  });
}

/** The `@example` blocks of packages/kubeloop/src's TSDoc (their ```ts fence, or the text itself). */
export function exampleSnippets(): Snippet[] {
  const src = join(repository, "packages/kubeloop/src");
  const files = walk(
    src,
    (path) => path.endsWith(".ts") && !path.endsWith(".test.ts"),
    (name) => name === "node_modules",
  );
  return files.flatMap((file) => {
    const text = readFileSync(file, "utf8");
    const snippets: Snippet[] = [];
    for (const match of text.matchAll(/@example\b([\s\S]*?)(?=\n\s*\*\s*@\w|\*\/)/g)) {
      const body = (match[1] ?? "")
        .split("\n")
        .map((line) => line.replace(/^\s*\* ?/, ""))
        .join("\n");
      if (/```(?!ts\b|typescript\b)\w+/.test(body)) continue; // JSON, YAML, shell: not TypeScript
      const fenced = /```(?:ts|typescript)?\n([\s\S]*?)```/.exec(body);
      const code = (fenced ? fenced[1] : body) ?? "";
      const line = text.slice(0, match.index).split("\n").length;
      snippets.push({ where: `${relative(repository, file)}:${line}`, code: code.trim() });
    }
    return snippets;
  });
}
