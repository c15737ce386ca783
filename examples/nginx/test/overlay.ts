import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { root } from "./operator.ts";

// What a user writes to install the operator with `kubectl apply -k`: an overlay of the generated
// config/default that sets the image and the operator's own settings. No certificate: with none
// mounted, the operator issues its own webhook certificate at start and sets the caBundles.

/**
 * Writes the overlay into `<work>/overlay` beside a copy of config/ (kustomize loads bases by
 * relative path only) and returns the overlay's folder.
 */
export function writeOverlay(work: string, image: string, env: Record<string, string>): string {
  cpSync(join(root, "config"), join(work, "config"), { recursive: true });
  const dir = join(work, "overlay");
  mkdirSync(dir);
  const [name, tag] = image.split(":");
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: ["../config/default"],
    images: [{ name: "ghcr.io/example/nginx-operator", newName: name, newTag: tag }],
    patches: [
      {
        target: { kind: "Deployment", name: "nginx-operator" },
        patch: JSON.stringify(
          Object.entries(env).map(([key, value]) => ({
            op: "add",
            path: "/spec/template/spec/containers/0/env/-",
            value: { name: key, value },
          })),
        ),
      },
    ],
  };
  writeFileSync(join(dir, "kustomization.yaml"), JSON.stringify(kustomization, null, 2)); // JSON is YAML
  return dir;
}
