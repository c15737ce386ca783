import { spawn } from "node:child_process";

/**
 * Makes sure a control plane never outlives its owner, however the owner ends:
 *
 * - a normal `stop()` ends every process and removes its folder;
 * - a thrown error, `process.exit()` or a signal (SIGINT, SIGTERM, SIGHUP) runs the synchronous
 *   handlers below, which kill the processes and remove the folders before the owner goes;
 * - a SIGKILL (or an OOM kill) runs no handler at all, so each plane also gets a watchdog: a tiny
 *   shell loop that notices the owner is gone and cleans up after it.
 */

export interface Disposable {
  /** Kills everything at once and removes what it can; synchronous, for exit handlers. */
  disposeNow(): void;
}

const live = new Set<Disposable>();
let exitHandlerInstalled = false;
let signalHandlersInstalled = false;
const SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

export function track(item: Disposable, handleSignals: boolean): void {
  live.add(item);
  if (!exitHandlerInstalled) {
    exitHandlerInstalled = true;
    process.on("exit", disposeAll);
  }
  if (handleSignals && !signalHandlersInstalled) {
    signalHandlersInstalled = true;
    for (const signal of SIGNALS) process.on(signal, onSignal);
  }
}

export function untrack(item: Disposable): void {
  live.delete(item);
}

function disposeAll(): void {
  for (const item of live) {
    try {
      item.disposeNow();
    } catch {
      // Best effort: an exit handler must not throw.
    }
  }
  live.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  disposeAll();
  // If we are the only listener, the process would otherwise ignore the signal: restore the default
  // behaviour and re-raise it, so the owner ends as it would have without us.
  if (process.listenerCount(signal) === 1) {
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    signalHandlersInstalled = false;
    process.kill(process.pid, signal);
  }
}

/**
 * The watchdog's script. Arguments: owner pid, the pid file, and the folders to remove.
 * It exits quietly once the pid file is gone (the owner stopped the plane itself).
 */
const WATCHDOG = `
owner="$1"; pids="$2"; shift 2
while kill -0 "$owner" 2>/dev/null && [ -f "$pids" ]; do sleep 1; done
[ -f "$pids" ] || exit 0
for p in $(cat "$pids"); do kill -TERM "$p" 2>/dev/null; done
sleep 2
for p in $(cat "$pids"); do kill -KILL "$p" 2>/dev/null; done
[ -n "$KUBELOOP_TEARDOWN" ] && [ -f "$KUBELOOP_TEARDOWN" ] && sh "$KUBELOOP_TEARDOWN"
rm -f "$pids"
for d in "$@"; do rm -rf "$d"; done
`;

/** Starts a watchdog for a plane whose process ids are listed, one a line, in `pidFile`. */
export function startWatchdog(pidFile: string, removeOnOrphan: string[], teardownScript?: string): void {
  const child = spawn(
    "sh",
    ["-c", WATCHDOG, "kubeloop-watchdog", String(process.pid), pidFile, ...removeOnOrphan],
    {
      detached: true,
      stdio: "ignore",
      env: { ...process.env, KUBELOOP_TEARDOWN: teardownScript ?? "" },
    },
  );
  child.on("error", () => {
    // No `sh` on this machine: the exit handlers still cover every ending but SIGKILL.
  });
  child.unref();
}
