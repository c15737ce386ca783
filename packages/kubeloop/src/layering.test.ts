import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

// The layering rule of docs/architecture.md, run as `npm run lint` runs it (scripts/lint-layers.mjs:
// dependency-cruiser with the repository's .dependency-cruiser.cjs), on a small tree of files made for each case.

const repository = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const lintLayers = join(repository, "scripts/lint-layers.mjs");
const config = join(repository, ".dependency-cruiser.cjs");
const run = promisify(execFile);

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

/**
 * Writes `files` (paths under packages/kubeloop/src, or from the repository's root when they start
 * with `/`) and cruises them as `npm run lint:layers` does; the exit code and the report.
 */
async function cruise(files: Record<string, string>): Promise<{ code: number; output: string }> {
  root = await mkdtemp(join(tmpdir(), "kubeloop-layering-"));
  await mkdir(join(root, "examples"), { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    const file = path.startsWith("/") ? join(root, path) : join(root, "packages/kubeloop/src", path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
  }
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [lintLayers, "--config", config, "--output-type", "err", "packages/kubeloop/src", "examples"],
      { cwd: root },
    );
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

const layers = {
  "queue/index.ts": 'export { WorkQueue } from "./queue.js";\n',
  "queue/queue.ts": "export class WorkQueue {}\n",
  "controller/index.ts": 'export { Controller } from "./controller.js";\n',
  "controller/controller.ts":
    'import { WorkQueue } from "../queue/index.js";\nexport class Controller { queue = new WorkQueue(); }\n',
};

describe("the layering rule", () => {
  it("passes imports that go down, through a layer's index.ts", async () => {
    const { code, output } = await cruise(layers);
    expect(output).not.toContain("error");
    expect(code).toBe(0);
  });

  it("fails a lower layer importing a higher one", async () => {
    const { code, output } = await cruise({
      ...layers,
      "queue/queue.ts":
        'import type { Controller } from "../controller/index.js";\nexport class WorkQueue { c?: Controller; }\n',
    });
    expect(code).not.toBe(0);
    expect(output).toMatch(
      /error layer-order: packages\/kubeloop\/src\/queue\/queue\.ts → .*controller\/index\.ts/,
    );
  });

  it("fails reaching past another layer's index.ts", async () => {
    const { code, output } = await cruise({
      ...layers,
      "controller/controller.ts":
        'import { WorkQueue } from "../queue/queue.js";\nexport class Controller { queue = new WorkQueue(); }\n',
    });
    expect(code).not.toBe(0);
    expect(output).toMatch(
      /error index-only: packages\/kubeloop\/src\/controller\/controller\.ts → .*queue\/queue\.ts/,
    );
  });

  it("fails a folder that is not a layer", async () => {
    const { code, output } = await cruise({
      ...layers,
      "extras/index.ts": 'export * from "../controller/index.js";\n',
      "controller/more.ts": 'import "../extras/index.js";\n',
    });
    expect(code).not.toBe(0);
    expect(output).toContain("unknown-layer");
  });

  it("fails an example that reaches into kubeloop's sources instead of importing an entry point", async () => {
    const { code, output } = await cruise({
      ...layers,
      "/examples/op/main.ts":
        'import { WorkQueue } from "../../packages/kubeloop/src/queue/index.js";\nnew WorkQueue();\n',
    });
    expect(code).not.toBe(0);
    expect(output).toMatch(
      /error public-api-only: examples\/op\/main\.ts → packages\/kubeloop\/src\/queue\/index\.ts/,
    );
  });

  it("fails modules that import each other in a circle, type-only imports included", async () => {
    const { code, output } = await cruise({
      ...layers,
      "controller/spec.ts":
        'import type { Controller } from "./controller.js";\nexport interface Spec { build(): Controller; }\n',
      "controller/controller.ts":
        'import { WorkQueue } from "../queue/index.js";\nimport type { Spec } from "./spec.js";\nexport class Controller { queue = new WorkQueue(); spec?: Spec; }\n',
    });
    expect(code).not.toBe(0);
    expect(output).toMatch(/error no-circular: packages\/kubeloop\/src\/controller\/(spec|controller)\.ts/);
  });
});

// testing/ is one layer with entry points of its own: assets/ at the bottom, the core (its own
// files) on it, and cluster/, faults/, servers/ on the core, apart from each other.
const testing = {
  "testing/assets/index.ts": 'export { locate } from "./locate.js";\n',
  "testing/assets/locate.ts": "export const locate = () => 1;\n",
  "testing/kubectl.ts":
    'import { locate } from "./assets/index.js";\nexport const kubectl = () => locate();\n',
  "testing/index.ts": 'export { kubectl } from "./kubectl.js";\n',
  "testing/faults/index.ts":
    'import { kubectl } from "../kubectl.js";\nexport const cut = () => kubectl();\n',
  "testing/servers/index.ts":
    'import { kubectl } from "../kubectl.js";\nexport const serve = () => kubectl();\n',
  "cli/cli.ts": 'import { cut } from "../testing/faults/index.js";\nexport const run = () => cut();\n',
};

describe("testing/'s entry points", () => {
  it("pass the core building on assets/, and faults/ on the core, imported by the CLI through its index.ts", async () => {
    const { code, output } = await cruise(testing);
    expect(output).not.toContain("error");
    expect(code).toBe(0);
  });

  it("fail assets/ importing the core, the core importing faults/, and faults/ importing servers/", async () => {
    const { code, output } = await cruise({
      ...testing,
      "testing/assets/locate.ts":
        'import { kubectl } from "../kubectl.js";\nexport const locate = () => kubectl;\n',
      "testing/kubectl.ts":
        'import type { cut } from "./faults/index.js";\nexport const kubectl = (c?: typeof cut) => c;\n',
      "testing/faults/index.ts":
        'import { serve } from "../servers/index.js";\nexport const cut = () => serve();\n',
    });
    expect(code).not.toBe(0);
    expect(output).toMatch(
      /error testing-order: packages\/kubeloop\/src\/testing\/assets\/locate\.ts → .*testing\/kubectl\.ts/,
    );
    expect(output).toMatch(
      /error testing-order: packages\/kubeloop\/src\/testing\/kubectl\.ts → .*testing\/faults\/index\.ts/,
    );
    expect(output).toMatch(
      /error testing-order: packages\/kubeloop\/src\/testing\/faults\/index\.ts → .*testing\/servers\/index\.ts/,
    );
  });
});
