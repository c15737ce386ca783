/**
 * Faults on a `node` profile plane's real pods and nodes, each returning a {@link Fault} that
 * measures when the system was whole again (a predicate over resources' status, polled).
 */
export type { Fault, FaultKind, Recovery, RecoveryOptions } from "./fault.js";
export { type CutDirection, cutNetwork } from "./network.js";
export { stopNode } from "./node.js";
export { type ContainerKillFault, deletePod, killContainer, type PodDeleteFault } from "./pods.js";
export { ChaosError, type ChaosPlane, type PodTarget } from "./runtime.js";
export { fillVolume, type VolumeFillFault } from "./volume.js";
