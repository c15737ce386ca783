import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

// `npm run demo` ended by SIGTERM to its npm process (what a process supervisor or a CI timeout
// sends): every process of it must go, the cluster it started included. The real chain runs:
// npm → bootstrap.mjs → npm run demo:run → build, assets → demo.mjs → `kubeloop cluster start`
// (a detached supervisor: etcd, kube-apiserver, controller manager, scheduler, kwok). The signal
// is sent once the cluster is up, then every process seen is waited for.

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "kubeloop-demo-signals-"));
const cli = join(root, "packages/kubeloop/dist/cli/main.js");

interface Proc {
  pid: number;
  ppid: number;
  sid: number;
  state: string;
  command: string;
}

/** Every process on the machine, from /proc. */
function processes(): Proc[] {
  const found: Proc[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // `pid (comm) state ppid pgrp session …`: comm may hold spaces and parentheses.
      const [state = "", ppid = "0", , sid = "0"] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const command = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      found.push({ pid: Number(entry), ppid: Number(ppid), sid: Number(sid), state, command });
    } catch {
      // Gone while read.
    }
  }
  return found;
}

/**
 * The processes of the demo: `top` and the cluster's supervisor (it outlives the `cluster start`
 * that made it, so it is found by its state file), their descendants, and every process in a
 * session one of them leads.
 */
function demoProcesses(top: number): Proc[] {
  const all = processes().filter((p) => p.state !== "Z");
  const mine = new Set([top]);
  const supervisor = supervisorPid();
  if (supervisor) mine.add(supervisor);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all) {
      if (!mine.has(p.pid) && (mine.has(p.ppid) || mine.has(p.sid))) {
        mine.add(p.pid);
        grew = true;
      }
    }
  }
  return all.filter((p) => mine.has(p.pid));
}

function supervisorPid(): number | undefined {
  try {
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as { pid?: number };
    return state.pid;
  } catch {
    return undefined;
  }
}

let demo: ChildProcess | undefined;
let seen: Proc[] = [];

afterAll(() => {
  // Whatever the outcome, nothing of this test stays behind.
  // (`seen` too: once the top npm has gone, its leftovers are no longer its descendants.)
  for (const p of [...seen, ...demoProcesses(demo?.pid ?? -1)]) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {}
  }
  spawnSync(process.execPath, [cli, "cluster", "stop", "--dir", dir], { stdio: "ignore" });
  rmSync(dir, { recursive: true, force: true });
});

describe("npm run demo", () => {
  it("leaves no process behind when its npm process gets SIGTERM", async () => {
    let output = "";
    demo = spawn("npm", ["run", "demo", "--", "--dir", dir], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      // The suite runs from the installed workspace: an `npm ci` now would remove it from under us.
      env: { ...process.env, KUBELOOP_SKIP_INSTALL: "1" },
    });
    demo.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    demo.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => demo?.on("exit", (code) => resolve(code)));

    // The cluster is up once its nodes are listed and the next step begins.
    await waitFor(
      () => output.includes("Install the Nginx CRD"),
      50_000,
      () => `the demo's cluster\n${output}`,
    );
    seen = demoProcesses(demo.pid ?? -1);
    const commands = seen.map((p) => p.command).join("\n");
    // What is about to be checked: the chain and the cluster are there.
    expect(commands).toMatch(/bootstrap\.mjs demo/);
    expect(commands).toMatch(/demo\.mjs/);
    expect(commands).toMatch(/kube-apiserver/);
    expect(commands).toMatch(/etcd/);

    process.kill(demo.pid ?? -1, "SIGTERM");
    await exited;
    const alive = () => {
      const now = new Set(demoProcesses(demo?.pid ?? -1).map((p) => p.pid));
      for (const p of seen) if (isAlive(p.pid)) now.add(p.pid);
      return processes().filter((p) => now.has(p.pid) && p.state !== "Z");
    };
    await waitFor(
      () => alive().length === 0,
      30_000,
      () =>
        `processes left:\n${alive()
          .map((p) => `${p.pid} ${p.command}`)
          .join("\n")}`,
    );
    expect(alive()).toEqual([]);
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
