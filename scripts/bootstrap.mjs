// The README's two commands start here: `npm test` and `npm run demo` on a fresh clone.
// This file runs on whatever Node the machine has (even one past end of life), so it is plain
// JavaScript with no dependencies. It installs the workspace when package-lock.json changed since
// the last install (that brings the pinned Node 24 into node_modules/.bin), then hands over to
// `npm run <task>:run`, which npm runs with node_modules/.bin first on PATH: on Node 24.
//
// Signals: package.json runs this file with `exec`, so the signal npm forwards (SIGTERM from a
// process supervisor or a CI timeout, SIGINT, SIGHUP) reaches it. The task runs in a process
// group of its own, and a signal is passed to that whole group: npm's shell does not forward
// one to the command it runs (`npm run build && … && node scripts/demo.mjs`), so signalling npm
// alone would leave the task running. The task's own handlers clean up (the demo stops its
// cluster), and this process exits once the task has.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureSystemPackages } from "./system-packages.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const [task, ...args] = process.argv.slice(2);
if (!task) {
  console.error("usage: node scripts/bootstrap.mjs <task> [args…]");
  process.exit(2);
}

const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const lock = join(root, "package-lock.json");
const stamp = join(root, "node_modules", ".kubeloop-install");
const wanted = createHash("sha256").update(readFileSync(lock)).digest("hex");
const installed = existsSync(stamp) ? readFileSync(stamp, "utf8").trim() : "";
const pinnedNode = join(root, "node_modules", ".bin", "node");

// KUBELOOP_SKIP_INSTALL=1: the workspace is known to be installed (a test of this chain runs from
// inside the installed workspace; an install there would pull node_modules from under it).
const skipInstall = process.env.KUBELOOP_SKIP_INSTALL === "1" && existsSync(pinnedNode);
if (!skipInstall && (installed !== wanted || !existsSync(pinnedNode))) {
  console.error("[kubeloop] installing the workspace (npm ci)…");
  const install = spawnSync(npm, ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit" });
  if (install.status !== 0) {
    console.error("[kubeloop] npm ci failed; see the output above. The npm registry must be reachable.");
    process.exit(install.status ?? 1);
  }
  writeFileSync(stamp, `${wanted}\n`);
}

ensureSystemPackages(task);

const run = spawn(npm, ["run", "--silent", `${task}:run`, ...(args.length ? ["--", ...args] : [])], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH ?? ""}` },
  // Its own process group (a new session, as Node makes it): one kill reaches every process of it.
  detached: process.platform !== "win32",
});
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => {
    try {
      if (process.platform === "win32") run.kill(signal);
      else process.kill(-run.pid, signal);
    } catch {
      // The group is already gone.
    }
  });
}
run.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
