import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { kubectl } from "../testing/kubectl.js";

// `--hardened` is orthogonal to the profile; the apiserver profile keeps this file quick. What each
// hardened setting does is control-plane.hardened.test.ts; here, that the CLI passes it on and says so.

const cli = join(import.meta.dirname, "../../dist/cli/main.js");
const dir = join(mkdtempSync(join(tmpdir(), "kubeloop-cli-hardened-")), "cluster");

function kubeloop(...args: string[]) {
  const result = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 180_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

afterAll(() => {
  kubeloop("cluster", "stop", "--dir", dir);
  rmSync(join(dir, ".."), { recursive: true, force: true });
});

describe("kubeloop cluster --hardened", () => {
  it("starts a hardened plane of the profile given, and says where its audit log is", () => {
    const started = kubeloop("cluster", "start", "--profile", "apiserver", "--hardened", "--dir", dir);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toMatch(
      /Control plane \(apiserver, hardened\) is running: https:\/\/127\.0\.0\.1:\d+/,
    );
    expect(started.stdout).toContain(`audit log:  ${join(dir, "logs", "audit.log")}`);
    const status = kubeloop("cluster", "status", "--dir", dir);
    expect(status.code, status.stdout).toBe(0);
    expect(status.stdout).toContain("profile apiserver, hardened");
  });

  it("enforces Pod Security restricted and records requests in the audit log", async () => {
    const kubeconfig = join(dir, "kubeconfig");
    const pod = await kubectl(["run", "loose", "--image=registry.k8s.io/pause:3.10", "-n", "default"], {
      kubeconfig,
    });
    expect(pod.code).not.toBe(0);
    expect(pod.stderr).toContain('violates PodSecurity "restricted:latest"');
    const refusals = readFileSync(join(dir, "logs", "audit.log"), "utf8")
      .trim()
      .split("\n")
      .map(
        (line) =>
          JSON.parse(line) as {
            verb: string;
            objectRef?: { resource?: string; name?: string };
            responseStatus?: { code?: number };
          },
      )
      .filter((r) => r.verb === "create" && r.objectRef?.resource === "pods" && r.objectRef.name === "loose");
    expect(refusals.map((r) => r.responseStatus?.code)).toEqual([403]);
  });
});
