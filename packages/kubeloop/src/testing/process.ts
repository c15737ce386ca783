import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";

/**
 * One long-running control-plane process: its output goes to a log file and a short in-memory
 * tail (for error messages), its exit is a promise, and stopping it escalates from SIGTERM to
 * SIGKILL so a stuck process never hangs a test run.
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
  private readonly child: ChildProcess;
  private readonly log: WriteStream;
  private readonly stopSignal: NodeJS.Signals;
  private readonly lines: string[] = [];
  private partial = "";
  private exit: Exit | undefined;

  constructor(spec: ProcessSpec) {
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

  /** The stop signal (SIGTERM by default), then SIGKILL after `graceMs`. Resolves once the process is gone. */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
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

/** True while a process with this pid exists (EPERM: it exists but belongs to another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
