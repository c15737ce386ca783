import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MINIMUM_NODE, unsupportedNode } from "./node-version.js";

describe("the Node version check", () => {
  it("accepts 22.19 and newer, and names the fix for anything older", () => {
    for (const ok of ["22.19.0", "22.20.1", "24.21.0", "25.0.0"]) expect(unsupportedNode(ok)).toBeUndefined();
    for (const old of ["18.20.4", "20.20.2", "22.18.9"]) {
      expect(unsupportedNode(old)).toContain(
        `kubeloop needs Node ${MINIMUM_NODE} or newer, and this is Node ${old}`,
      );
    }
  });

  it("is what the command says on the machine's Node 20 instead of a crash inside a library", () => {
    const main = join(import.meta.dirname, "../../dist/cli/main.js");
    const old = spawnSync("/usr/bin/node", [main, "cluster", "start"], { encoding: "utf8" });
    if (old.error)
      throw new Error(`this test needs the machine's own Node at /usr/bin/node: ${old.error.message}`);
    const version = spawnSync("/usr/bin/node", ["--version"], { encoding: "utf8" }).stdout.trim().slice(1);
    if (unsupportedNode(version) === undefined) return expect(old.stderr).not.toContain("needs Node");
    expect(old.status).toBe(1);
    expect(old.stderr).toContain(`kubeloop needs Node ${MINIMUM_NODE} or newer, and this is Node ${version}`);
    expect(old.stderr).not.toContain("TypeError");
  });

  it("is what importing the library says there too, for each entry point that loads the HTTP client", () => {
    const version = spawnSync("/usr/bin/node", ["--version"], { encoding: "utf8" }).stdout.trim().slice(1);
    if (unsupportedNode(version) === undefined) return;
    for (const entry of ["kubeloop", "kubeloop/manager", "kubeloop/testing"]) {
      const imported = spawnSync(
        "/usr/bin/node",
        ["--input-type=module", "-e", `await import(${JSON.stringify(entry)})`],
        { cwd: import.meta.dirname, encoding: "utf8" },
      );
      expect(imported.status, entry).toBe(1);
      expect(imported.stderr, entry).toContain(`Error: kubeloop needs Node ${MINIMUM_NODE} or newer`);
      expect(imported.stderr, entry).not.toContain("undici");
    }
  });
});
