import { describe, expect, it } from "vitest";
import { deployManifests, metricsRoles, optInManifests, servingCertRoles } from "./manifests.js";

// The hardening the generated manifests promise (docs/observability.md), as pure functions' output.
const files = new Map(deployManifests({ name: "op", namespace: "op-system", image: "op:1", webhooks: true }));
// biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON trees.
const one = (file: string): any => files.get(file)?.[0];

describe("generated deploy manifests", () => {
  it("give a token only to the manager's pod, and mount the certificate Secret read-only, owner-read only", () => {
    expect(one("service-account.yaml").automountServiceAccountToken).toBe(false);
    const pod = one("deployment.yaml").spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.volumes).toEqual([
      {
        name: "webhook-certs",
        secret: { secretName: "op-webhook-server-cert", defaultMode: 0o444, optional: true },
      },
    ]);
    expect(pod.containers[0].volumeMounts).toEqual([
      { name: "webhook-certs", mountPath: "/tmp/k8s-webhook-server/serving-certs", readOnly: true },
    ]);
  });

  it("let the manager issue its own webhook certificate: its Secret and exactly the caBundles named, by name", () => {
    const caBundles = [
      "MutatingWebhookConfiguration/op-mutating",
      "CustomResourceDefinition/ops.example.com",
    ];
    const withTargets = new Map(
      deployManifests({ name: "op", namespace: "op-system", image: "op:1", webhooks: true, caBundles }),
    );
    // biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON trees.
    const env = (withTargets.get("deployment.yaml")?.[0] as any)?.spec.template.spec.containers[0].env;
    expect(env).toEqual(
      expect.arrayContaining([
        { name: "WEBHOOK_CERT_SECRET", value: "op-webhook-self-issued" },
        { name: "WEBHOOK_SERVICE", value: "op-webhook-service" },
        { name: "WEBHOOK_CA_BUNDLES", value: caBundles.join(",") },
      ]),
    );
    const [role, clusterRole] = servingCertRoles("op", "op-system", true, caBundles) as {
      rules: { resources: string[]; resourceNames?: string[]; verbs: string[] }[];
    }[];
    expect(role?.rules).toEqual([
      { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: ["op-metrics-self-issued", "op-webhook-self-issued"],
        verbs: ["get", "update"],
      },
    ]);
    expect(clusterRole?.rules.map((r) => [r.resources[0], r.resourceNames, r.verbs])).toEqual([
      ["mutatingwebhookconfigurations", ["op-mutating"], ["get", "patch"]],
      ["customresourcedefinitions", ["ops.example.com"], ["get", "patch"]],
    ]);
    const bindings = withTargets.get("role-bindings.yaml") as { kind: string; roleRef: { name: string } }[];
    expect(bindings.filter((b) => b.roleRef.name === "op-serving-certs").map((b) => b.kind)).toEqual([
      "RoleBinding",
      "ClusterRoleBinding",
    ]);
  });

  it("serve metrics over HTTPS on 8443 behind reviews the manager is bound to create", () => {
    const container = one("deployment.yaml").spec.template.spec.containers[0];
    expect(container.env).toEqual(
      expect.arrayContaining([
        { name: "METRICS_SECURE", value: "true" },
        { name: "METRICS_PORT", value: "8443" },
      ]),
    );
    expect(one("metrics-service.yaml").spec.ports).toEqual([
      { name: "https", port: 8443, targetPort: "metrics", protocol: "TCP" },
    ]);
    expect(one("metrics-auth-binding.yaml")).toMatchObject({
      kind: "ClusterRoleBinding",
      roleRef: { kind: "ClusterRole", name: "op-metrics-auth" },
      subjects: [{ kind: "ServiceAccount", name: "op", namespace: "op-system" }],
    });
    const [auth, reader] = metricsRoles("op") as { rules: { verbs: string[] }[] }[];
    expect(auth?.rules.flatMap((rule) => rule.verbs)).toEqual(["create", "create"]);
    expect(reader?.rules).toEqual([{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
  });

  it("pass the container's memory limit to the image's launcher, which sizes V8's heap from it", () => {
    const container = one("deployment.yaml").spec.template.spec.containers[0];
    expect(container.env).toContainEqual({
      name: "KUBELOOP_MEMORY_LIMIT",
      valueFrom: { resourceFieldRef: { containerName: container.name, resource: "limits.memory" } },
    });
    expect(container.resources.limits.memory).toBe("512Mi");
    // No heap flags of its own: a NODE_OPTIONS the user adds is theirs alone (the launcher leaves it be).
    expect(container.env.map((e: { name: string }) => e.name)).not.toContain("NODE_OPTIONS");
  });

  it("offer a ServiceMonitor with the bearer token, verifying TLS, and a NetworkPolicy admitting only the two ports", () => {
    const optIn = new Map(optInManifests("op", "op-system", true));
    // biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON trees.
    const monitor: any = optIn.get("prometheus/monitor.yaml")?.[0];
    expect(monitor.spec.endpoints[0]).toMatchObject({
      port: "https",
      scheme: "https",
      bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
      // The CA the manager issues its metrics certificate from (the Deployment names that Secret).
      tlsConfig: {
        ca: { secret: { name: "op-metrics-self-issued", key: "ca.crt" } },
        serverName: "op-metrics",
      },
    });
    expect(monitor.spec.endpoints[0].tlsConfig.insecureSkipVerify).toBeUndefined();
    expect(one("deployment.yaml").spec.template.spec.containers[0].env).toEqual(
      expect.arrayContaining([
        { name: "METRICS_CERT_SECRET", value: "op-metrics-self-issued" },
        { name: "METRICS_SERVICE", value: "op-metrics" },
      ]),
    );
    // biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON trees.
    const policy: any = optIn.get("network-policy/allow-ingress.yaml")?.[0];
    expect(policy.spec.ingress).toEqual([
      {
        from: [{ namespaceSelector: { matchLabels: { metrics: "enabled" } } }],
        ports: [{ protocol: "TCP", port: 8443 }],
      },
      { ports: [{ protocol: "TCP", port: 9443 }] },
    ]);
    expect(
      new Map(optInManifests("op", "op-system", false)).get("network-policy/allow-ingress.yaml")?.[0],
    ).toMatchObject({
      spec: { ingress: [{ ports: [{ port: 8443 }] }] },
    });
  });
});
