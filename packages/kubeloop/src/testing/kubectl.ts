import { spawn } from "node:child_process";
import { pollUntil } from "../util/index.js";

/** What a kubectl run printed. */
export interface KubectlResult {
  /** The exit code; null when kubectl was killed (the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Which cluster {@link kubectl} talks to, and how it runs. */
export interface KubectlOptions {
  /** The kubeconfig to use (e.g. `plane.kubeconfigPath`). */
  kubeconfig: string;
  /** Written to kubectl's standard input (for `apply -f -`). */
  input?: string;
  /** The kubectl binary. Default: `$KUBECTL`, else `kubectl` on PATH. */
  binary?: string;
  /** kubectl is killed (SIGTERM) after this long; the result then has `code: null`. Default 60 s. */
  timeoutMs?: number;
}

/**
 * Runs the machine's kubectl against a control plane, the way a user would check what an operator
 * did. Resolves with the exit code and output; it does not throw on a non-zero exit.
 */
export function kubectl(args: string[], options: KubectlOptions): Promise<KubectlResult> {
  const binary = options.binary ?? process.env.KUBECTL ?? "kubectl";
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, {
      env: { ...process.env, KUBECONFIG: options.kubeconfig },
      stdio: ["pipe", "pipe", "pipe"],
      timeout: options.timeoutMs ?? 60_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", (error) =>
      reject(
        new Error(`kubectl could not be run (${binary}): ${error.message}. Install kubectl or set KUBECTL.`),
      ),
    );
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    // A kubectl that exits before reading its input (most commands never read it) closes the pipe:
    // the EPIPE that follows is no failure of ours, and its exit code says what happened.
    child.stdin.on("error", () => {});
    child.stdin.end(options.input ?? "");
  });
}

/** What {@link runPod} makes: a one-shot pod, and where. */
export interface RunPodOptions extends Omit<KubectlOptions, "input"> {
  namespace: string;
  name: string;
  image: string;
  /** The container's command, e.g. `["sh", "-c", "curl -sS http://web/"]`. */
  command: string[];
  /** More of the pod's spec (serviceAccountName, volumes, …). */
  spec?: Record<string, unknown>;
  /** More of the container (imagePullPolicy, volumeMounts, …). */
  container?: Record<string, unknown>;
  /** How long the pod may take to finish. Default 60 s. */
  finishWithinMs?: number;
}

/** How a {@link runPod} pod ended, and what it printed. */
export interface PodRun {
  phase: "Succeeded" | "Failed";
  logs: string;
}

/**
 * Runs a command in a pod to its end and returns its phase and output: what `kubectl run --rm -i`
 * does, without losing the output of a pod that ends before kubectl attaches. The pod is deleted
 * afterwards.
 *
 * @example
 * ```ts
 * const page = await runPod({
 *   kubeconfig: plane.kubeconfigPath,
 *   namespace: "default",
 *   name: "client",
 *   image: await plane.loadBaseImage("tools"),
 *   command: ["curl", "-sS", "http://web.default.svc.cluster.local/"],
 * });
 * ```
 */
export async function runPod(options: RunPodOptions): Promise<PodRun> {
  const { namespace, name } = options;
  const k = (args: string[], input?: string) =>
    kubectl(["-n", namespace, ...args], { ...options, ...(input ? { input } : {}) });
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: {
      restartPolicy: "Never",
      ...options.spec,
      containers: [{ name: "main", image: options.image, command: options.command, ...options.container }],
    },
  };
  const created = await k(["apply", "-f", "-"], JSON.stringify(pod));
  if (created.code !== 0)
    throw new Error(`runPod: creating pod ${namespace}/${name} failed: ${created.stderr}`);
  let phase = "";
  await pollUntil(
    async () => {
      phase = (await k(["get", "pod", name, "-o", "jsonpath={.status.phase}"])).stdout;
      return phase === "Succeeded" || phase === "Failed";
    },
    {
      timeoutMs: options.finishWithinMs ?? 60_000,
      message: `pod ${namespace}/${name} to finish (last phase ${phase})`,
    },
  );
  const logs = await k(["logs", name]);
  await k(["delete", "pod", name, "--wait=false"]);
  return { phase: phase as PodRun["phase"], logs: logs.stdout };
}
