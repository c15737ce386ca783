import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { type ControlPlane, kubectl, pollUntil } from "kubeloop/testing";
import { defaultAssetsRoot } from "kubeloop/testing/assets";
import { expect } from "vitest";
import { root } from "./operator.ts";

// The MyApp operator as its users install it: its image from `kubeloop build`, loaded into a
// node-profile plane, installed by `kubeloop deploy`; kubectl and containerd's client against it.

export const NS = "myapp-operator-system";
export const DEPLOYMENT = "myapp-operator";
const cli = join(root, "../../packages/kubeloop/dist/cli/main.js");
const execAsync = promisify(execFile);

/** Runs kubeloop's CLI in the example's folder; its stdout and stderr. */
export async function kubeloop(
  args: string[],
  kubeconfig?: string,
): Promise<{ stdout: string; stderr: string }> {
  return execAsync(process.execPath, [cli, ...args], {
    cwd: root,
    env: { ...process.env, ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}) },
    timeout: 300_000,
  });
}

/** kubectl against `plane`, failing the test (with its stderr) unless it succeeds. */
export function kubectlOn(plane: ControlPlane) {
  const k = async (args: string[], input?: string) => {
    const result = await kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
    expect(result.code, `kubectl ${args.join(" ")}\n${result.stderr}`).toBe(0);
    return result.stdout;
  };
  return {
    k,
    /** `-o jsonpath=…` of `args`. */
    get: (args: string[], path: string) => k([...args, "-o", `jsonpath=${path}`]),
    apply: (manifest: unknown) => k(["apply", "-f", "-"], JSON.stringify(manifest)),
  };
}

/** Polls `check` every 250 ms until it holds; throws naming `what` after `ms`. */
export async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  await pollUntil(check, { timeoutMs: ms, intervalMs: 250, message: what });
}

/** The host's pid of a container's main process (`containerd://<id>` from the pod's status). */
export function containerPid(plane: ControlPlane, containerId: string): number {
  const ctr = join(defaultAssetsRoot(), "containerd-v2.3.4", "ctr");
  const id = containerId.replace(/^containerd:\/\//, "");
  for (const socket of plane.containerRuntimeSockets) {
    const tasks = execFileSync(ctr, ["--address", socket, "-n", "k8s.io", "tasks", "ls"], {
      encoding: "utf8",
    });
    const line = tasks.split("\n").find((row) => row.startsWith(`${id} `));
    if (line) return Number(line.trim().split(/\s+/)[1]);
  }
  throw new Error(`no containerd task ${id} on any node`);
}
