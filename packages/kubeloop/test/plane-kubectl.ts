import type { ControlPlane } from "../src/testing/control-plane.js";
import { type KubectlResult, kubectl } from "../src/testing/kubectl.js";

/**
 * kubectl against a plane a test file starts later: `k(args, stdin?, kubeconfig?)`, as the admin
 * unless another kubeconfig (e.g. `plane.addUser(…).kubeconfigPath`) is given.
 */
export function kubectlOn(
  plane: () => ControlPlane,
): (args: string[], input?: string, kubeconfig?: string) => Promise<KubectlResult> {
  return (args, input, kubeconfig = plane().kubeconfigPath) =>
    kubectl(args, { kubeconfig, ...(input ? { input } : {}) });
}

type Kubectl = (args: string[]) => Promise<KubectlResult>;

/**
 * What `kubectl -n <namespace> get <target…> -o jsonpath=<path>` prints, e.g.
 * `jsonpath(k, "demo", ["deployment", "web"], "{.status.readyReplicas}")`; throws when kubectl fails.
 */
export async function jsonpath(
  k: Kubectl,
  namespace: string,
  target: string[],
  path: string,
): Promise<string> {
  const args = ["-n", namespace, "get", ...target, "-o", `jsonpath=${path}`];
  const result = await k(args);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

/** Creates namespace `namespace` and a ConfigMap `owner` in it, to own other objects; returns its uid. */
export async function createOwner(k: Kubectl, namespace: string): Promise<string> {
  for (const args of [
    ["create", "namespace", namespace],
    ["-n", namespace, "create", "configmap", "owner"],
  ]) {
    const created = await k(args);
    if (created.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${created.stderr}`);
  }
  return jsonpath(k, namespace, ["configmap", "owner"], "{.metadata.uid}");
}
