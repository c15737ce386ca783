// The code blocks of the book and of the TSDoc `@example`s, as files to type-check against the
// built kubeloop (what a reader copies must compile), and how each book block is run.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

export interface Snippet {
  /** Where it is, `file:line`, for the test's name and its errors. */
  where: string;
  code: string;
  /** How the block is run, for a book block marked `<!-- run … -->`; compiled only without it. */
  run?: RunPlan | undefined;
}

/**
 * How a complete program of the book is run (with the Node that runs the test, by type stripping),
 * from its `<!-- run … -->` marker. The block is `test/snippet.ts` of a project of its own (cwd).
 * - `<!-- run -->`: `node test/snippet.ts`, as it is.
 * - `<!-- run with: vitest -->`: a test file (`test/snippet.test.ts`), run by vitest.
 * - `<!-- run with: reconcile {sample} -->`: the block exports one controller; docs/test/harness/reconcile.ts
 *   reconciles a sample object of its kind (`{sample}` is JSON merged into it) on the ReconcileHarness.
 * - `<!-- run with: admission [{sample}, …] -->`: the block exports webhook definitions;
 *   docs/test/harness/admission.ts creates the samples through them on a MemoryApiServer.
 * Then, each `; <name> = <repository path>` links a path of the project (`config = examples/nginx/config`),
 * and `; prints: <regular expression>` is what its output must match.
 */
export interface RunPlan {
  harness: "node" | "vitest" | "reconcile" | "admission";
  /** The JSON after `reconcile` or `admission`. */
  sample?: unknown;
  links: { name: string; target: string }[];
  prints?: RegExp | undefined;
}

/** Put on the line before a ```ts block that is a fragment on purpose; say why after the colon. */
export const NOT_COMPILED = /<!--\s*not compiled:[^>]*-->/;
/** Put on the line before a ```ts block that compiles but is not run; say why after the colon. */
export const COMPILE_ONLY = /<!--\s*compile only:[^>]*-->/;
/** Put on the line before a ```ts block that is run; see {@link RunPlan}. */
export const RUN = /<!--\s*run\b(.*?)-->/;

const repository = join(import.meta.dirname, "../..");

function walk(dir: string, keep: (path: string) => boolean, skip: (name: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (skip(entry.name)) return [];
    if (entry.isDirectory()) return walk(path, keep, skip);
    return keep(path) ? [path] : [];
  });
}

/** Parses a `<!-- run … -->` marker's text after `run`; throws, naming the marker, on what it cannot read. */
export function runPlan(text: string, where: string): RunPlan {
  const [head = "", ...clauses] = text.split(/;\s*/);
  const plan: RunPlan = { harness: "node", links: [] };
  const withClause = /^\s*with:\s*(vitest|reconcile|admission)\b\s*(.*)$/.exec(head);
  if (withClause) {
    plan.harness = withClause[1] as RunPlan["harness"];
    const json = withClause[2]?.trim() ?? "";
    if (plan.harness === "vitest" ? json : !json)
      throw new Error(
        `${where}: \`run with: ${plan.harness}\` ${json ? "takes no sample" : "needs a sample object as JSON"}`,
      );
    if (json) {
      try {
        plan.sample = JSON.parse(json);
      } catch (error) {
        throw new Error(
          `${where}: the sample of \`run with: ${plan.harness}\` is not JSON: ${(error as Error).message}`,
        );
      }
    }
  } else if (head.trim()) {
    throw new Error(
      `${where}: \`<!-- run${head} -->\`: write \`run\`, or \`run with: vitest|reconcile {…}|admission [{…}]\``,
    );
  }
  for (const [i, clause] of clauses.entries()) {
    const prints = /^prints:\s*(.*)$/.exec(clause);
    if (prints) {
      plan.prints = new RegExp(
        clauses
          .slice(i)
          .join("; ")
          .replace(/^prints:\s*/, "")
          .trim(),
      );
      break;
    }
    const link = /^\s*([\w./-]+)\s*=\s*([\w./-]+)\s*$/.exec(clause);
    if (!link)
      throw new Error(
        `${where}: \`${clause}\` in a run marker: write \`<name> = <repository path>\` or \`prints: <regex>\``,
      );
    plan.links.push({ name: link[1] as string, target: link[2] as string });
  }
  return plan;
}

/**
 * The ```ts blocks of docs/**\/*.md, but for the generated reference and the `not compiled` ones.
 * Every block says how it is checked (`run`, `compile only: why` or `not compiled: why`): an
 * unmarked block is an error, so a new complete program is not left unrun by accident.
 */
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
      const where = `${relative(repository, file)}:${i + 1}`;
      const marker = [lines[i - 1] ?? "", lines[i - 2] ?? ""].find(
        (line) => NOT_COMPILED.test(line) || COMPILE_ONLY.test(line) || RUN.test(line),
      );
      if (marker === undefined)
        throw new Error(
          `${where}: say how this block is checked on the line before it: <!-- run --> (see RunPlan in docs/test/snippets.ts), <!-- compile only: why --> or <!-- not compiled: why -->`,
        );
      if (!NOT_COMPILED.test(marker)) {
        const run = RUN.exec(marker);
        snippets.push({
          where,
          code: lines.slice(i + 1, end).join("\n"),
          run: run ? runPlan(run[1] ?? "", where) : undefined,
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
