import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ControlPlane } from "./control-plane.js";

// What the node profile says where it cannot run, before it changes anything on the machine.
describe("node profile refusals", () => {
  it("refuses a user who is not root, naming why and the profile that needs nothing of it", () => {
    const testing = join(import.meta.dirname, "../../dist/testing/index.js");
    const script = `
      const { ControlPlane } = await import(${JSON.stringify(testing)});
      try { await new ControlPlane({ profile: "node" }).start(); console.log("started"); }
      catch (error) { console.log(error.name + ": " + error.message); }`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      uid: 65534,
      gid: 65534,
      cwd: "/",
      env: { ...process.env, HOME: "/nonexistent" },
    });
    expect(run.stdout, run.stderr).toContain('ControlPlaneError: The "node" profile needs root');
    expect(run.stdout).toContain('The "cluster" profile (kwok\'s simulated nodes) needs none of this');
    expect(run.stdout).not.toContain("started");
  });

  it("refuses a plane folder under /tmp, which its nodes would see as their own /tmp", async () => {
    const plane = new ControlPlane({ profile: "node", dir: "/tmp/kubeloop-node-refused" });
    await expect(plane.start()).rejects.toThrow(
      /cannot live under \/tmp \(\/tmp\/kubeloop-node-refused\): its nodes see the plane's own tmp\/ as \/tmp/,
    );
  });
});
