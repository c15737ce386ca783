import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { clusterCli } from "../../test/cluster-cli.js";
import { kubectl } from "../testing/kubectl.js";
import { pollUntil } from "../util/index.js";

// `kubeloop cluster start --profile karmada`: Karmada with two apiserver-profile members under the
// supervisor, as a user starts it; what the members do with delivered objects is the nginx
// example's karmada.test.ts.

const { dir, kubeloop } = clusterCli("kubeloop-cli-karmada-");

/** Processes whose command line names the cluster's folder (its components, members and watchdogs). */
function processesOf(folder: string): string[] {
  try {
    return execFileSync("pgrep", ["-f", folder], { encoding: "utf8" }).trim().split("\n").filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

function filesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((entry) => statSync(join(folder, entry)).isFile())
    .map((entry) => relative(folder, join(folder, entry)));
}

describe("kubeloop cluster --profile karmada", () => {
  it("refuses flags that do not fit the profile, naming the fix", () => {
    const members = kubeloop("cluster", "start", "--members", "2", "--dir", dir);
    expect(members.code).toBe(1);
    expect(members.stderr).toContain("--members and --member-profile are for the karmada profile");
    const count = kubeloop("cluster", "start", "--profile", "karmada", "--members", "0", "--dir", dir);
    expect(count.stderr).toContain('--members must be a whole number from 1 to 20, got "0"');
    const memberProfile = kubeloop(
      "cluster",
      "start",
      "--profile",
      "karmada",
      "--member-profile",
      "kind",
      "--dir",
      dir,
    );
    expect(memberProfile.stderr).toContain('--member-profile must be apiserver, cluster or node, got "kind"');
    expect(kubeloop("cluster", "start", "--profile", "karmada", "--hardened", "--dir", dir).code).toBe(1);
  });

  it("starts Karmada with two members joined in push mode, each labelled with its region", async () => {
    const started = kubeloop("cluster", "start", "--profile", "karmada", "--members", "2", "--dir", dir);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toMatch(/Control plane \(karmada\) is running: https:\/\/127\.0\.0\.1:\d+/);
    expect(started.stdout).toContain(`KUBECONFIG=${join(dir, "members", "member2", "kubeconfig")}`);
    const status = kubeloop("cluster", "status", "--dir", dir);
    expect(status.code, status.stdout).toBe(0);
    expect(status.stdout).toMatch(/karmada-controller-manager\s+pid \d+ running/);
    const clusters = await kubectl(
      [
        "get",
        "clusters.cluster.karmada.io",
        "-o",
        'jsonpath={range .items[*]}{.metadata.name}/{.spec.syncMode}/{.metadata.labels.topology\\.kubernetes\\.io/region}/{.status.conditions[?(@.type=="Ready")].status} {end}',
      ],
      { kubeconfig: join(dir, "karmada", "kubeconfig") },
    );
    expect(clusters.stdout.trim().split(" ")).toEqual([
      "member1/Push/region-1/True",
      "member2/Push/region-2/True",
    ]);
    const member = await kubectl(["get", "ns", "karmada-cluster"], {
      kubeconfig: join(dir, "members", "member1", "kubeconfig"),
    });
    expect(member.code, member.stderr).toBe(0);
  });

  it("stops leaving no process and no file but the logs", async () => {
    expect(processesOf(dir).length).toBeGreaterThan(10);
    const stopped = kubeloop("cluster", "stop", "--dir", dir);
    expect(stopped.code, stopped.stderr).toBe(0);
    // The watchdogs look once a second whether their owner cleaned up, then end.
    await pollUntil(() => processesOf(dir).length === 0, { timeoutMs: 10_000, intervalMs: 200 }).catch(
      () => {},
    );
    expect(processesOf(dir)).toEqual([]);
    expect(filesUnder(dir).filter((file) => !/(^|\/)logs\/[^/]+\.log$/.test(file))).toEqual([]);
  });
});
