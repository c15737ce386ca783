import { pollUntil } from "../../util/index.js";
import { type KubectlOptions, kubectl } from "../kubectl.js";

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
