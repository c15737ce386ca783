import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bookSnippets, exampleSnippets, type RunPlan, type Snippet } from "./snippets.ts";

// Every ```ts block of the book (but those marked `<!-- not compiled: why -->`) and every TSDoc
// `@example` of packages/kubeloop/src, type-checked against the built kubeloop (tsc, strict, as a
// user's project compiles). Many are fragments that leave some names to their context (`informer`,
// `ctx`, a reconcile's `return`, a project's own `../src/…` modules): names a block without imports
// uses from kubeloop's entry points are imported for it, and only those errors are allowed — a
// method that does not exist, a wrong argument, a wrong import still fail.
//
// The book's complete programs are also run: each block says on the line before it whether it is
// run (`<!-- run … -->`, see RunPlan in snippets.ts: as it is with node, as a vitest file, or its
// controller reconciled once / its webhooks admitting samples in memory) or compiled only
// (`<!-- compile only: why -->`), and a run must exit 0 and print what its marker says. The
// tutorial's code is not here: it is included from examples/cronjob (`<<< ../../examples/cronjob/…`),
// whose source `npm test` type-checks and whose tests it runs as that workspace's. The `@example`s
// are compiled only: most are fragments of a larger program.

const repository = join(import.meta.dirname, "../..");
const ENTRY_POINTS = [
  "kubeloop",
  "kubeloop/client",
  "kubeloop/cache",
  "kubeloop/queue",
  "kubeloop/controller",
  "kubeloop/manager",
  "kubeloop/resources",
  "kubeloop/webhook",
  "kubeloop/k8s",
  // Before kubeloop/testing, whose deprecated aliases of their names go in 0.3: a fragment gets the new import.
  "kubeloop/testing/cluster",
  "kubeloop/testing/faults",
  "kubeloop/testing/servers",
  "kubeloop/testing/assets",
  "kubeloop/testing",
];
/** "Cannot find name" (and its "did you mean" form): a fragment's free names. */
const FREE_NAME = /error TS(2304|2552|2448|2454|2582|18004|1108|1375|1378):/;
/** A block from a project's test that imports the project's own modules (`../src/nginx.ts`). */
const PROJECT_MODULE = /error TS2307: Cannot find module '\.\.?\//;

const dir = mkdtempSync(join(tmpdir(), "kubeloop-snippets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Names each entry point exports at run time (classes and functions: what fragments call). */
async function exportedNames(): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const entry of ENTRY_POINTS) {
    for (const name of Object.keys(await import(entry))) if (!names.has(name)) names.set(name, entry);
  }
  return names;
}

function withImports(code: string, names: Map<string, string>): string {
  if (/^\s*import\s/m.test(code)) return code;
  const used = new Set(code.match(/\b[A-Za-z_$][\w$]*\b/g) ?? []);
  const byEntry = new Map<string, string[]>();
  for (const name of used) {
    const entry = names.get(name);
    if (!entry || new RegExp(`\\b(const|let|var|function|class)\\s+${name}\\b`).test(code)) continue;
    byEntry.set(entry, [...(byEntry.get(entry) ?? []), name]);
  }
  const imports = [...byEntry].map(([entry, list]) => `import { ${list.join(", ")} } from "${entry}";`);
  return `${imports.join("\n")}\n${code}`;
}

/** Type-checks the snippets as files of one project; returns tsc's error lines per snippet. */
function typecheck(name: string, snippets: Snippet[], prepare: (code: string) => string): string[][] {
  const project = join(dir, name);
  mkdirSync(project);
  symlinkSync(join(repository, "node_modules"), join(project, "node_modules"), "dir");
  writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      extends: join(repository, "tsconfig.base.json"),
      compilerOptions: { noEmit: true, declaration: false, declarationMap: false, composite: false },
      include: ["*.ts"],
    }),
  );
  // `export {}` makes each file a module (its own scope, top-level await), whatever it holds.
  for (const [i, snippet] of snippets.entries()) {
    writeFileSync(join(project, `s${i}.ts`), `${prepare(snippet.code)}\nexport {};\n`);
  }
  const tsc = spawnSync(
    process.execPath,
    [join(repository, "node_modules/typescript/bin/tsc"), "-p", project, "--pretty", "false"],
    { cwd: project, encoding: "utf8" },
  );
  const errors: string[][] = snippets.map(() => []);
  for (const line of tsc.stdout.split("\n")) {
    const file = /^s(\d+)\.ts\(/.exec(line);
    if (file) errors[Number(file[1])]?.push(line);
  }
  return errors;
}

