/**
 * kubeloop: the Kubernetes operator framework for TypeScript.
 *
 * The layers land one by one (see the repository's docs/); today the package ships the real
 * control plane for tests and local runs, under `kubeloop/testing`.
 */
export const VERSION = "0.1.0";
