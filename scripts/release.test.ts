import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The release tooling in a temporary copy of the workspace (its package.json files, the API reports
// and their released baseline, the notes, the built packages; node_modules linked): `npm run
// lint:changes` against an API report change with no note, with a breaking change noted as a patch,
// and with the right note; then `npm run release -- --dry-run` on that note.

const repo = join(import.meta.dirname, "..");
const copy = mkdtempSync(join(tmpdir(), "kubeloop-release-test-"));
const api = join(copy, "packages/kubeloop/api");

function place(path: string): void {
  if (!existsSync(join(repo, path))) return;
  mkdirSync(dirname(join(copy, path)), { recursive: true });
  cpSync(join(repo, path), join(copy, path), { recursive: true });
}

beforeAll(() => {
  if (!existsSync(join(repo, "packages/kubeloop/dist/index.js")))
    throw new Error("run `npm run build` first");
  for (const path of ["package.json", "package-lock.json", ".changeset/config.json", "scripts"]) place(path);
  for (const group of ["packages", "examples"]) {
    for (const name of readdirSync(join(repo, group))) place(`${group}/${name}/package.json`);
  }
  for (const path of ["bench/package.json", "docs/package.json"]) place(path);
  for (const dir of ["packages/kubeloop", "packages/create-kubeloop"]) {
    for (const path of ["bin", "dist", "index.js", "README.md", "LICENSE", "CHANGELOG.md", "api"]) {
      place(`${dir}/${path}`);
    }
  }
  symlinkSync(join(repo, "node_modules"), join(copy, "node_modules"));
  // The copy starts released: no notes, and the reports are the baseline.
  for (const report of readdirSync(api).filter((f) => f.endsWith(".api.md"))) {
    cpSync(join(api, report), join(api, "released", report));
  }
});
afterAll(() => rmSync(copy, { recursive: true, force: true }));

const npm = (...args: string[]) => {
  const result = spawnSync("npm", ["run", "--silent", ...args], { cwd: copy, encoding: "utf8" });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
};

/** Edits a report as `npm run api` would after a change to the public API. */
function editReport(name: string, edit: (text: string) => string): void {
  const file = join(api, name);
  writeFileSync(file, edit(readFileSync(file, "utf8")));
}

const notes = () => readdirSync(join(copy, ".changeset")).filter((f) => f !== "config.json");

describe("change notes against the API reports (npm run lint:changes)", () => {
  it("passes when the API is the released one", () => {
    const check = npm("lint:changes");
    expect(check.code, check.output).toBe(0);
  });

  it("writes no note for an unknown bump or an empty summary, and says why", () => {
    const typo = npm("change", "--", "majr", "Something");
    expect(typo.code).toBe(1);
    expect(typo.output).toContain('the bump is one of patch, minor, major, not "majr"');
    const empty = npm("change", "--", "minor");
    expect(empty.code).toBe(1);
    expect(empty.output).toContain('say what changed: npm run change -- BUMP "summary"');
    expect(notes()).toEqual([]);
  });

  it("fails on an addition with no note, saying which note to write", () => {
    // API Extractor writes its reports with CRLF line ends.
    editReport("queue.api.md", (text) =>
      text.replace(/```ts(\r?\n)/, (block, end) => `${block}export function brandNew(): void;${end}`),
    );
    const check = npm("lint:changes");
    expect(check.code).toBe(1);
    expect(check.output).toContain("the change is an addition, which needs a patch change note at 0.1.0");
    expect(check.output).toContain("+ queue.api.md: export function brandNew(): void;");
    expect(check.output).toContain('npm run change -- patch "…"');
  });

  it("fails on a removed export noted as a patch, and passes with a minor note (breaking, before 1.0)", () => {
    const written = npm("change", "--", "patch", "Add brandNew to kubeloop/queue");
    expect(written.code, written.output).toBe(0);
    expect(npm("lint:changes").code).toBe(0);
    editReport("client.api.md", (text) => {
      const line = text.split("\n").find((l) => l.startsWith("export class "));
      if (!line) throw new Error("client.api.md has no exported class");
      return text.replace(`${line}\n`, "");
    });
    const check = npm("lint:changes");
    expect(check.code).toBe(1);
    expect(check.output).toContain("the change is breaking, which needs a minor change note at 0.1.0");
    expect(check.output).toMatch(/- client\.api\.md: export class \w+/);
    expect(check.output).toContain("the pending notes bump it by patch at most");
    expect(check.output).toContain('npm run change -- minor "…"');
    const minor = npm("change", "--", "minor", "Remove a class from kubeloop/client");
    expect(minor.code, minor.output).toBe(0);
    const passed = npm("lint:changes");
    expect(passed.code, passed.output).toBe(0);
    expect(readFileSync(join(copy, ".changeset/remove-a-class-from-kubeloop-client.md"), "utf8")).toBe(
      '---\n"kubeloop": minor\n---\n\nRemove a class from kubeloop/client\n',
    );
  });

  it("npm run release -- --dry-run prints the versions, changelog entries, packed files and the tag, changing nothing", () => {
    const before = notes().sort();
    // What `npm run release -- --dry-run` runs after its `npm run build`.
    const run = spawnSync(process.execPath, ["scripts/release.mjs", "--dry-run"], {
      cwd: copy,
      encoding: "utf8",
    });
    const release = { code: run.status, output: `${run.stdout}${run.stderr}` };
    expect(release.code, release.output).toBe(0);
    expect(release.output).toContain("kubeloop → 0.2.0");
    expect(release.output).toContain("create-kubeloop → 0.2.0");
    expect(release.output).toMatch(
      /## 0\.2\.0\n\n### Minor Changes\n\n- Remove a class from kubeloop\/client/,
    );
    expect(release.output).toContain("- Add brandNew to kubeloop/queue");
    expect(release.output).toMatch(/kubeloop@0\.2\.0 packs \d+ files:\n {2}CHANGELOG\.md\n {2}LICENSE\n/);
    expect(release.output).toContain("npm publish --dry-run kubeloop@0.2.0: ok");
    expect(release.output).toContain("npm publish --dry-run create-kubeloop@0.2.0: ok");
    expect(release.output).toContain("tag v0.2.0");
    expect(notes().sort()).toEqual(before);
    expect(JSON.parse(readFileSync(join(copy, "packages/kubeloop/package.json"), "utf8")).version).toBe(
      "0.1.0",
    );
  });
});
