import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";

/**
 * A cross-process lock for the asset builds: `mkdir` is atomic, so whoever creates the folder holds
 * the lock; the holder's pid and host inside it let a waiter take over from a holder that died.
 *
 * Why not proper-lockfile: it installs process-wide signal handlers (signal-exit) as soon as it is
 * imported, which stopped a control plane's owner from exiting on SIGTERM. Locks here are taken by
 * processes on one machine, so "is the holder's pid alive" is an exact staleness test, better than
 * proper-lockfile's mtime heuristic for a build that can run quiet for minutes.
 */

export interface Lock {
  release(): void;
}

const POLL_MS = 500;

/** Takes the lock at `path` (a folder), calling `onWait` once if another process holds it. */
export async function acquireLock(path: string, onWait: (holder: string) => void): Promise<Lock> {
  let waited = false;
  for (;;) {
    try {
      mkdirSync(path);
      writeFileSync(join(path, "owner"), `${process.pid}@${hostname()}\n`);
      return { release: () => rmSync(path, { recursive: true, force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = readHolder(path);
    if (holder && holder.host === hostname() && !isProcessAlive(holder.pid)) {
      // The holder died mid-build; its scratch output is discarded by the next build anyway.
      rmSync(path, { recursive: true, force: true });
      continue;
    }
    if (!waited) {
      waited = true;
      onWait(holder ? `pid ${holder.pid} on ${holder.host}` : "another process");
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function readHolder(path: string): { pid: number; host: string } | undefined {
  try {
    const [pid, host] = readFileSync(join(path, "owner"), "utf8").trim().split("@");
    return pid && host ? { pid: Number(pid), host } : undefined;
  } catch {
    return undefined; // Just created, owner not written yet: treat as held.
  }
}

/**
 * True while a process with this pid exists (EPERM: it exists but belongs to another user).
 *
 * @internal for the CLI and the control plane's process group.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
