import { type Fault, injected } from "./fault.js";
import type { ChaosPlane } from "./runtime.js";

/**
 * Stops a node's kubelet, as when a machine is lost: the node goes NotReady after 20 s and its
 * pods are evicted once their `not-ready`/`unreachable` tolerations run out (300 s by default);
 * its containers keep running. `restore()` starts the kubelet again.
 *
 * @example
 * ```ts
 * const fault = await stopNode(plane, "node-1");
 * const recovery = await fault.recovered(async () => (await readyPodsOn("node-0")) === 2);
 * await fault.restore();
 * ```
 */
export async function stopNode(plane: ChaosPlane, node: string): Promise<Fault> {
  const injectedAt = Date.now();
  await plane.stopKubelet(node);
  return injected("node-stop", node, injectedAt, () => plane.startKubelet(node));
}
