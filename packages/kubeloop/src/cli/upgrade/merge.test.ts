import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mergeScaffold } from "./merge.js";

// The 3-way merge of a scaffold change into a project, file by file with git merge-file: every case
// of "what kubeloop did" × "what the owner did" (upgrade.test.ts runs the whole command).

const tmp = mkdtempSync(join(tmpdir(), "kubeloop-merge-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const lines = (...items: string[]) => `${items.join("\n")}\n`;
const labels = { base: "kubeloop 1.0.0", next: "kubeloop 1.1.0" };

describe("mergeScaffold", () => {
  it("adds, merges, deletes, marks conflicts and keeps what the owner changed or deleted", () => {
    const root = join(tmp, "project");
    const scratch = join(tmp, "scratch");
    mkdirSync(join(root, "src"), { recursive: true });
    mkdirSync(scratch);
    const base = new Map([
      ["a.txt", lines("one", "two", "three", "four", "five")],
      ["same-line.txt", lines("title", "body")],
      ["dropped.txt", lines("old")],
      ["dropped-edited.txt", lines("old")],
      ["deleted-by-owner.txt", lines("x")],
      ["untouched.txt", lines("u")],
    ]);
    const next = new Map([
      ["a.txt", lines("one", "two", "three", "four", "FIVE")],
      ["same-line.txt", lines("kubeloop's title", "body")],
      ["deleted-by-owner.txt", lines("x", "y")],
      ["untouched.txt", lines("u")],
      ["src/new.ts", lines("export {};")],
    ]);
    const project: Record<string, string> = {
      "a.txt": lines("ONE", "two", "three", "four", "five"),
      "same-line.txt": lines("my title", "body"),
      "dropped.txt": lines("old"),
      "dropped-edited.txt": lines("old", "mine"),
      "untouched.txt": lines("u", "mine"),
    };
    for (const [path, text] of Object.entries(project)) writeFileSync(join(root, path), text);
    const result = mergeScaffold(root, base, next, labels, scratch);
    expect(result).toEqual({
      added: ["src/new.ts"],
      updated: ["a.txt"],
      deleted: ["dropped.txt"],
      conflicted: ["same-line.txt"],
      kept: [
        { path: "deleted-by-owner.txt", why: "you deleted it; kubeloop 1.1.0 changes it" },
        { path: "dropped-edited.txt", why: "kubeloop 1.1.0 no longer writes it, and you changed it" },
      ],
    });
    const read = (path: string) => readFileSync(join(root, path), "utf8");
    expect(read("a.txt")).toBe(lines("ONE", "two", "three", "four", "FIVE"));
    expect(read("same-line.txt")).toBe(
      lines("<<<<<<< yours", "my title", "=======", "kubeloop's title", ">>>>>>> kubeloop 1.1.0", "body"),
    );
    expect(read("src/new.ts")).toBe(lines("export {};"));
    expect(existsSync(join(root, "dropped.txt"))).toBe(false);
    expect(read("dropped-edited.txt")).toBe(lines("old", "mine"));
    expect(existsSync(join(root, "deleted-by-owner.txt"))).toBe(false);
    expect(read("untouched.txt")).toBe(lines("u", "mine"));
  });
});
