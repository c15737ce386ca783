import { join } from "node:path";
import {
  freePort,
  kubectl,
  type OperatorProcess,
  pollUntil,
  startOperator as startProcess,
} from "kubeloop/testing";

// Runs the operator the way a user does (`npm start`'s command, its own process), for the
// end-to-end tests: on free ports, with the environment its Deployment would give it.

export const root = join(import.meta.dirname, "..");

export interface Operator extends OperatorProcess {
  metricsPort: number;
  probePort: number;
}

/**
 * Starts `node src/main.ts` with `env` (KUBECONFIG at least) on top of this process's environment,
 * its metrics and probes on free ports.
 */
export async function startOperator(env: Record<string, string>): Promise<Operator> {
  const metricsPort = await freePort();
  const probePort = await freePort();
  const operator = startProcess("src/main.ts", {
    cwd: root,
    env: { METRICS_PORT: String(metricsPort), PROBE_PORT: String(probePort), LOG_LEVEL: "info", ...env },
    // The Manager's 30 s for reconciles in flight, then the rest of its shutdown: a SIGKILL before
    // that would hide what the shutdown waited for (its warnings name the step).
    stopGraceMs: 60_000,
  });
  return Object.assign(operator, { metricsPort, probePort });
}

/** Polls `check` every 200 ms until it holds; throws naming `what` after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
): Promise<void> {
  await pollUntil(check, { timeoutMs: ms, intervalMs: 200, message: what });
}

/**
 * Creates `namespace`, applies the sample Nginx (config/samples/nginx.yaml, 3 replicas) there as a
 * user would, and waits until `operator` reports it Ready.
 */
export async function applySampleUntilReady(
  kubeconfig: string,
  namespace: string,
  ms: number,
  operator: OperatorProcess,
): Promise<void> {
  const k = (args: string[]) => kubectl(["-n", namespace, ...args], { kubeconfig });
  for (const args of [
    ["create", "namespace", namespace],
    ["apply", "-f", join(root, "config/samples/nginx.yaml")],
  ]) {
    const result = await k(args);
    if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${result.stderr}`);
  }
  const ready = async () =>
    (await k(["get", "nginx", "web", "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']))
      .stdout;
  await operator.waitUntil(async () => (await ready()) === "True", {
    timeoutMs: ms,
    intervalMs: 200,
    message: `the sample Nginx in ${namespace} to be Ready`,
  });
}
