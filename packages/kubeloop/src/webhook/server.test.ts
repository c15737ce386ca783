import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConfigMap as ConfigMapObject } from "kubernetes-types/core/v1.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../test/helpers.js";
import { ControlPlane } from "../testing/control-plane.js";
import { kubectl } from "../testing/kubectl.js";
import { CertificateAuthority } from "../testing/pki.js";
import { jsonPatch } from "./json-patch.js";
import { WebhookServer } from "./server.js";

// The real API server calls these webhooks, over TLS, for ConfigMaps in labelled namespaces.
let plane: ControlPlane;
let webhooks: WebhookServer;
const ca = CertificateAuthority.create("webhook-ca");
const certDir = mkdtempSync(join(tmpdir(), "kubeloop-webhook-"));

function writeCert(commonName: string): void {
  const serving = ca.issueServing({ commonName, dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] });
  writeFileSync(join(certDir, "tls.crt"), serving.cert);
  writeFileSync(join(certDir, "tls.key"), serving.key);
}

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });

beforeAll(async () => {
  writeCert("webhook-1");
  webhooks = new WebhookServer({ certDir, port: 0, host: "127.0.0.1", certCheckIntervalMs: 100 });
  webhooks.defaulting<ConfigMapObject>("/default-configmap", (cm) => {
    cm.metadata = { ...cm.metadata, labels: { ...cm.metadata?.labels, defaulted: "yes" } };
  });
  webhooks.validating<ConfigMapObject>("/validate-configmap", (cm) => {
    if (cm.data?.forbidden) return { allowed: false, message: "data.forbidden is not allowed here" };
    return cm.data?.legacy ? { allowed: true, warnings: ["data.legacy is deprecated"] } : { allowed: true };
  });
  await webhooks.start();
  plane = await new ControlPlane().start();
  const caBundle = Buffer.from(ca.cert).toString("base64");
  const common = {
    sideEffects: "None",
    admissionReviewVersions: ["v1"],
    failurePolicy: "Fail",
    timeoutSeconds: 5,
    namespaceSelector: { matchLabels: { webhooks: "on" } },
    rules: [
      { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"] },
    ],
  };
  const config = (kind: string, name: string, path: string) => ({
    apiVersion: "admissionregistration.k8s.io/v1",
    kind,
    metadata: { name },
    webhooks: [
      {
        name: `${name}.kubeloop.dev`,
        clientConfig: { url: `https://127.0.0.1:${webhooks.port}${path}`, caBundle },
        ...common,
      },
    ],
  });
  for (const object of [
    config("MutatingWebhookConfiguration", "defaulter", "/default-configmap"),
    config("ValidatingWebhookConfiguration", "validator", "/validate-configmap"),
  ]) {
    const applied = await k(["apply", "-f", "-"], JSON.stringify(object));
    expect(applied.code, applied.stderr).toBe(0);
  }
  expect((await k(["create", "namespace", "hooked"])).code).toBe(0);
  expect((await k(["label", "namespace", "hooked", "webhooks=on"])).code).toBe(0);
});
afterAll(async () => {
  await plane?.stop();
  await webhooks?.close();
  rmSync(certDir, { recursive: true, force: true });
});

describe("admission webhooks", () => {
  it("default fields through a JSON patch the API server applies", async () => {
    // Webhook configurations take effect a moment after they are written.
    const create = () => k(["-n", "hooked", "create", "configmap", "plain"]);
    let created = await create();
    await until(
      async () => {
        if (created.code !== 0) created = await create();
        return created.code === 0;
      },
      5_000,
      "the webhook configuration to take effect",
      () => created.stderr,
    );
    expect(
      (await k(["-n", "hooked", "get", "configmap", "plain", "-o", "jsonpath={.metadata.labels.defaulted}"]))
        .stdout,
    ).toBe("yes");
  });

  it("refuse a bad object with the webhook's message, through kubectl", async () => {
    const refused = await k(["-n", "hooked", "create", "configmap", "bad", "--from-literal=forbidden=1"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      'admission webhook "validator.kubeloop.dev" denied the request: data.forbidden is not allowed here',
    );
  });

  it("pass warnings on to kubectl", async () => {
    const warned = await k(["-n", "hooked", "create", "configmap", "old", "--from-literal=legacy=1"]);
    expect(warned.code, warned.stderr).toBe(0);
    expect(warned.stderr).toContain("Warning: data.legacy is deprecated");
  });

  it("serve a replaced certificate to new connections without a restart", async () => {
    const subject = () =>
      new Promise<string>((resolve, reject) => {
        const req = request(
          { host: "127.0.0.1", port: webhooks.port, path: "/", method: "POST", ca: ca.cert, agent: false },
          (res) => {
            const cert = (res.socket as import("node:tls").TLSSocket).getPeerCertificate();
            res.resume();
            resolve(cert.subject.CN as string);
          },
        );
        req.on("error", reject);
        req.end();
      });
    expect(await subject()).toBe("webhook-1");
    writeCert("webhook-2");
    const later = new Date(Date.now() + 2000);
    utimesSync(join(certDir, "tls.crt"), later, later);
    await until(async () => (await subject()) === "webhook-2", 5_000, "the new certificate to be served");
    // And the API server still trusts it (same CA): admission keeps working.
    expect((await k(["-n", "hooked", "create", "configmap", "after-rotation"])).code).toBe(0);
  });
});

describe("WebhookServer start-up", () => {
  it("names the missing certificate file and how to provide it", async () => {
    const empty = mkdtempSync(join(tmpdir(), "kubeloop-no-certs-"));
    try {
      const server = new WebhookServer({ certDir: empty, port: 0, host: "127.0.0.1" });
      await expect(server.start()).rejects.toThrow(
        `webhook certificate missing: ${join(empty, "tls.crt")} (mount the serving certificate there, or set WEBHOOK_CERT_DIR)`,
      );
      expect(server.listening).toBe(false);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe("jsonPatch", () => {
  it("adds, replaces and removes, escaping keys, and replaces arrays whole", () => {
    expect(
      jsonPatch(
        { a: 1, b: { c: 2, gone: true }, list: [1, 2], "x/y": 1 },
        { a: 1, b: { c: 3 }, list: [1, 2, 3], "x/y": 2, added: { d: 1 } },
      ),
    ).toEqual([
      { op: "remove", path: "/b/gone" },
      { op: "replace", path: "/b/c", value: 3 },
      { op: "replace", path: "/list", value: [1, 2, 3] },
      { op: "replace", path: "/x~1y", value: 2 },
      { op: "add", path: "/added", value: { d: 1 } },
    ]);
  });
});
