import { join } from "node:path";
import { freePort, type OperatorProcess, pollUntil, startOperator as startProcess } from "kubeloop/testing";

// Runs an operator release the way a user does (its own process, `node src/main.ts`), for the
// end-to-end tests: on free ports, with the environment its Deployment would give it.

export const root = join(import.meta.dirname, "..");

export interface Operator extends OperatorProcess {
  metricsPort: number;
}

/** Starts `entry` (relative to the example, e.g. `src/main.ts`) with `env` on top of this process's. */
export async function startOperator(entry: string, env: Record<string, string>): Promise<Operator> {
  const [metricsPort, probePort] = [await freePort(), await freePort()];
  const ports = { METRICS_PORT: String(metricsPort), PROBE_PORT: String(probePort), METRICS_SECURE: "false" };
  return Object.assign(startProcess(entry, { cwd: root, env: { ...ports, LOG_LEVEL: "info", ...env } }), {
    metricsPort,
  });
}

/** Polls `check` every 200 ms until it holds; throws naming `what` after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
): Promise<void> {
  await pollUntil(check, { timeoutMs: ms, intervalMs: 200, message: what });
}
