import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { clusterCli } from "../../test/cluster-cli.js";
import { processesMentioning } from "../../test/processes.js";
import { kubectl } from "../testing/kubectl.js";

// `kubeloop cluster` with real nodes, driven as a user does: start, load an image, kubectl, stop.
// The folder is under /var/tmp: the nodes see the plane's own tmp/ as /tmp.
const { dir, kubeloop } = clusterCli("kubeloop-cli-node-", "/var/tmp");

describe("kubeloop cluster --profile node", () => {
  const k = (args: string[]) => kubectl(args, { kubeconfig: join(dir, "kubeconfig") });

  it("lists the node profile in its help", () => {
    const help = kubeloop("cluster", "--help");
    expect(help.stdout).toContain("--profile apiserver|cluster|node");
    expect(help.stdout).toMatch(/node:\s+real nodes: containerd, runc, kubelet, kube-proxy, CoreDNS/);
  });

  it("starts real nodes in the background, and loads an image into them", () => {
    const started = kubeloop("cluster", "start", "--profile", "node", "--dir", dir);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toMatch(/Control plane \(node\) is running: https:\/\/10\.\d+\.0\.1:\d+/);
    const loaded = kubeloop("cluster", "load", "--base", "nginx", "--dir", dir);
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(loaded.stdout).toContain("loaded kubeloop.local/nginx:1.22.1 into 1 node(s)");
  });

  it("runs a Deployment of the loaded image Ready, its runtime shown by kubectl", async () => {
    const wide = await k(["get", "nodes", "-o", "wide"]);
    expect(wide.stdout).toMatch(/node-0\s+Ready\s.*containerd:\/\/2\.3\.4/);
    expect((await k(["create", "deployment", "web", "--image=kubeloop.local/nginx:1.22.1"])).code).toBe(0);
    const rollout = await k(["rollout", "status", "deployment/web", "--timeout=90s"]);
    expect(rollout.code, rollout.stderr).toBe(0);
    const logs = await k(["logs", "deployment/web"]);
    expect(logs.code, logs.stderr).toBe(0);
  });

  it("builds an operator's image straight into the nodes (kubeloop build --load)", () => {
    const nginx = join(import.meta.dirname, "../../../../examples/nginx");
    const built = kubeloop(
      "build",
      nginx,
      "--load",
      "--cluster-dir",
      dir,
      "--platform",
      "linux/amd64",
      "--tag",
      "kubeloop.local/nginx-operator:loaded",
    );
    expect(built.code, built.stderr).toBe(0);
    expect(built.stderr).toContain("loaded kubeloop.local/nginx-operator:loaded into 1 node(s)");
    expect(built.stdout).toMatch(/^sha256:[0-9a-f]{64}$/m);
  });

  it("refuses to load into a folder with no running cluster, or a profile without runtimes", () => {
    const nothing = kubeloop("cluster", "load", "--base", "tools", "--dir", join(dir, "none"));
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain("no cluster is running in");
    const missing = kubeloop("cluster", "load", join(dir, "missing.tar"), "--dir", dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("missing.tar does not exist");
  });

  it("stops with nothing of the nodes left", () => {
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as { server: string };
    const block = new URL(state.server).hostname.split(".")[1];
    expect(kubeloop("cluster", "stop", "--dir", dir).code).toBe(0);
    expect(processesMentioning(dir)).toEqual([]);
    expect(spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout).not.toContain(`kl${block}n`);
    expect(spawnSync("ip", ["-o", "link"], { encoding: "utf8" }).stdout).not.toContain(`klb${block}`);
    expect(existsSync(join(dir, "nodes"))).toBe(false);
    expect(existsSync(join(dir, "logs", "kubelet-node-0.log"))).toBe(true);
  });
});
