import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { OperatorE2e } from "./operator-e2e.js";

// What OperatorE2e says before it builds or starts anything. Its run on real nodes is in
// cli/workflow.test.ts (a scaffolded project's `npm run test:e2e`).

const dir = mkdtempSync(join(tmpdir(), "kubeloop-e2e-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("OperatorE2e.start", () => {
  it("refuses a folder with no package.json, naming it", async () => {
    await expect(OperatorE2e.start({ project: dir })).rejects.toThrow(
      `OperatorE2e: ${dir} has no package.json: give the operator project's folder`,
    );
  });

  it("refuses a package that is not a kubeloop project", async () => {
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "plain" }));
    await expect(OperatorE2e.start({ project: dir })).rejects.toThrow(
      `has no "kubeloop" section: is ${dir} a kubeloop project (kubeloop init)?`,
    );
  });
});
