import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { pollUntil } from "kubeloop/testing";

// Runs an operator release the way a user does (its own process, `node src/main.ts`), for the
// end-to-end tests: on free ports, with the environment its Deployment would give it.

export const root = join(import.meta.dirname, "..");
const started: ChildProcess[] = [];

export interface Operator {
  process: ChildProcess;
  metricsPort: number;
  output: () => string;
  /** The JSON log lines, parsed. */
  logs: () => Record<string, unknown>[];
  exited: Promise<number | null>;
  /** SIGTERM, then waits for the exit (a graceful stop releases the Lease). */
  stop: () => Promise<number | null>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Starts `entry` (relative to the example, e.g. `src/main.ts`) with `env` on top of this process's. */
export async function startOperator(entry: string, env: Record<string, string>): Promise<Operator> {
  const metricsPort = await freePort();
  const probePort = await freePort();
  const child = spawn(process.execPath, [join(root, entry)], {
    env: {
      ...process.env,
      METRICS_PORT: String(metricsPort),
      PROBE_PORT: String(probePort),
      METRICS_SECURE: "false",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const logs = () =>
    output
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const stop = async () => {
    child.kill("SIGTERM");
    return exited;
  };
  return { process: child, metricsPort, output: () => output, logs, exited, stop };
}

/** Kills every operator started here (for afterAll: none may outlive its test file). */
export function killOperators(): void {
  for (const child of started.splice(0)) child.kill("SIGKILL");
}

/**
 * Polls `check` every 200 ms until it holds; throws naming `what` after `ms`, with the end of
 * `operator`'s output when one is given (why a release did not get there).
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
  operator?: Operator,
): Promise<void> {
  await pollUntil(check, { timeoutMs: ms, intervalMs: 200, message: what }).catch((error: Error) => {
    if (!operator) throw error;
    throw new Error(`${error.message}\nits output ends:\n${operator.output().slice(-4000)}`, {
      cause: error,
    });
  });
}
