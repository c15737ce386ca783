import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { clusterCli } from "../../test/cluster-cli.js";
import { processesMentioning } from "../../test/processes.js";
import { kubectl } from "../testing/kubectl.js";

const { dir, kubeloop } = clusterCli("kubeloop-cli-");

describe("kubeloop cluster", () => {
  it("starts a cluster in the background and prints how to use it", () => {
    const started = kubeloop("cluster", "start", "--profile", "cluster", "--nodes", "2", "--dir", dir);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toContain(`export KUBECONFIG=${join(dir, "kubeconfig")}`);
    expect(started.stdout).toMatch(/Control plane \(cluster\) is running: https:\/\/127\.0\.0\.1:\d+/);
  });

  it("serves kubectl with the printed kubeconfig", async () => {
    const nodes = await kubectl(["get", "nodes", "-o", "name"], { kubeconfig: join(dir, "kubeconfig") });
    expect(nodes.stdout.trim().split("\n").sort()).toEqual(["node/kwok-node-0", "node/kwok-node-1"]);
  });

  it("reports every component running and /readyz ok in status", () => {
    const status = kubeloop("cluster", "status", "--dir", dir);
    expect(status.code, status.stdout).toBe(0);
    for (const component of ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]) {
      expect(status.stdout).toMatch(new RegExp(`${component}\\s+pid \\d+ running`));
    }
    expect(status.stdout).toMatch(/\/readyz\s+ok/);
  });

  it("refuses a second start on a running folder, and says how to use or stop it", () => {
    const again = kubeloop("cluster", "start", "--dir", dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`a cluster is already running in ${dir}`);
    expect(again.stderr).toContain(`kubeloop cluster stop --dir ${dir}`);
  });

  it("stops everything, keeps the logs, and then reports nothing running", () => {
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as { pid: number };
    const stopped = kubeloop("cluster", "stop", "--dir", dir);
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toContain(`Stopped the cluster in ${dir}`);
    expect(processesMentioning(dir)).toEqual([]);
    expect(() => process.kill(state.pid, 0)).toThrow();
    expect(existsSync(join(dir, "kubeconfig"))).toBe(false);
    expect(existsSync(join(dir, "logs", "kube-apiserver.log"))).toBe(true);
    const status = kubeloop("cluster", "status", "--dir", dir);
    expect(status.code).toBe(1);
    expect(status.stdout).toContain(`No cluster in ${dir}`);
  });

  it("rejects a bad profile with a clear message", () => {
    const bad = kubeloop("cluster", "start", "--profile", "huge", "--dir", dir);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--profile must be apiserver, cluster, node or karmada, got "huge"');
  });
});
