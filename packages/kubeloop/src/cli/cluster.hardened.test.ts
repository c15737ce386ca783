import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { clusterCli } from "../../test/cluster-cli.js";
import { readAuditLog } from "../testing/control-plane/hardened.js";
import { kubectl } from "../testing/kubectl.js";

// `--hardened` is orthogonal to the profile; the apiserver profile keeps this file quick. What each
// hardened setting does is control-plane.hardened.test.ts; here, that the CLI passes it on and says so.

const { dir, kubeloop } = clusterCli("kubeloop-cli-hardened-");

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
    const refusals = readAuditLog(join(dir, "logs", "audit.log")).filter(
      (r) => r.verb === "create" && r.objectRef?.resource === "pods" && r.objectRef.name === "loose",
    );
    expect(refusals.map((r) => r.responseStatus?.code)).toEqual([403]);
  });
});
