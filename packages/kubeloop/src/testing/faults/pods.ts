import { kubectl } from "../kubectl.js";
import { type Fault, injected } from "./fault.js";
import { ChaosError, type ChaosPlane, name, type PodTarget, readPod, runningContainer } from "./runtime.js";

/** A deleted pod: its uid, to tell its replacement from it. */
export interface PodDeleteFault extends Fault {
  readonly kind: "pod-delete";
  /** The deleted pod's uid: a predicate can wait for a pod with another. */
  readonly uid: string;
}

/**
 * Deletes a pod through the API, as `kubectl delete pod` or an eviction would (not waiting for it
 * to end). `gracePeriodSeconds` 0 skips the pod's grace period.
 *
 * @example
 * ```ts
 * const fault = await deletePod(plane, { namespace: "site", pod: "web-7d9c-abcde" });
 * const { ms } = await fault.recovered(async () => (await readyReplicas("web")) === 2);
 * ```
 */
export async function deletePod(
  plane: ChaosPlane,
  target: PodTarget & { gracePeriodSeconds?: number },
): Promise<PodDeleteFault> {
  const { uid } = await readPod(plane, target);
  const grace =
    target.gracePeriodSeconds === undefined ? [] : [`--grace-period=${target.gracePeriodSeconds}`];
  const injectedAt = Date.now();
  const deleted = await kubectl(
    ["-n", target.namespace, "delete", "pod", target.pod, "--wait=false", ...grace],
    { kubeconfig: plane.kubeconfigPath },
  );
  if (deleted.code !== 0)
    throw new ChaosError(`could not delete pod ${name(target)}: ${deleted.stderr.trim()}`);
  return Object.assign(injected("pod-delete", name(target), injectedAt), {
    kind: "pod-delete" as const,
    uid,
  });
}

/** A killed container process: the restart count before, to tell the restart from it. */
export interface ContainerKillFault extends Fault {
  readonly kind: "container-kill";
  readonly container: string;
  /** The host pid that was killed. */
  readonly pid: number;
  /** The container's restart count before the kill: the kubelet's restart makes it grow. */
  readonly restartCount: number;
}

/**
 * Kills a container's main process from the host, as the kernel's OOM killer or a crash would: the
 * pid comes from the node's containerd (`ctr tasks ls`), the container id from the pod's status.
 * The kubelet then restarts the container in place (same pod, restart count + 1).
 *
 * @example
 * ```ts
 * const fault = await killContainer(plane, { namespace: "site", pod: "web-0", container: "nginx" });
 * await fault.recovered(async () => (await restarts("web-0")) > fault.restartCount && (await ready("web-0")));
 * ```
 */
export async function killContainer(
  plane: ChaosPlane,
  target: PodTarget & { container?: string; signal?: NodeJS.Signals },
): Promise<ContainerKillFault> {
  const { container, pid } = await runningContainer(plane, target, target.container);
  const injectedAt = Date.now();
  try {
    process.kill(pid, target.signal ?? "SIGKILL");
  } catch (error) {
    throw new ChaosError(`could not kill ${name(target)}/${container.name} (pid ${pid}): ${String(error)}`);
  }
  return Object.assign(injected("container-kill", `${name(target)}/${container.name}`, injectedAt), {
    kind: "container-kill" as const,
    container: container.name,
    pid,
    restartCount: container.restartCount,
  });
}
