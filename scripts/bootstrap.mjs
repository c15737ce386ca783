// The README's two commands start here: `npm test` and `npm run demo` on a fresh clone.
// This file runs on whatever Node the machine has (even one past end of life), so it is plain
// JavaScript with no dependencies. It installs the workspace when package-lock.json changed since
// the last install (that brings the pinned Node 24 into node_modules/.bin), then hands over to
// `npm run <task>:run`, which npm runs with node_modules/.bin first on PATH: on Node 24.
import { spawnSync } from "node:child_process";
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

if (installed !== wanted || !existsSync(pinnedNode)) {
  console.error("[kubeloop] installing the workspace (npm ci)…");
  const install = spawnSync(npm, ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit" });
  if (install.status !== 0) {
    console.error("[kubeloop] npm ci failed; see the output above. The npm registry must be reachable.");
    process.exit(install.status ?? 1);
  }
  writeFileSync(stamp, `${wanted}\n`);
}

ensureSystemPackages(task);

const run = spawnSync(npm, ["run", "--silent", `${task}:run`, ...(args.length ? ["--", ...args] : [])], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH ?? ""}` },
});
process.exit(run.status ?? (run.signal ? 1 : 0));
