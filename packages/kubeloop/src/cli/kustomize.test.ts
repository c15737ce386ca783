import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import type { KubeObject } from "../client/index.js";
import { kubectl } from "../testing/index.js";
import { readConfig } from "./apply-manifests.js";

// The nginx example's config/ as the kustomize tree `kubeloop generate` writes, rendered by the
// kustomize built into kubectl: the same objects `kubeloop deploy` applies, and an overlay that
// changes the image as `kustomize edit set image` would.

const config = join(import.meta.dirname, "../../../../examples/nginx/config");
const overlay = mkdtempSync(join(tmpdir(), "kubeloop-overlay-"));
afterAll(() => rmSync(overlay, { recursive: true, force: true }));

async function render(dir: string): Promise<KubeObject[]> {
  // kubectl kustomize reads files only; the kubeconfig is never used.
  const rendered = await kubectl(["kustomize", dir], { kubeconfig: "/dev/null" });
  expect(rendered.code, rendered.stderr).toBe(0);
  return parseAllDocuments(rendered.stdout).map((document) => document.toJS() as KubeObject);
}
const key = (o: KubeObject) => `${o.kind} ${o.metadata?.namespace ?? ""}/${o.metadata?.name}`;

describe("config/ as a kustomize tree", () => {
  it("renders config/default to exactly what kubeloop deploy applies", async () => {
    const rendered = await render(join(config, "default"));
    const deployed = readConfig(config, ["crd", "rbac", "manager", "webhook"]);
    expect(rendered.map(key).sort()).toEqual(deployed.map(key).sort());
    const deployment = rendered.find((o) => o.kind === "Deployment") as KubeObject & {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    expect(deployment.spec.template.spec.containers[0]?.image).toBe("ghcr.io/example/nginx-operator:0.1.0");
  });

  it("takes another image and namespace from an overlay", async () => {
    writeFileSync(
      join(overlay, "kustomization.yaml"),
      `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: web-operators
resources:
  - ${relative(overlay, join(config, "default"))}
images:
  - name: ghcr.io/example/nginx-operator
    newName: registry.example.com/nginx-operator
    newTag: "2.0.0"
`,
    );
    const rendered = await render(overlay);
    const deployment = rendered.find((o) => o.kind === "Deployment") as KubeObject & {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    expect(deployment.metadata?.namespace).toBe("web-operators");
    expect(deployment.spec.template.spec.containers[0]?.image).toBe(
      "registry.example.com/nginx-operator:2.0.0",
    );
    // The webhook configurations follow the Service to its new namespace.
    const validating = rendered.find((o) => o.kind === "ValidatingWebhookConfiguration") as unknown as {
      webhooks: { clientConfig: { service: { namespace: string } } }[];
    };
    expect(validating.webhooks[0]?.clientConfig.service.namespace).toBe("web-operators");
  });

  it("renders the opt-in ServiceMonitor verifying TLS with the CA of the Secret the manager issues, in any namespace", async () => {
    const withMonitoring = mkdtempSync(join(tmpdir(), "kubeloop-overlay-"));
    try {
      writeFileSync(
        join(withMonitoring, "kustomization.yaml"),
        `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: web-operators
resources:
  - ${relative(withMonitoring, join(config, "default"))}
  - ${relative(withMonitoring, join(config, "prometheus"))}
`,
      );
      const rendered = await render(withMonitoring);
      const monitor = rendered.find((o) => o.kind === "ServiceMonitor") as unknown as {
        metadata: { namespace: string };
        spec: { endpoints: { tlsConfig: Record<string, unknown> }[] };
      };
      // Prometheus reads the Secret from the ServiceMonitor's namespace: both moved together.
      expect(monitor.metadata.namespace).toBe("web-operators");
      expect(monitor.spec.endpoints[0]?.tlsConfig).toEqual({
        ca: { secret: { name: "nginx-operator-metrics-self-issued", key: "ca.crt" } },
        serverName: "nginx-operator-metrics",
      });
      const deployment = rendered.find((o) => o.kind === "Deployment") as KubeObject & {
        spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
      };
      const env = deployment.spec.template.spec.containers[0]?.env ?? [];
      expect(env).toEqual(
        expect.arrayContaining([
          { name: "METRICS_CERT_SECRET", value: "nginx-operator-metrics-self-issued" },
          { name: "METRICS_SERVICE", value: "nginx-operator-metrics" },
        ]),
      );
      const role = rendered.find(
        (o) => o.kind === "Role" && o.metadata?.name === "nginx-operator-serving-certs",
      ) as unknown as { metadata: { namespace: string }; rules: { resourceNames?: string[] }[] };
      expect(role.metadata.namespace).toBe("web-operators");
      expect(role.rules.flatMap((r) => r.resourceNames ?? [])).toContain(
        "nginx-operator-metrics-self-issued",
      );
    } finally {
      rmSync(withMonitoring, { recursive: true, force: true });
    }
  });
});
