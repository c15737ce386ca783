import { ensureAssets } from "../src/testing/assets/index.js";

/**
 * Builds the control-plane binaries once before any test file runs (a no-op when cached), so no
 * test times out waiting for a compiler and parallel files never race to build.
 */
export default async function setup(): Promise<void> {
  await ensureAssets(["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]);
}
