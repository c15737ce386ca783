import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { heapFlags, memoryLimit } from "./launcher.js";

const MIB = 2 ** 20;
const LAUNCHER = join(import.meta.dirname, "../../../dist/cli/image/launcher.js");
const scratch = mkdtempSync(join(tmpdir(), "kubeloop-launcher-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// The operator the launcher runs: prints the flags its node got and its heap limit.
const probe = join(scratch, "probe.mjs");
writeFileSync(
  probe,
  `import { getHeapStatistics } from "node:v8";
console.log(JSON.stringify({ execArgv: process.execArgv, argv: process.argv.slice(2), heapLimit: getHeapStatistics().heap_size_limit }));`,
);

function launch(env: Record<string, string>, prefix: string[] = []) {
  const [command = "", ...args] = [...prefix, process.execPath, LAUNCHER, probe, "--flag"];
  const run = spawnSync(command, args, { encoding: "utf8", env: { PATH: process.env.PATH, ...env } });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { execArgv: string[]; argv: string[]; heapLimit: number };
}

describe("heap flags", () => {
  it("cap the young generation always, and the old one at 75% of a memory limit", () => {
    expect(heapFlags(undefined)).toEqual(["--max-semi-space-size=4"]);
    expect(heapFlags(512 * MIB)).toEqual(["--max-semi-space-size=4", "--max-old-space-size=384"]);
    expect(heapFlags(2048 * MIB)).toEqual(["--max-semi-space-size=4", "--max-old-space-size=1536"]);
    expect(heapFlags(64 * MIB)).toEqual(["--max-semi-space-size=4", "--max-old-space-size=64"]);
  });

  it("leave alone every heap flag the user set, in NODE_OPTIONS or on node's command line", () => {
    expect(heapFlags(512 * MIB, "--max-old-space-size=200")).toEqual(["--max-semi-space-size=4"]);
    expect(heapFlags(512 * MIB, "--enable-source-maps --max_semi_space_size=16")).toEqual([
      "--max-old-space-size=384",
    ]);
    expect(heapFlags(512 * MIB, "", ["--max-semi-space-size", "2"])).toEqual(["--max-old-space-size=384"]);
    expect(heapFlags(512 * MIB, "--max-heap-size=300")).toEqual([]);
    // A flag that only starts the same is not the same flag.
    expect(heapFlags(undefined, "--max-semi-space-size-x=1")).toEqual(["--max-semi-space-size=4"]);
  });

  it("read the limit from the downward API first, else the cgroup's, and none when it is the machine's", () => {
    expect(memoryLimit({ KUBELOOP_MEMORY_LIMIT: String(256 * MIB) }, 0, 24 * 1024 * MIB)).toBe(256 * MIB);
    expect(memoryLimit({}, 300 * MIB, 24 * 1024 * MIB)).toBe(300 * MIB);
    expect(memoryLimit({}, 0, 24 * 1024 * MIB)).toBeUndefined();
    expect(memoryLimit({}, 2 ** 63, 24 * 1024 * MIB)).toBeUndefined();
    expect(memoryLimit({ KUBELOOP_MEMORY_LIMIT: "" }, 2 ** 44, 24 * 1024 * MIB)).toBeUndefined();
  });
});

describe("the launcher", () => {
  it("execs node with the flags, its own node flags and the operator's arguments", () => {
    const run = launch({ KUBELOOP_MEMORY_LIMIT: String(512 * MIB) });
    expect(run.execArgv).toEqual(["--max-semi-space-size=4", "--max-old-space-size=384"]);
    expect(run.argv).toEqual(["--flag"]);
    expect(run.heapLimit).toBeLessThan(450 * MIB);
  });

  it("keeps the user's NODE_OPTIONS heap flags and adds only the others", () => {
    const run = launch({
      KUBELOOP_MEMORY_LIMIT: String(512 * MIB),
      NODE_OPTIONS: "--max-old-space-size=100",
    });
    expect(run.execArgv).toEqual(["--max-semi-space-size=4"]);
    expect(run.heapLimit).toBeLessThan(150 * MIB);
  });

  it("sizes the heap from a real memory cgroup (v1 or v2) when the downward API says nothing", () => {
    const cgroup = ownMemoryCgroup();
    if (!cgroup) return; // not root, or no writable memory controller here
    const child = join(cgroup.dir, `kubeloop-launcher-${process.pid}`);
    mkdirSync(child);
    try {
      writeFileSync(join(child, cgroup.limitFile), String(256 * MIB));
      const run = launch({}, ["sh", "-c", `echo $$ > ${join(child, "cgroup.procs")}; exec "$@"`, "sh"]);
      expect(run.execArgv).toEqual(["--max-semi-space-size=4", "--max-old-space-size=192"]);
    } finally {
      rmdirSync(child);
    }
  });
});

/** This process's memory cgroup folder and the file of its limit, if it may make one under it. */
function ownMemoryCgroup(): { dir: string; limitFile: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lines = readFileSync("/proc/self/cgroup", "utf8").trim().split("\n");
  const v1 = lines.find((l) => l.split(":")[1]?.split(",").includes("memory"));
  if (v1) {
    const dir = join("/sys/fs/cgroup/memory", v1.split(":")[2] ?? "/");
    return existsSync(join(dir, "memory.limit_in_bytes"))
      ? { dir, limitFile: "memory.limit_in_bytes" }
      : undefined;
  }
  const v2 = lines.find((l) => l.startsWith("0::"));
  const dir = join("/sys/fs/cgroup", v2?.slice(3) ?? "/");
  const controllers = join(dir, "cgroup.subtree_control");
  return existsSync(controllers) && readFileSync(controllers, "utf8").includes("memory")
    ? { dir, limitFile: "memory.max" }
    : undefined;
}
