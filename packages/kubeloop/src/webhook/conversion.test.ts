import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopPlane } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { type KubeObject, resourceType } from "../client/types.js";
import { defineResource } from "../resources/define-resource.js";
import { ControlPlane } from "../testing/control-plane.js";
import { kubectl } from "../testing/kubectl.js";
import { CertificateAuthority } from "../testing/pki.js";
import { WebhookServer } from "./server.js";

// Two versions of one kind: v1alpha1 says `count`, v1 (the hub and storage version) says
// `replicas`. The real API server converts through the webhook whenever a client asks for the
// version that is not stored.
type Spec = { count?: number; replicas?: number; color?: string };
const ca = CertificateAuthority.create("conversion-ca");
const certDir = mkdtempSync(join(tmpdir(), "kubeloop-conversion-"));
let webhooks: WebhookServer;
let plane: ControlPlane;
let client: Client;

beforeAll(async () => {
  const serving = ca.issueServing({
    commonName: "conversion",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
  });
  writeFileSync(join(certDir, "tls.crt"), serving.cert);
  writeFileSync(join(certDir, "tls.key"), serving.key);
  webhooks = new WebhookServer({ certDir, port: 0, host: "127.0.0.1" });
  const respec = (object: KubeObject, spec: (s: Spec) => Spec) => ({
    ...object,
    spec: spec((object as { spec?: Spec }).spec ?? {}),
  });
  webhooks.conversion("/convert", {
    hub: "v1",
    toHub: {
      v1alpha1: (o) =>
        respec(o, ({ count, ...rest }) => ({ ...rest, ...(count !== undefined ? { replicas: count } : {}) })),
    },
    fromHub: {
      v1alpha1: (o) =>
        respec(o, ({ replicas, ...rest }) => ({
          ...rest,
          ...(replicas !== undefined ? { count: replicas } : {}),
        })),
    },
  });
  await webhooks.start();
  const Gadget = defineResource({
    group: "conv.kubeloop.dev",
    version: "v1",
    kind: "Gadget",
    spec: Type.Object({ replicas: Type.Integer({ minimum: 0 }), color: Type.Optional(Type.String()) }),
    otherVersions: [
      {
        version: "v1alpha1",
        spec: Type.Object({ count: Type.Integer({ minimum: 0 }), color: Type.Optional(Type.String()) }),
        deprecated: true,
        deprecationWarning: "conv.kubeloop.dev/v1alpha1 Gadget is deprecated; use v1",
      },
    ],
    conversion: {
      url: `https://127.0.0.1:${webhooks.port}/convert`,
      caBundle: Buffer.from(ca.cert).toString("base64"),
    },
  });
  plane = await new ControlPlane().start();
  await plane.installCrdObjects([Gadget.crd()]);
  client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
});
afterAll(async () => {
  await stopPlane(plane, client);
  await webhooks?.close();
  rmSync(certDir, { recursive: true, force: true });
});

describe("conversion webhook", () => {
  it("converts between versions both ways, losing nothing, and stores the declared version", async () => {
    const created = await kubectl(["apply", "-f", "-"], {
      kubeconfig: plane.kubeconfigPath,
      input:
        "apiVersion: conv.kubeloop.dev/v1alpha1\nkind: Gadget\nmetadata: { name: g, namespace: default }\nspec: { count: 3, color: blue }\n",
    });
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toContain("conv.kubeloop.dev/v1alpha1 Gadget is deprecated; use v1");
    const v1 = await client.get(
      resourceType<KubeObject & { spec: Spec }>("conv.kubeloop.dev/v1", "Gadget"),
      "g",
      { namespace: "default" },
    );
    expect(v1.spec).toEqual({ replicas: 3, color: "blue" });
    const alpha = await client.get(
      resourceType<KubeObject & { spec: Spec }>("conv.kubeloop.dev/v1alpha1", "Gadget"),
      "g",
      { namespace: "default" },
    );
    expect(alpha.spec).toEqual({ count: 3, color: "blue" });
    const crd = await client.get(
      resourceType<KubeObject & { status?: { storedVersions?: string[] } }>(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
      ),
      "gadgets.conv.kubeloop.dev",
    );
    expect(crd.status?.storedVersions).toEqual(["v1"]);
  });
});
