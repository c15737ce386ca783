import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { eventually } from "../../test/processes.js";
import { ControlPlane } from "./control-plane.js";
import { kubectl } from "./kubectl.js";

const holder = join(import.meta.dirname, "../../test/scripts/hold-plane.mjs");

/**
 * What a node-profile plane leaves on the machine, found the way an administrator would look:
 * processes that name its folder or live in its nodes' network namespaces, mounts under its
 * folder, its network namespaces, links, FORWARD rules and cgroups.
 */
function traces(dir: string, block: number): string[] {
  const found: string[] = [];
  const netns = spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout;
  for (const line of netns.split("\n")) if (line.startsWith(`kl${block}n`)) found.push(`netns ${line}`);
  const nsInodes = new Set(
    readdirSync("/run/netns")
      .filter((name) => name.startsWith(`kl${block}n`))
      .map((name) =>
        spawnSync("stat", ["-L", "-c", "%i", `/run/netns/${name}`], { encoding: "utf8" }).stdout.trim(),
      ),
  );
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmdline.includes(dir)) found.push(`process ${entry}: ${cmdline.slice(0, 120)}`);
      const ns = spawnSync("stat", ["-L", "-c", "%i", `/proc/${entry}/ns/net`], {
        encoding: "utf8",
      }).stdout.trim();
      if (nsInodes.has(ns)) found.push(`process ${entry} in a node's network namespace`);
    } catch {
      // Gone meanwhile.
    }
  }
  for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n"))
    if (line.includes(dir)) found.push(`mount ${line}`);
  const links = spawnSync("ip", ["-o", "link"], { encoding: "utf8" }).stdout;
  for (const line of links.split("\n"))
    if (new RegExp(`\\d+: (klb${block}|kl${block}n\\d+)[@:]`).test(line))
      found.push(`link ${line.slice(0, 60)}`);
  const rules = spawnSync("iptables", ["-S", "FORWARD"], { encoding: "utf8" }).stdout;
  for (const line of rules.split("\n"))
    if (line.includes(`kubeloop plane ${block}:`)) found.push(`rule ${line}`);
  for (const hierarchy of readdirSync("/sys/fs/cgroup")) {
    const path = `/sys/fs/cgroup/${hierarchy}/kubeloop/${block}`;
    if (existsSync(path)) found.push(`cgroup ${path}`);
  }
  if (existsSync(dir)) found.push(`folder ${dir}`);
  return found;
}

function blockOf(server: string): number {
  return Number(new URL(server).hostname.split(".")[1]);
}

/** A pod (sleeping, with a volume) in the plane, so that stopping has containers to end. */
async function runPod(kubeconfig: string, tools: string): Promise<void> {
  const manifest = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: data, namespace: default }
spec: { accessModes: [ReadWriteOnce], resources: { requests: { storage: 1Mi } } }
---
apiVersion: v1
kind: Pod
metadata: { name: sleeper, namespace: default }
spec:
  containers:
    - { name: main, image: ${tools}, command: [sleep, "3600"], volumeMounts: [{ name: data, mountPath: /data }] }
  volumes: [{ name: data, persistentVolumeClaim: { claimName: data } }]
`;
  const applied = await kubectl(["apply", "-f", "-"], { kubeconfig, input: manifest });
  expect(applied.code, applied.stderr).toBe(0);
  const ready = await kubectl(["wait", "--for=condition=Ready", "pod/sleeper", "--timeout=90s"], {
    kubeconfig,
  });
  expect(ready.code, ready.stderr).toBe(0);
}

describe("node profile cleanup", () => {
  it("stop() leaves no process, mount, namespace, link, rule, cgroup or folder", async () => {
    const plane = await new ControlPlane({ profile: "node" }).start();
    const block = blockOf(plane.server);
    await runPod(plane.kubeconfigPath, await plane.loadBaseImage("tools"));
    const before = traces(plane.dir, block);
    for (const kind of ["process", "netns", "link", "rule", "cgroup", "folder"])
      expect(
        before.some((line) => line.startsWith(kind)),
        `${kind} while running`,
      ).toBe(true);
    await plane.stop();
    // The plane's watchdog notices the stop within a second, and goes too.
    await eventually(() => traces(plane.dir, block).length === 0, 5_000);
    expect(traces(plane.dir, block)).toEqual([]);
  });

  it("the watchdog removes the same after an owner killed with SIGKILL", async () => {
    const child: ChildProcess = spawn(process.execPath, [holder, "wait", "node"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", resolve);
      child.once("exit", () => reject(new Error(`the plane's owner exited early:\n${stderr}`)));
    });
    const { dir, server } = JSON.parse(first) as { dir: string; server: string };
    const block = blockOf(server);
    const plane = { kubeconfig: join(dir, "kubeconfig") };
    const sockets = readdirSync(join(dir, "nodes")).map((node) =>
      join(dir, "nodes", node, "containerd.sock"),
    );
    const { baseImage, importImage } = await import("./control-plane/node-images.js");
    const { defaultAssetsRoot, ensureAssets } = await import("./assets/index.js");
    const image = baseImage("tools", defaultAssetsRoot());
    const { binaries } = await ensureAssets(["ctr"]);
    for (const socket of sockets) importImage(binaries.ctr as string, socket, image.path);
    await runPod(plane.kubeconfig, image.ref);
    expect(traces(dir, block).length).toBeGreaterThan(0);
    child.kill("SIGKILL");
    await exited;
    expect(await eventually(() => traces(dir, block).length === 0, 30_000)).toBe(true);
  });
});
