import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { kubeloopResolvesFrom } from "./regenerate.js";

// A newcomer's first commands in a clone of the repository: the `kubeloop` bin that npm links at
// install time (before dist/ exists), and the "is kubeloop installed" check of `run` and
// `create api`, which must accept a workspace project whose kubeloop is hoisted to the root.

const packageDir = join(import.meta.dirname, "../..");
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-clone-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the kubeloop bin", () => {
  it("is a committed file, so npm links it before the build", () => {
    const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
    expect(manifest.bin.kubeloop).toBe("./bin/kubeloop.js");
    expect(manifest.files).toContain("bin");
  });

  it("runs the built CLI", () => {
    const result = spawnSync(process.execPath, [join(packageDir, "bin/kubeloop.js"), "--help"], {
      encoding: "utf8",
    });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("kubeloop init [FOLDER]");
  });

  it("says to build when dist/ is missing", () => {
    const unbuilt = join(tmp, "unbuilt");
    mkdirSync(join(unbuilt, "bin"), { recursive: true });
    copyFileSync(join(packageDir, "bin/kubeloop.js"), join(unbuilt, "bin/kubeloop.js"));
    const result = spawnSync(process.execPath, [join(unbuilt, "bin/kubeloop.js"), "--help"], {
      encoding: "utf8",
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("kubeloop is not built yet");
    expect(result.stderr).toContain("npm run build");
  });
});

describe("kubeloopResolvesFrom", () => {
  it("finds kubeloop hoisted to a workspace root, as Node does", () => {
    const workspace = join(tmp, "workspace");
    const project = join(workspace, "examples/app");
    mkdirSync(project, { recursive: true });
    mkdirSync(join(workspace, "node_modules"));
    symlinkSync(packageDir, join(workspace, "node_modules/kubeloop"), "dir");
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", type: "module" }));
    expect(kubeloopResolvesFrom(project)).toBe(true);
  });

  it("says no when no node_modules up the tree has it", () => {
    const lonely = join(tmp, "lonely");
    mkdirSync(lonely);
    writeFileSync(join(lonely, "package.json"), JSON.stringify({ name: "lonely", type: "module" }));
    expect(kubeloopResolvesFrom(lonely)).toBe(false);
  });

  it("accepts the repository's own example, whose kubeloop is hoisted", () => {
    expect(kubeloopResolvesFrom(join(packageDir, "../../examples/nginx"))).toBe(true);
  });
});
