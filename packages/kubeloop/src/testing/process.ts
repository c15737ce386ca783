import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync, type WriteStream, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWatchdog, track, untrack } from "./cleanup.js";
import { quoteLog } from "./errors.js";
import { waitFor } from "./wait.js";

/**
 * The processes the test kit runs (the control plane's components, PostgreSQL, Prometheus):
 *
 * - {@link ManagedProcess}: one long-running process. Its output goes to a log file and a short
 *   in-memory tail (for error messages), its exit is a promise, and stopping it escalates from
 *   SIGTERM to SIGKILL so a stuck process never hangs a test run.
 * - {@link ProcessGroup}: the processes of one server, which never outlive their owner: a pid file
 *   for the watchdog, exit and signal handlers, waits that fail at once when a process died, fresh
 *   starts when a port was taken, and stopping in order, once.
 */

export interface ProcessSpec {
  /** The component's name in messages and log file names, e.g. `kube-apiserver`. */
  name: string;
  binary: string;
  args: string[];
  logPath: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Run as this user and group (e.g. PostgreSQL, which refuses to run as root). */
  uid?: number;
  gid?: number;
  /** The signal `stop()` sends first. Default SIGTERM (PostgreSQL's fast shutdown is SIGINT). */
  stopSignal?: NodeJS.Signals;
  /** How long `stop()` waits for the process to end before SIGKILL. Default {@link STOP_GRACE_MS}. */
  stopGraceMs?: number;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the binary could not be started at all (missing, not executable, not a program). */
  error?: NodeJS.ErrnoException;
}

const TAIL_LINES = 60;
/** How long a component gets to shut down cleanly before it is killed. */
export const STOP_GRACE_MS = 10_000;

export class ManagedProcess {
  readonly name: string;
  readonly binary: string;
  readonly logPath: string;
  readonly exited: Promise<Exit>;
  private readonly spec: ProcessSpec;
  private readonly child: ChildProcess;
  private readonly log: WriteStream;
  private readonly stopSignal: NodeJS.Signals;
  private readonly lines: string[] = [];
  private partial = "";
  private exit: Exit | undefined;

