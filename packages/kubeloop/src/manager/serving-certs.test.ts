import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import pino from "pino";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import type { KubeObject } from "../client/types.js";
import {
  CustomResourceDefinition,
  MutatingWebhookConfiguration,
  Secret,
  ValidatingWebhookConfiguration,
} from "../k8s/index.js";
import { defineResource } from "../resources/define-resource.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { CertificateAuthority } from "../util/index.js";
import { defineWebhooks, webhookConfigurations, withConversion } from "../webhook/define-webhooks.js";
import { Manager, type ManagerOptions } from "./manager.js";
import { caBundleTargets } from "./options.js";
import { type CaBundleTarget, ensureSelfIssuedCertificate } from "./serving-certs.js";

// The operator's own serving certificates, against a real API server: replicas agree through the
// Secret, the caBundles named (and only those) get the CA, a mounted certificate wins; metrics
// served with a certificate scrapers verify with the Secret's CA.

const Gadget = defineResource({
  group: "certs.example.com",
  version: "v1",
  kind: "Gadget",
  spec: Type.Object({ size: Type.Integer() }),
  otherVersions: [{ version: "v1beta1", spec: Type.Object({ width: Type.Integer() }) }],
});
const identity = (o: KubeObject) => o;
const gadgetWebhooks = defineWebhooks(Gadget, {
  default: () => {},
  validate: () => ({ allowed: true }),
  convert: { hub: "v1", toHub: { v1beta1: identity }, fromHub: { v1beta1: identity } },
  failurePolicy: "Ignore",
});
const quiet = pino({ level: "silent" });

let plane: ControlPlane;
let client: Client;
let newNamespace: () => Promise<string>;
const dirs: string[] = [];
beforeAll(async () => {
  ({ plane, client } = await startPlane());
  newNamespace = namespaces(() => client, "certs");
}, 120_000);
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await stopPlane(plane, client);
});

/** The operator `name`'s webhook configurations and CRD in the cluster, and its caBundle targets. */
async function installWebhooks(name: string, namespace: string): Promise<CaBundleTarget[]> {
  const target = { service: { name: `${name}-webhook-service`, namespace } };
  const { mutating, validating } = webhookConfigurations(name, [gadgetWebhooks], target);
  const crd = withConversion(Gadget.crd(), gadgetWebhooks, target);
  for (const object of [mutating, validating, crd]) await client.create(object as KubeObject);
  return caBundleTargets(
    `MutatingWebhookConfiguration/${name}-mutating,ValidatingWebhookConfiguration/${name}-validating,CustomResourceDefinition/${crd.metadata.name}`,
  );
}

async function caBundles(name: string): Promise<(string | undefined)[]> {
  const mutating = await client.get({ type: MutatingWebhookConfiguration, name: `${name}-mutating` });
  const validating = await client.get({ type: ValidatingWebhookConfiguration, name: `${name}-validating` });
  const crd = await client.get({ type: CustomResourceDefinition, name: Gadget.crd().metadata.name });
  return [
    ...(mutating.webhooks ?? []).map((w) => w.clientConfig.caBundle),
    ...(validating.webhooks ?? []).map((w) => w.clientConfig.caBundle),
    crd.spec.conversion?.webhook?.clientConfig?.caBundle,
  ];
}

async function removeWebhooks(name: string): Promise<void> {
  await client.delete(MutatingWebhookConfiguration, `${name}-mutating`);
  await client.delete(ValidatingWebhookConfiguration, `${name}-validating`);
  await client.delete(CustomResourceDefinition, Gadget.crd().metadata.name);
  // A CRD goes once its finalizer ran: the next test makes it again.
  await until(
    () =>
      client.get({ type: CustomResourceDefinition, name: Gadget.crd().metadata.name }).then(
        () => false,
        () => true,
      ),
    20_000,
    "the CRD deleted",
  );
}

