/**
 * `kubeloop/testing/faults`: faults to prove an operator survives them. On a `node` profile
 * plane's real pods and nodes, each returns a {@link Fault} that measures when the system was whole
 * again (a predicate over resources' status, polled); between a client and its API server,
 * {@link startFaultProxy} stalls, resets or slows the connections.
 *
 * @example
 * ```ts
 * import { ControlPlane } from "kubeloop/testing";
 * import { deletePod } from "kubeloop/testing/faults";
 *
 * const plane = await new ControlPlane({ profile: "node" }).start();
 * // ... deploy the operator and its workload ...
 * const fault = await deletePod(plane, { namespace: "site", pod: "web-0" });
 * const { ms } = await fault.recovered(async () => (await readyReplicas("web")) === 2);
 * ```
 */
export type { Fault, FaultKind, Recovery, RecoveryOptions } from "./fault.js";
export {
  type FaultProxy,
  type FaultProxyOptions,
  type FaultProxyStats,
  startFaultProxy,
} from "./fault-proxy.js";
export { type CutDirection, cutNetwork } from "./network.js";
export { stopNode } from "./node.js";
export { type ContainerKillFault, deletePod, killContainer, type PodDeleteFault } from "./pods.js";
export { ChaosError, type ChaosPlane, type PodTarget } from "./runtime.js";
export { fillVolume, type VolumeFillFault } from "./volume.js";
