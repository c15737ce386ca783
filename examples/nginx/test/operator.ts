import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { pollUntil } from "kubeloop/testing";

// Runs the operator the way a user does (`npm start`'s command, its own process), for the
// end-to-end tests: on free ports, with the environment its Deployment would give it.

export const root = join(import.meta.dirname, "..");
const started: ChildProcess[] = [];

export interface Operator {
  process: ChildProcess;
  metricsPort: number;
  probePort: number;
  output: () => string;
  exited: Promise<number | null>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Starts `node src/main.ts` with `env` (KUBECONFIG at least) on top of this process's environment. */
export async function startOperator(env: Record<string, string>): Promise<Operator> {
  const metricsPort = await freePort();
  const probePort = await freePort();
  const child = spawn(process.execPath, [join(root, "src/main.ts")], {
    env: {
      ...process.env,
      METRICS_PORT: String(metricsPort),
      PROBE_PORT: String(probePort),
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
  return { process: child, metricsPort, probePort, output: () => output, exited };
}

/** Kills every operator started here (for afterAll: none may outlive its test file). */
export function killOperators(): void {
  for (const child of started.splice(0)) child.kill("SIGKILL");
}

/** Polls `check` every 200 ms until it holds; throws naming `what` after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
): Promise<void> {
  await pollUntil(check, { timeoutMs: ms, intervalMs: 200, message: what });
}
