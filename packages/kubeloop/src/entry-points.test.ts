import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

// The names layers share but users do not (each layer's internal.ts) are out of a user's reach:
// not on any entry point, and the package's `exports` refuse a deep import of the file.
const INTERNAL = {
  "kubeloop/client": ["apiErrorFor"],
  "kubeloop/resources": ["groupOf", "versionOf", "microTime"],
  "kubeloop/webhook": ["mapClientConfigs"],
  "kubeloop/testing": ["isProcessAlive"],
};

describe("entry points", () => {
  it.each(Object.entries(INTERNAL))("%s does not export its layer's internal names", async (entry, names) => {
    const exported = Object.keys(await import(entry));
    expect(exported.length).toBeGreaterThan(0);
    for (const name of names) expect(exported).not.toContain(name);
  });

  it("refuses a deep import of a layer's internal.ts", () => {
    // Node itself, as a user's program resolves (vitest's resolver is more lenient).
    for (const layer of ["client", "resources", "webhook", "testing"]) {
      const run = spawnSync(
        process.execPath,
        ["--input-type=module", "-e", `await import("kubeloop/dist/${layer}/internal.js")`],
        {
          encoding: "utf8",
        },
      );
      expect(run.status).not.toBe(0);
      expect(run.stderr).toContain("ERR_PACKAGE_PATH_NOT_EXPORTED");
    }
  });
});