/** The certificate a TLS server on 127.0.0.1:`port` presents, verified with `ca` for `servername`. */
function servedCertificate(port: number, ca: string, servername: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, ca, servername }, () => {
      const peer = socket.getPeerX509Certificate();
      socket.end();
      if (peer) resolve(peer);
      else reject(new Error("no peer certificate"));
    });
    socket.on("error", reject);
  });
}

/** A manager as it runs in a pod (inCluster), in `namespace`, with no probes. */
function podManager(namespace: string, options: ManagerOptions): Manager {
  return new Manager({
    client,
    operatorNamespace: namespace,
    inCluster: true,
    probes: false,
    handleSignals: false,
    logger: quiet,
    ...options,
  });
}

function replica(namespace: string, certDir: string, caBundles: CaBundleTarget[], name = "gadgets"): Manager {
  return podManager(namespace, {
    metrics: false,
    webhooks: {
      port: 0,
      host: "127.0.0.1",
      certDir,
      certCheckIntervalMs: 100,
      selfIssued: { secret: `${name}-webhook-self-issued`, service: `${name}-webhook-service`, caBundles },
    },
  }).addWebhooks(gadgetWebhooks);
}

function emptyDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "kubeloop-webhook-certs-"));
  dirs.push(dir);
  return dir;
}

