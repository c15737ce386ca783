import { readdirSync, readFileSync } from "node:fs";
import { PollTimeoutError, pollUntil } from "../src/util/index.js";

/** The pids of live processes whose command line mentions `text` (e.g. a plane's folder). */
export function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmdline.includes(text) && !cmdline.includes("kubeloop-watchdog")) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** True while `pid` runs. A zombie (ended, not yet reaped by its new parent) counts as ended. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The state follows the command name, which is in parentheses and may contain spaces.
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** Polls `check` every 100 ms until it holds or `timeoutMs` passes; returns its last answer. */
export async function eventually(check: () => boolean, timeoutMs = 15_000): Promise<boolean> {
  return pollUntil(check, { timeoutMs }).then(
    () => true,
    (error: unknown) => {
      if (error instanceof PollTimeoutError) return false;
      throw error;
    },
  );
}
