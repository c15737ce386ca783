/**
 * `kubeloop/testing/cluster`: an operator tested from inside a cluster, the way it ships. A
 * `ControlPlane` with the `node` profile runs real pods on real kubelets; {@link OperatorE2e}
 * builds the project's image, deploys it to such a plane and waits for it, and {@link runPod} runs
 * a one-shot pod there (a client of the operator's service, a check of what it made).
 *
 * @example
 * ```ts
 * import { OperatorE2e } from "kubeloop/testing/cluster";
 *
 * const e2e = await OperatorE2e.start({ project: process.cwd() });
 * const { stdout } = await e2e.kubectl(["get", "deployments", "-A"]);
 * await e2e.stop();
 * ```
 */
export { OperatorE2e, type OperatorE2eOptions } from "./operator-e2e.js";
export { type PodRun, type RunPodOptions, runPod } from "./run-pod.js";