describe("self-issued serving certificates", () => {
  it("two replicas starting together serve one certificate, for the Service's names, and its CA is in every caBundle named", async () => {
    const namespace = await newNamespace();
    const targets = await installWebhooks("gadgets", namespace);
    // Another operator's configuration is left alone.
    await client.create({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "someone-else" },
      webhooks: [
        {
          name: "validate.someone.example.com",
          admissionReviewVersions: ["v1"],
          sideEffects: "None",
          failurePolicy: "Ignore",
          clientConfig: { service: { name: "else", namespace } },
          rules: [],
        },
      ],
    });
    const managers = [replica(namespace, emptyDir(), targets), replica(namespace, emptyDir(), targets)];
    const running = managers.map((m) => m.start());
    try {
      await Promise.all(managers.map((m) => m.ready));
      const secret = await client.get({
        type: Secret,
        namespace: namespace,
        name: "gadgets-webhook-self-issued",
      });
      const ca = Buffer.from(secret.data?.["ca.crt"] ?? "", "base64").toString();
      const host = `gadgets-webhook-service.${namespace}.svc`;
      const served = await Promise.all(
        managers.map((m) => servedCertificate(m.ports.webhooks ?? 0, ca, host)),
      );
      expect(served[0]?.fingerprint256).toBe(served[1]?.fingerprint256);
      expect(served[0]?.subjectAltName).toContain(`DNS:${host}.cluster.local`);
      expect(served[0]?.checkIssued(new X509Certificate(ca))).toBe(true);
      const bundles = await caBundles("gadgets");
      expect(bundles).toHaveLength(3);
      for (const bundle of bundles) expect(bundle).toBe(secret.data?.["ca.crt"]);
      const other = await client.get({ type: ValidatingWebhookConfiguration, name: "someone-else" });
      expect(other.webhooks?.[0]?.clientConfig.caBundle).toBeUndefined();
      // Another CA is refused: verification is real.
      const stranger = CertificateAuthority.create("stranger").cert;
      await expect(servedCertificate(managers[0]?.ports.webhooks ?? 0, stranger, host)).rejects.toThrow(
        /self-signed|unable to verify|unknown/,
      );
    } finally {
      await Promise.all(managers.map((m) => m.stop()));
      await Promise.all(running);
      await client.delete(ValidatingWebhookConfiguration, "someone-else");
      await removeWebhooks("gadgets");
    }
  }, 60_000);

  it("a mounted certificate wins: served as is, no Secret made; and one mounted later replaces the self-issued one", async () => {
    const namespace = await newNamespace();
    const targets = await installWebhooks("mounted", namespace);
    const ca = CertificateAuthority.create("mounted-ca");
    const host = `mounted-webhook-service.${namespace}.svc`;
    const mounted = ca.issueServing({ commonName: host, dnsNames: [host], ipAddresses: [] });
    const withFiles = emptyDir();
    writeFileSync(join(withFiles, "tls.crt"), mounted.cert);
    writeFileSync(join(withFiles, "tls.key"), mounted.key);
    const first = replica(namespace, withFiles, targets, "mounted");
    const running = first.start();
    try {
      await first.ready;
      const served = await servedCertificate(first.ports.webhooks ?? 0, ca.cert, host);
      expect(served.fingerprint256).toBe(new X509Certificate(mounted.cert).fingerprint256);
      await expect(
        client.get({ type: Secret, namespace, name: "mounted-webhook-self-issued" }),
      ).rejects.toThrow(/not found/);
      expect(await caBundles("mounted")).toEqual([undefined, undefined, undefined]);
    } finally {
      await first.stop();
      await running;
    }

    const later = emptyDir();
    const second = replica(namespace, later, targets, "mounted");
    const runningSecond = second.start();
    try {
      await second.ready;
      const issued = await client.get({
        type: Secret,
        namespace: namespace,
        name: "mounted-webhook-self-issued",
      });
      const ownCa = Buffer.from(issued.data?.["ca.crt"] ?? "", "base64").toString();
      await servedCertificate(second.ports.webhooks ?? 0, ownCa, host);
      writeFileSync(join(later, "tls.crt"), mounted.cert);
      writeFileSync(join(later, "tls.key"), mounted.key);
      await until(
        async () => {
          const now = await servedCertificate(second.ports.webhooks ?? 0, ca.cert, host).catch(
            () => undefined,
          );
          return now?.fingerprint256 === new X509Certificate(mounted.cert).fingerprint256;
        },
        10_000,
        "the mounted certificate served",
      );
    } finally {
      await second.stop();
      await runningSecond;
      await removeWebhooks("mounted");
    }
  }, 60_000);

  it("renews a stored certificate that expires soon from the same CA, and refuses a caBundle target that does not exist", async () => {
    const namespace = await newNamespace();
    const ca = CertificateAuthority.create("kept-ca");
    const host = `kept-webhook-service.${namespace}.svc`;
    const expiring = ca.issueServing(
      { commonName: host, dnsNames: [host], ipAddresses: [] },
      { validityMs: 24 * 3600 * 1000 },
    );
    const base64 = (text: string) => Buffer.from(text).toString("base64");
    await client.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "kept", namespace },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": base64(expiring.cert),
        "tls.key": base64(expiring.key),
        "ca.crt": base64(ca.cert),
        "ca.key": base64(ca.privateKeyPem()),
      },
    });
    const spec = { secret: "kept", service: "kept-webhook-service", caBundles: [] };
    const renewed = await ensureSelfIssuedCertificate(client, namespace, spec, quiet);
    const cert = new X509Certificate(renewed.cert);
    expect(cert.checkIssued(new X509Certificate(ca.cert))).toBe(true);
    expect(Date.parse(cert.validTo) - Date.now()).toBeGreaterThan(300 * 24 * 3600 * 1000);
    const stored = await client.get({ type: Secret, namespace, name: "kept" });
    expect(stored.data?.["tls.crt"]).toBe(base64(renewed.cert));
    expect(stored.data?.["ca.crt"]).toBe(base64(ca.cert));

    await expect(
      ensureSelfIssuedCertificate(
        client,
        namespace,
        { ...spec, caBundles: [{ kind: "MutatingWebhookConfiguration", name: "absent" }] },
        quiet,
      ),
    ).rejects.toThrow(/MutatingWebhookConfiguration absent not found, so its caBundle cannot be set/);
  }, 60_000);

  it("metrics too: served with a certificate from the Secret's CA, for the metrics Service's names", async () => {
    const namespace = await newNamespace();
    const manager = podManager(namespace, {
      metrics: {
        port: 0,
        host: "127.0.0.1",
        selfIssued: { secret: "op-metrics-self-issued", service: "op-metrics" },
      },
    });
    const running = manager.start();
    try {
      await manager.ready;
      const secret = await client.get({ type: Secret, namespace, name: "op-metrics-self-issued" });
      const ca = Buffer.from(secret.data?.["ca.crt"] ?? "", "base64").toString();
      // What the generated ServiceMonitor says: this CA, the Service's short name.
      for (const name of ["op-metrics", `op-metrics.${namespace}.svc`]) {
        const served = await servedCertificate(manager.ports.metrics ?? 0, ca, name);
        expect(served.checkIssued(new X509Certificate(ca))).toBe(true);
      }
    } finally {
      await manager.stop();
      await running;
    }
  }, 60_000);

  it("a running manager renews what expires soon, and serves the renewed certificates without a restart", async () => {
    const namespace = await newNamespace();
    const targets = await installWebhooks("renewing", namespace);
    const manager = podManager(namespace, {
      metrics: {
        port: 0,
        host: "127.0.0.1",
        selfIssued: { secret: "renewing-metrics", service: "renewing-metrics", renewCheckIntervalMs: 200 },
      },
      webhooks: {
        port: 0,
        host: "127.0.0.1",
        certDir: emptyDir(),
        selfIssued: {
          secret: "renewing-webhook",
          service: "renewing-webhook-service",
          caBundles: targets,
          renewCheckIntervalMs: 200,
        },
      },
    }).addWebhooks(gadgetWebhooks);
    const running = manager.start();
    try {
      await manager.ready;
      const servers = [
        { secret: "renewing-webhook", host: "renewing-webhook-service", port: manager.ports.webhooks ?? 0 },
        { secret: "renewing-metrics", host: "renewing-metrics", port: manager.ports.metrics ?? 0 },
      ];
      for (const { secret: name, host, port } of servers) {
        // As if 11 months went by: the stored certificate has a day left.
        const secret = await client.get({ type: Secret, namespace, name });
        const text = (key: string) => Buffer.from(secret.data?.[key] ?? "", "base64").toString();
        const ca = CertificateAuthority.fromPem(text("ca.crt"), text("ca.key"));
        const first = (await servedCertificate(port, ca.cert, host)).fingerprint256;
        const old = ca.issueServing(
          { commonName: host, dnsNames: [host], ipAddresses: [] },
          { validityMs: 86_400_000 },
        );
        const data = {
          ...secret.data,
          "tls.crt": Buffer.from(old.cert).toString("base64"),
          "tls.key": Buffer.from(old.key).toString("base64"),
        };
        await client.update({ ...secret, data });
        await until(
          async () => {
            const served = await servedCertificate(port, ca.cert, host);
            return (
              served.fingerprint256 !== first &&
              Date.parse(served.validTo) - Date.now() > 300 * 86_400_000 &&
              served.checkIssued(new X509Certificate(ca.cert))
            );
          },
          10_000,
          `the ${name} certificate renewed from the same CA and served`,
        );
        const renewed = await client.get({ type: Secret, namespace, name });
        expect(renewed.data?.["ca.crt"]).toBe(secret.data?.["ca.crt"]);
        expect(renewed.data?.["tls.crt"], name).not.toBe(data["tls.crt"]);
      }
    } finally {
      await manager.stop();
      await running;
      await removeWebhooks("renewing");
    }
  }, 60_000);

  it("reads WEBHOOK_CA_BUNDLES and names a malformed entry", () => {
    expect(caBundleTargets(" CustomResourceDefinition/a.example.com ,")).toEqual([
      { kind: "CustomResourceDefinition", name: "a.example.com" },
    ]);
    expect(() => caBundleTargets("Deployment/x")).toThrow(/"Deployment\/x" is not Kind\/name/);
  });
});
