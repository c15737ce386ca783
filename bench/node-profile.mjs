// The node profile (real nodes): start-up time, image load, pod create → Running for a loaded
// image, the node stack's memory, and the binaries' build times. Needs root, like the profile.
// Run: npm run bench:node [-- --runs 5]

import { readdirSync, readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { ControlPlane, kubectl } from "kubeloop/testing";
import { COMPONENTS, defaultAssetsRoot, readBuildInfo } from "kubeloop/testing/assets";
import { median, procStats } from "./stats.mjs";

const { values } = parseArgs({ options: { runs: { type: "string", default: "5" } } });
const runs = Number(values.runs);

/** Every process whose command line names the plane's folder: its components, shims and pods' parents. */
function planeProcesses(dir) {
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (cmdline.some((arg) => arg.includes(dir))) found.push({ pid: Number(entry), command: cmdline[0] });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

const MiB = 2 ** 20;
const results = [];
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const plane = await new ControlPlane({ profile: "node" }).start();
  const start = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  const tools = await plane.loadBaseImage("tools");
  const load = (performance.now() - t1) / 1000;
  const k = (args, input) => kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
  const pod = `apiVersion: v1
kind: Pod
metadata: { name: sleeper, namespace: default }
spec: { containers: [{ name: main, image: ${tools}, command: [sleep, "3600"] }] }
`;
  const t2 = performance.now();
  await k(["apply", "-f", "-"], pod);
  await k(["wait", "--for=jsonpath={.status.phase}=Running", "pod/sleeper", "--timeout=60s"]);
  const running = (performance.now() - t2) / 1000;
  const byKind = {};
  for (const { pid, command } of planeProcesses(plane.dir)) {
    const name = command.split("/").pop();
    const kind =
      /kubelet|kube-proxy|containerd|coredns|registry|etcd|kube-apiserver|kube-controller|kube-scheduler/.exec(
        name === "nsenter" ? readFileSync(`/proc/${pid}/cmdline`, "utf8") : name,
      )?.[0] ?? name;
    byKind[kind] = (byKind[kind] ?? 0) + (procStats(pid)?.rss ?? 0) / MiB;
  }
  results.push({ start, load, running, byKind });
  await plane.stop();
}

const nodeStack = ["containerd", "kubelet", "kube-proxy", "coredns", "registry"];
const stackMiB = results.map((r) => nodeStack.reduce((sum, kind) => sum + (r.byKind[kind] ?? 0), 0));
const root = defaultAssetsRoot();
const builds = Object.fromEntries(
  ["kubernetes-node", "containerd", "runc", "cni-plugins", "coredns", "registry"].map((name) => [
    name,
    readBuildInfo(root, COMPONENTS[name])?.seconds,
  ]),
);
const summary = {
  machine: `${cpus().length} × ${cpus()[0]?.model ?? "?"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
  node: process.version,
  runs,
  startSeconds: { median: median(results.map((r) => r.start)), all: results.map((r) => +r.start.toFixed(2)) },
  loadImageSeconds: median(results.map((r) => r.load)),
  createToRunningSeconds: {
    median: median(results.map((r) => r.running)),
    all: results.map((r) => +r.running.toFixed(2)),
  },
  nodeStackRssMiB: median(stackMiB),
  rssMiBByProcessKind: Object.fromEntries(
    Object.keys(results[0]?.byKind ?? {}).map((kind) => [
      kind,
      +median(results.map((r) => r.byKind[kind] ?? 0)).toFixed(1),
    ]),
  ),
  buildSeconds: builds,
};
console.log(JSON.stringify(summary, null, 2));
