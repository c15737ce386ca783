import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CertificateAuthority, readManifests } from "kubeloop/testing";
import { NS } from "./cluster.ts";
import { root } from "./operator.ts";

// What a user without cert-manager writes to install the operator with `kubectl apply -k`: an
// overlay of the generated config/default that adds the webhook certificate's Secret (made with
// openssl, or here with kubeloop's CA class) and the CA into the webhook configurations and the
// CRD's conversion, and sets the image and the operator's own settings.

const SERVICE = "nginx-operator-webhook-service";

/**
 * Writes the overlay into `<work>/overlay` beside a copy of config/ (kustomize loads bases by
 * relative path only) and returns the overlay's folder.
 */
export function writeOverlay(work: string, image: string, env: Record<string, string>): string {
  cpSync(join(root, "config"), join(work, "config"), { recursive: true });
  const dir = join(work, "overlay");
  mkdirSync(dir);
  const ca = CertificateAuthority.create("nginx-operator-webhook-ca");
  const serving = ca.issueServing({
    commonName: `${SERVICE}.${NS}.svc`,
    dnsNames: [`${SERVICE}.${NS}.svc`, `${SERVICE}.${NS}.svc.cluster.local`],
    ipAddresses: [],
  });
  writeFileSync(join(dir, "tls.crt"), serving.cert);
  writeFileSync(join(dir, "tls.key"), serving.key);
  const caBundle = Buffer.from(ca.cert).toString("base64");
  const configurations = readManifests([join(root, "config/webhook")]) as {
    kind: string;
    metadata: { name: string };
    webhooks: unknown[];
  }[];
  const [name, tag] = image.split(":");
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: ["../config/default"],
    images: [{ name: "ghcr.io/example/nginx-operator", newName: name, newTag: tag }],
    secretGenerator: [
      {
        name: "nginx-operator-webhook-server-cert",
        namespace: NS,
        type: "kubernetes.io/tls",
        files: ["tls.crt", "tls.key"],
        options: { disableNameSuffixHash: true },
      },
    ],
    patches: [
      ...configurations.map((configuration) => ({
        target: { kind: configuration.kind, name: configuration.metadata.name },
        patch: JSON.stringify(
          configuration.webhooks.map((_, i) => ({
            op: "add",
            path: `/webhooks/${i}/clientConfig/caBundle`,
            value: caBundle,
          })),
        ),
      })),
      {
        target: { kind: "CustomResourceDefinition", name: "nginxes.proxy.example.com" },
        patch: JSON.stringify([
          { op: "add", path: "/spec/conversion/webhook/clientConfig/caBundle", value: caBundle },
        ]),
      },
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
