import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "kubeloop/client";
import { Namespace } from "kubeloop/k8s";
import { ControlPlane } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { metricsMonitor } from "../src/monitoring.ts";
import { ServiceMonitor } from "../src/servicemonitor.ts";

// The ServiceMonitor kubeloop generate writes, typed by the types `kubeloop generate types` wrote
// from prometheus-operator's CRD (packages/kubeloop/test/fixtures/third-party-crds says where from).
const CRD = join(
  import.meta.dirname,
  "../../../packages/kubeloop/test/fixtures/third-party-crds/monitoring.coreos.com_servicemonitors.yaml",
);

describe("the nginx operator's ServiceMonitor", () => {
  let plane: ControlPlane;
  let client: Client;
  beforeAll(async () => {
    plane = await new ControlPlane({ profile: "apiserver", crds: [CRD] }).start();
    client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  });
  afterAll(async () => {
    await client?.close();
    await plane?.stop();
  });

  it("is what `kubeloop generate` writes to config/prometheus/monitor.yaml", () => {
    const written = parse(
      readFileSync(join(import.meta.dirname, "../config/prometheus/monitor.yaml"), "utf8"),
    );
    expect(written).toEqual(metricsMonitor);
  });

  it("is accepted by a real API server with prometheus-operator's CRD, and read back typed", async () => {
    const namespace = metricsMonitor.metadata?.namespace ?? "";
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    await client.create(metricsMonitor);
    const read = await client.get({
      type: ServiceMonitor,
      namespace,
      name: metricsMonitor.metadata?.name ?? "",
    });
    const scheme: "http" | "https" | undefined = read.spec.endpoints?.[0]?.scheme;
    expect(scheme).toBe("https");
    expect((await client.get({ type: Namespace, name: namespace })).metadata?.name).toBe(namespace);
  });
});