interface Run {
  code: number | null;
  output: string;
}

/** Runs a book block as its plan says, in a project of its own; its exit code and its stdout and stderr. */
async function run(name: string, code: string, plan: RunPlan): Promise<Run> {
  const project = join(dir, name);
  mkdirSync(join(project, "test"), { recursive: true });
  symlinkSync(join(repository, "node_modules"), join(project, "node_modules"), "dir");
  writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module" }));
  for (const link of plan.links) {
    const target = join(repository, link.target);
    if (!existsSync(target))
      throw new Error(`${name}: the run marker links ${link.name} to ${link.target}, which does not exist`);
    symlinkSync(target, join(project, link.name));
  }
  const file = join(project, "test", plan.harness === "vitest" ? "snippet.test.ts" : "snippet.ts");
  writeFileSync(file, code);
  const harness = (script: string) => [
    join(import.meta.dirname, "harness", script),
    file,
    JSON.stringify(plan.sample),
  ];
  const args = {
    node: [file],
    vitest: [join(repository, "node_modules/vitest/vitest.mjs"), "run", "--root", project],
    reconcile: harness("reconcile.ts"),
    admission: harness("admission.ts"),
  }[plan.harness];
  // The vitest running this file tells its workers who they are by VITEST_* variables; a block's
  // own vitest must not think it is one of them.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("VITEST")));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: project, env, timeout: 90_000 });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

describe("the check itself", () => {
  it("fails a block that throws when run", async () => {
    const result = await run("self-throws", 'throw new Error("broken block");', {
      harness: "node",
      links: [],
    });
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/broken block/);
  });

  it("fails a snippet that calls a method that does not exist", () => {
    const bad = {
      where: "bad",
      code: 'import { WorkQueue } from "kubeloop/queue";\nnew WorkQueue<string>().noSuchMethod();',
    };
    const [errors] = typecheck("self-check", [bad], (code) => code);
    expect(errors?.join("\n")).toMatch(/TS2339: Property 'noSuchMethod' does not exist/);
  });
});

describe("the book's code blocks", () => {
  const snippets = bookSnippets();
  it("exist", () => expect(snippets.length).toBeGreaterThan(3));
  it("type-check against the built kubeloop, but for the names they leave to their context", async () => {
    const names = await exportedNames();
    const errors = typecheck("book", snippets, (code) => withImports(code, names));
    const failures = snippets.flatMap((s, i) => {
      const real = (errors[i] ?? []).filter((line) => !FREE_NAME.test(line) && !PROJECT_MODULE.test(line));
      return real.length ? [`${s.where}\n  ${real.join("\n  ")}`] : [];
    });
    expect(failures).toEqual([]);
  });
});

describe("the book's complete programs", () => {
  const snippets = bookSnippets();
  const runs = snippets.filter((s) => s.run);
  it(`are ${runs.length} run, ${snippets.length - runs.length} compiled only`, () => {
    expect(runs.length).toBeGreaterThan(5);
  });
  for (const [i, snippet] of runs.entries()) {
    const plan = snippet.run as RunPlan;
    it(`${snippet.where} runs${plan.harness === "node" ? "" : ` with ${plan.harness}`}${plan.prints ? ` and prints ${plan.prints}` : ""}`, async () => {
      const result = await run(`run-${i}`, snippet.code, plan);
      expect(result.code, `${snippet.where} exited ${result.code}:\n${result.output}`).toBe(0);
      if (plan.prints) expect(result.output).toMatch(plan.prints);
    });
  }
});

describe("the TSDoc @example blocks", () => {
  const snippets = exampleSnippets();
  it("exist", () => expect(snippets.length).toBeGreaterThan(20));
  it("type-check, but for the names they leave to their context", async () => {
    const names = await exportedNames();
    const errors = typecheck("examples", snippets, (code) => withImports(code, names));
    const failures = snippets.flatMap((s, i) => {
      const real = (errors[i] ?? []).filter((line) => !FREE_NAME.test(line) && !PROJECT_MODULE.test(line));
      return real.length ? [`${s.where}\n  ${real.join("\n  ")}`] : [];
    });
    expect(failures).toEqual([]);
  });
});