  constructor(spec: ProcessSpec) {
    this.spec = spec;
    this.name = spec.name;
    this.binary = spec.binary;
    this.logPath = spec.logPath;
    this.stopSignal = spec.stopSignal ?? "SIGTERM";
    this.log = createWriteStream(spec.logPath, { flags: "a" });
    // Own process group: a Ctrl-C in the terminal reaches us, and we stop the plane in order.
    this.child = spawn(spec.binary, spec.args, {
      cwd: spec.cwd,
      env: spec.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      ...(spec.uid === undefined ? {} : { uid: spec.uid }),
      ...(spec.gid === undefined ? {} : { gid: spec.gid }),
    });
    this.child.stdout?.on("data", (chunk: Buffer) => this.record(chunk));
    this.child.stderr?.on("data", (chunk: Buffer) => this.record(chunk));
    this.exited = new Promise((resolve) => {
      this.child.once("error", (error: NodeJS.ErrnoException) => {
        this.exit = { code: null, signal: null, error };
        resolve(this.exit);
      });
      this.child.once("close", (code, signal) => {
        this.exit ??= { code, signal };
        this.log.end();
        resolve(this.exit);
      });
    });
    // The plane's owner, not these handles, decides when the Node process may exit.
    this.child.unref();
    (this.child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    (this.child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get hasExited(): boolean {
    return this.exit !== undefined;
  }

  get exitStatus(): Exit | undefined {
    return this.exit;
  }

  /** The same process again (same binary, flags and log file, which it appends to). */
  respawn(): ManagedProcess {
    return new ManagedProcess(this.spec);
  }

  /** The last lines the process printed. */
  tail(count = 30): string {
    const lines = this.partial ? [...this.lines, this.partial] : this.lines;
    return lines.slice(-count).join("\n");
  }

  /** Describes how the process ended, for error messages. */
  describeExit(): string {
    const exit = this.exit;
    if (!exit) return "is still running";
    if (exit.error) return `could not be started (${exit.error.code ?? exit.error.message})`;
    if (exit.signal) return `was killed by ${exit.signal}`;
    return `exited with code ${exit.code}`;
  }

  /**
   * Says that the process ended while the owner was `doing` something, with its last log lines:
   * the body of the error a waiting owner throws.
   */
  describeFailure(doing: string, lines = 25): string {
    const tail = this.tail(lines);
    return (
      `${this.name} ${this.describeExit()} while ${doing}.` +
      (tail ? `\nLast lines of ${this.logPath}:\n${quoteLog(tail)}` : ` Its log (${this.logPath}) is empty.`)
    );
  }

  /** The stop signal (SIGTERM by default), then SIGKILL after `graceMs`. Resolves once the process is gone. */
  async stop(graceMs = this.spec.stopGraceMs ?? STOP_GRACE_MS): Promise<void> {
    if (this.exit) return;
    this.signal(this.stopSignal);
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.signal("SIGKILL");
        resolve();
      }, graceMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    await this.exited;
  }

  /** For exit handlers, where nothing asynchronous runs any more. */
  killNow(): void {
    if (!this.exit) this.signal("SIGKILL");
  }

  private signal(signal: NodeJS.Signals): void {
    try {
      this.child.kill(signal);
    } catch {
      // Already gone: nothing to stop.
    }
  }

  private record(chunk: Buffer): void {
    this.log.write(chunk);
    const text = this.partial + chunk.toString("utf8");
    const lines = text.split("\n");
    this.partial = lines.pop() ?? "";
    for (const line of lines) this.lines.push(line);
    if (this.lines.length > TAIL_LINES * 2) this.lines.splice(0, this.lines.length - TAIL_LINES);
  }
}

/** What a bind failure looks like in the logs of the servers the test kit runs (Go's, PostgreSQL's). */
export const PORT_TAKEN = /address already in use|could not bind|could not create any TCP\/IP sockets/i;

/** A fresh folder under the system temp dir, e.g. `tempDir("kubeloop-pg-")`. */
export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface ProcessGroupOptions {
  /** The file listing the group's pids for the watchdog; its removal tells the watchdog all is done. */
  pidFile: string;
  /** What the watchdog removes when the owner dies (SIGKILL) without cleaning up. */
  removeOnOrphan: string[];
  /** Removes the owner's files; synchronous, as exit handlers call it too. */
  removeFiles: () => void;
  /**
   * A shell script the watchdog runs (when it exists) before removing the folders: what the owner's
   * `removeFiles` would have undone beyond files (real nodes' namespaces, links, rules, cgroups).
   */
  teardownScript?: string;
  /** Kill the group on SIGINT/SIGTERM/SIGHUP before the owner goes. Default true. */
  handleSignals?: boolean;
  /**
   * The order `stopAll()` stops the processes in: waves, each stopped together, the next after.
   * Default: the reverse of the start order, one at a time.
   */
  stopOrder?: (processes: readonly ManagedProcess[]) => ManagedProcess[][];
}

export interface WaitUntilOptions {
  timeoutMs: number;
  /** The error to throw when a process of the group has exited while we waited. */
  failure: (dead: ManagedProcess) => Error;
}

/**
 * The processes of one server the test kit runs, and the guarantee that none outlives its owner:
 * created with the owner's folder, it writes the pid file, starts the watchdog (for SIGKILL) and
 * registers the exit and signal handlers; `close()` stops everything and removes the files, once.
 *
 * @example
 * ```ts
 * const group = new ProcessGroup({ pidFile, removeOnOrphan: [dir], removeFiles });
 * group.spawn({ name: "prometheus", binary, args, logPath });
 * await group.waitUntil("Prometheus to be ready", isReady, { timeoutMs: 30_000, failure });
 * await group.close(); // also on an exception, process.exit(), a signal; the watchdog after SIGKILL
 * ```
 */
export class ProcessGroup {
  private processes: ManagedProcess[] = [];
  private closing: Promise<void> | undefined;
  private readonly disposable = { disposeNow: () => this.killNow() };

  constructor(private readonly options: ProcessGroupOptions) {
    writeFileSync(options.pidFile, "");
    startWatchdog(options.pidFile, options.removeOnOrphan, options.teardownScript);
    track(this.disposable, options.handleSignals ?? true);
  }

  /** The processes started and not stopped, in start order. */
  get running(): readonly ManagedProcess[] {
    return this.processes;
  }

  /** Starts a process of the group. */
  spawn(spec: ProcessSpec): ManagedProcess {
    const started = new ManagedProcess(spec);
    this.processes.push(started);
    this.writePids();
    return started;
  }

  /** Stops `old` and starts it again in its place (its place in the stop order too). */
  async restart(old: ManagedProcess): Promise<ManagedProcess> {
    await old.stop();
    const fresh = old.respawn();
    this.processes = this.processes.map((p) => (p === old ? fresh : p));
    this.writePids();
    return fresh;
  }

  /**
   * Polls `check` (see {@link waitFor}) and fails at once with `failure(dead)` when a process of the
   * group exits meanwhile: a dead server is never waited on for the whole timeout.
   */
  waitUntil(what: string, check: () => Promise<boolean>, options: WaitUntilOptions): Promise<void> {
    return waitFor(what, check, {
      timeoutMs: options.timeoutMs,
      abortIf: () => {
        const dead = this.processes.find((p) => p.hasExited);
        if (dead) throw options.failure(dead);
      },
    });
  }

  /**
   * Runs `startOnce` up to `attempts` times: another process may take a free port between our
   * check and the server's bind, which the log shows ({@link PORT_TAKEN}); then everything is
   * stopped and started again on fresh ports. Any other failure stops the group's processes and
   * is thrown.
   */
  async startRetryingPortClashes(attempts: number, startOnce: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await startOnce();
        return;
      } catch (error) {
        const portTaken = this.processes.some((p) => PORT_TAKEN.test(p.tail(60)));
        await this.stopAll();
        if (portTaken && attempt < attempts) continue;
        throw error;
      }
    }
  }

  /** Stops every process in the group's stop order; the files stay. */
  async stopAll(): Promise<void> {
    const waves = this.options.stopOrder?.(this.processes) ?? [...this.processes].reverse().map((p) => [p]);
    for (const wave of waves) await Promise.all(wave.map((p) => p.stop()));
    // A process the stop order forgot is stopped too, rather than left running.
    await Promise.all(this.processes.map((p) => p.stop()));
    this.processes = [];
    this.writePids();
  }

  /** Stops every process and removes the files, once: later calls return the same promise. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.stopAll();
      this.removeFiles();
      untrack(this.disposable);
    })();
    return this.closing;
  }

  /** For exit handlers: SIGKILL to every process, then the files, synchronously. */
  private killNow(): void {
    for (const p of this.processes) p.killNow();
    this.processes = [];
    try {
      this.removeFiles();
    } catch {
      // Best effort in an exit handler; the watchdog finishes the job.
    }
  }

  private removeFiles(): void {
    this.options.removeFiles();
    rmSync(this.options.pidFile, { force: true }); // the watchdog's sign that we cleaned up ourselves
  }

  private writePids(): void {
    const pids = this.processes.map((p) => p.pid).filter((pid): pid is number => pid !== undefined);
    try {
      writeFileSync(this.options.pidFile, pids.map((pid) => `${pid}\n`).join(""));
    } catch {
      // The folder is already gone (closed).
    }
  }
}
