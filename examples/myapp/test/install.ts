import { execFile } from "node:child_process";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { type ControlPlane, kubectl } from "kubeloop/testing";
import { locateBinary } from "kubeloop/testing/assets";
import { root } from "./operator.ts";

// The two other ways users install the operator: the generated Helm chart, and `kubectl apply -k`
// with an overlay of config/default that sets the image (no certificate: the operator issues its own).

const execAsync = promisify(execFile);
export const CHART = join(root, "charts/myapp-operator");
export const CRD = "myapps.apps.example.com";

/** `helm …` against `plane`; its stdout, or an error with its stderr. */
export async function helm(plane: ControlPlane, ...args: string[]): Promise<string> {
  const binary = locateBinary("helm")?.path ?? "helm";
  const { stdout } = await execAsync(binary, args, {
    cwd: root,
    env: { ...process.env, KUBECONFIG: plane.kubeconfigPath },
    timeout: 300_000,
  });
  return stdout;
}

/** Whether `kubectl get <args>` answers NotFound. */
export async function gone(plane: ControlPlane, args: string[]): Promise<boolean> {
  const result = await kubectl(["get", ...args], { kubeconfig: plane.kubeconfigPath });
  return result.code !== 0 && result.stderr.includes("NotFound");
}

/**
 * An overlay of a copy of config/ (kustomize loads bases by relative path only) that sets the
 * manager's image, as `kustomize edit set image` writes it; returns the overlay's folder.
 */
export function writeOverlay(work: string, image: string): string {
  cpSync(join(root, "config"), join(work, "config"), { recursive: true });
  const dir = join(work, "overlay");
  mkdirSync(dir);
  const [newName, newTag] = image.split(":");
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: ["../config/default"],
    images: [{ name: "ghcr.io/example/myapp-operator", newName, newTag }],
  };
  writeFileSync(join(dir, "kustomization.yaml"), JSON.stringify(kustomization, null, 2)); // JSON is YAML
  return dir;
}
