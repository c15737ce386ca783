import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { eventually, isAlive, processesMentioning } from "../../test/processes.js";
import { ControlPlane } from "./control-plane.js";

const holder = join(import.meta.dirname, "../../test/scripts/hold-plane.mjs");

interface Held {
  child: ChildProcess;
  dir: string;
  pids: number[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

/** Runs a separate Node process that owns a control plane, and waits until the plane is up. */
async function holdPlane(mode: "throw" | "wait", profile = "apiserver"): Promise<Held> {
  const child = spawn(process.execPath, [holder, mode, profile], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", () => reject(new Error(`the plane's owner exited early:\n${stderr}`)));
  });
  const { dir, pids } = JSON.parse(first) as { dir: string; pids: number[] };
  return { child, dir, pids, exited, stderr: () => stderr };
}

describe("ControlPlane cleanup", () => {
  it("leaves no process and no folder after stop()", async () => {
    const plane = await new ControlPlane().start();
    const dir = plane.dir;
    const pids = plane.components.map((c) => c.pid as number);
    expect(pids.every(isAlive)).toBe(true);
    expect(processesMentioning(dir).length).toBeGreaterThanOrEqual(2);
    await plane.stop();
    expect(pids.filter(isAlive)).toEqual([]);
    expect(existsSync(dir)).toBe(false);
    expect(processesMentioning(dir)).toEqual([]);
    await plane.stop(); // a second stop is harmless
  });

  it("stops the plane of a process that dies of an uncaught exception", async () => {
    const held = await holdPlane("throw");
    const exit = await held.exited;
    expect(exit.code).toBe(1);
    expect(held.stderr()).toContain("the test failed");
    // The exit handler sends SIGKILL on its way out; the kernel finishes the job a moment later.
    expect(await eventually(() => held.pids.every((pid) => !isAlive(pid)))).toBe(true);
    expect(existsSync(held.dir)).toBe(false);
  });

  it("stops the plane of a process ended by SIGTERM, which still ends by that signal", async () => {
    const held = await holdPlane("wait");
    held.child.kill("SIGTERM");
    const exit = await held.exited;
    expect(exit.signal).toBe("SIGTERM");
    expect(await eventually(() => held.pids.every((pid) => !isAlive(pid)))).toBe(true);
    expect(existsSync(held.dir)).toBe(false);
  });

  it("has a watchdog clean up after an owner killed with SIGKILL", async () => {
    const held = await holdPlane("wait", "cluster");
    expect(held.pids).toHaveLength(5);
    held.child.kill("SIGKILL");
    await held.exited;
    expect(await eventually(() => held.pids.every((pid) => !isAlive(pid)))).toBe(true);
    expect(await eventually(() => !existsSync(held.dir))).toBe(true);
  });

  it("supports `await using`, stopping when the scope ends", async () => {
    let dir = "";
    {
      await using plane = await new ControlPlane().start();
      dir = plane.dir;
      expect(existsSync(dir)).toBe(true);
    }
    expect(existsSync(dir)).toBe(false);
  });
});
