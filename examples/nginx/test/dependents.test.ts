// The Nginx's serving children as declared dependents, envtest-style: a real kube-apiserver (no
// controller-manager: nothing here needs pods) and the serving controller in a Manager in this
// process. Before the port, the operator had no Ingress to offer, and nothing deleted a child it
// stopped wanting.
import { type Client, ignoreNotFound } from "kubeloop";
import { Ingress, Service } from "kubeloop/k8s";
import { pollUntil, startTestEnvironment, type TestEnvironment } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nginxServiceController } from "../src/nginx.ts";
import { Nginx } from "../src/resources.ts";

const NS = "default";
/** The labels the operator puts on what it makes for the Nginx `web`. */
const LABELS = {
  "app.kubernetes.io/name": "nginx",
  "app.kubernetes.io/instance": "web",
  "app.kubernetes.io/managed-by": "nginx-operator",
};

let env: TestEnvironment;
let client: Client;

beforeAll(async () => {
  env = await startTestEnvironment({ crds: [Nginx], controllers: [nginxServiceController] });
  client = env.client;
});
afterAll(async () => {
  await env?.stop();
});

const ingress = (name: string) => client.get({ type: Ingress, namespace: NS, name }).catch(ignoreNotFound);

describe("nginx's Service and Ingress, declared as dependents", () => {
  it("switching the Ingress off deletes the one it made, and not someone else's with the same labels", async () => {
    const rule = { host: "other.example.com" };
    await client.create({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: "web-by-hand", namespace: NS, labels: LABELS },
      spec: { defaultBackend: { service: { name: "web", port: { name: "http" } } }, rules: [rule] },
    });
    await client.create({
      apiVersion: Nginx.apiVersion,
      kind: "Nginx",
      metadata: { name: "web", namespace: NS },
      spec: { replicas: 1, image: "nginxinc/nginx-unprivileged:1.27", ingress: { host: "web.example.com" } },
    } as never);
    await pollUntil(async () => (await ingress("web")) !== undefined, {
      timeoutMs: 20_000,
      message: "the Nginx's Ingress",
    });
    const made = await ingress("web");
    expect(made?.spec?.rules?.[0]?.host).toBe("web.example.com");
    expect(made?.spec?.rules?.[0]?.http?.paths[0]?.backend.service).toEqual({
      name: "web",
      port: { name: "http" },
    });

    await client.patch(Nginx, "web", { spec: { ingress: null } }, { namespace: NS, type: "merge" });
    await pollUntil(async () => (await ingress("web")) === undefined, {
      timeoutMs: 20_000,
      message: "the Nginx's Ingress deleted",
    });
    expect(await ingress("web-by-hand")).toBeDefined();
    expect((await client.get({ type: Service, namespace: NS, name: "web" })).spec?.ports?.[0]?.port).toBe(80);
  });
});
