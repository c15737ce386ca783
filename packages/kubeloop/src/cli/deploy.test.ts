import { X509Certificate } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import type { KubeObject } from "../client/types.js";
import { Secret } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { ensureWebhookCertificate } from "./deploy.js";
import { deployManifests } from "./manifests.js";

// The certificate `kubeloop deploy` keeps for an operator's webhooks, on a real API server: made
// once, left alone while current, renewed from the same CA (so the caBundle stays valid).
let plane: ControlPlane;
let client: Client;
const objects = deployManifests({
  name: "shop",
  namespace: "shop-system",
  image: "shop:1",
  webhooks: true,
}).flatMap(([, list]) => list as KubeObject[]);
const DAY = 24 * 3600 * 1000;

beforeAll(async () => ({ plane, client } = await startPlane()));
afterAll(() => stopPlane(plane, client));

const serving = async () => {
  const secret = await client.get({
    type: Secret,
    namespace: "shop-system",
    name: "shop-webhook-server-cert",
  });
  const pem = Buffer.from(secret.data?.["tls.crt"] ?? "", "base64").toString();
  return { pem, cert: new X509Certificate(pem) };
};

describe("the webhook serving certificate deploy keeps", () => {
  it("is made for the webhook Service, valid a year, with its CA's key kept in a Secret no pod mounts", async () => {
    const caBundle = await ensureWebhookCertificate(client, objects);
    const { cert } = await serving();
    expect(cert.subjectAltName).toBe(
      "DNS:shop-webhook-service.shop-system.svc, DNS:shop-webhook-service.shop-system.svc.cluster.local",
    );
    const days = (Date.parse(cert.validTo) - Date.now()) / DAY;
    expect(days).toBeGreaterThan(364);
    expect(days).toBeLessThan(366);
    const ca = new X509Certificate(Buffer.from(caBundle ?? "", "base64").toString());
    expect(cert.verify(ca.publicKey)).toBe(true);
    const kept = await client.get({
      type: Secret,
      namespace: "shop-system",
      name: "shop-webhook-server-cert-ca",
    });
    expect(Object.keys(kept.data ?? {}).sort()).toEqual(["tls.crt", "tls.key"]);
    const mounted = objects.find((o) => o.kind === "Deployment") as unknown as {
      spec: { template: { spec: { volumes: { secret: { secretName: string } }[] } } };
    };
    expect(mounted.spec.template.spec.volumes.map((v) => v.secret.secretName)).toEqual([
      "shop-webhook-server-cert",
    ]);
  });

  it("is left alone while current, and renewed from the same CA 30 days before it expires", async () => {
    const before = await serving();
    const bundle = await ensureWebhookCertificate(client, objects);
    expect((await serving()).pem).toBe(before.pem);
    const later = () => Date.parse(before.cert.validTo) - 29 * DAY;
    const renewedBundle = await ensureWebhookCertificate(client, objects, later);
    expect(renewedBundle).toBe(bundle);
    const renewed = await serving();
    expect(renewed.pem).not.toBe(before.pem);
    const ca = new X509Certificate(Buffer.from(bundle ?? "", "base64").toString());
    expect(renewed.cert.verify(ca.publicKey)).toBe(true);
  });

  it("is not made for an operator without webhooks", async () => {
    const plain = deployManifests({ name: "plain", namespace: "plain-system", image: "plain:1" }).flatMap(
      ([, list]) => list as KubeObject[],
    );
    expect(await ensureWebhookCertificate(client, plain)).toBeUndefined();
  });
});
