import { join } from "node:path";
import {
  ControlPlane,
  killOperators,
  kubectl,
  type LocalWebhookServing,
  localWebhookServing,
  readCrds,
  readManifests,
} from "kubeloop/testing";
import { runPod } from "kubeloop/testing/cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Operator, root, startOperator, until } from "./operator.ts";

// The same operator on real nodes: its Nginx becomes real nginx containers (an image made here from
// Debian's nginx package), Ready by their HTTP readiness probes, serving through the operator's
// Service to another pod that asks for it by DNS name.

let plane: ControlPlane;
let serving: LocalWebhookServing;
let nginxImage: string;
let toolsImage: string;

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });

/** A jsonpath over the sample Nginx's pods. */
const webPods = async (path: string) =>
  (await k(["-n", "site", "get", "pods", "-l", "app.kubernetes.io/instance=web", "-o", `jsonpath=${path}`]))
    .stdout;

beforeAll(async () => {
  serving = await localWebhookServing();
  plane = await new ControlPlane({ profile: "node", nodes: 2 }).start();
  nginxImage = await plane.loadBaseImage("nginx");
  toolsImage = await plane.loadBaseImage("tools");
  await plane.installCrdObjects(
    serving.rewrite(readCrds([join(root, "config/crd/nginxes.proxy.example.com.yaml")])),
  );
  const webhooks = serving.rewrite(readManifests([join(root, "config/webhook/manifests.yaml")]));
  const installed = await k(
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: webhooks }),
  );
  expect(installed.code, installed.stderr).toBe(0);
});
afterAll(async () => {
  killOperators();
  await plane?.stop();
  serving?.dispose();
});

describe("nginx operator on real nodes", () => {
  let operator: Operator;

  it("runs real nginx pods that serve HTTP through the operator's Service", async () => {
    operator = await startOperator({
      KUBECONFIG: plane.kubeconfigPath,
      WEBHOOK_CERT_DIR: serving.certDir,
      WEBHOOK_PORT: String(serving.port),
      ALLOWED_REGISTRIES: "kubeloop.local",
    });
    await until(async () => /"webhooks serving"/.test(operator.output()), 30_000, "the webhook server");
    expect((await k(["create", "namespace", "site"])).code).toBe(0);
    const applied = await k(
      ["-n", "site", "apply", "-f", "-"],
      `apiVersion: proxy.example.com/v1
kind: Nginx
metadata: { name: web }
spec: { replicas: 2, image: ${nginxImage} }
`,
    );
    expect(applied.code, applied.stderr).toBe(0);
    await operator.waitUntil(
      async () =>
        (
          await k([
            "-n",
            "site",
            "get",
            "nginx",
            "web",
            "-o",
            'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
          ])
        ).stdout === "True",
      { timeoutMs: 120_000, intervalMs: 500, message: "the Nginx to be Ready on real pods" },
    );
    // Both pods run on real nodes, Ready because nginx answered their HTTP readiness probes.
    const pods = await webPods(
      '{range .items[*]}{.spec.nodeName} {.status.containerStatuses[0].ready} {.status.podIP}{"\\n"}{end}',
    );
    const lines = pods.trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatch(/^node-[01] true 10\.\d+\.\d+\.\d+$/);
    // Another pod reaches them through the operator's Service, by its DNS name.
    const page = await runPod({
      kubeconfig: plane.kubeconfigPath,
      namespace: "site",
      name: "client",
      image: toolsImage,
      // kube-proxy programs a new Service within a second or so: retry, as a real client would.
      command: [
        "sh",
        "-c",
        "for i in $(seq 20); do curl -sS -m 5 http://web.site.svc.cluster.local/ && break; sleep 0.5; done",
      ],
    });
    expect(page.logs).toContain("Welcome to nginx!");
    expect(
      (await k(["-n", "site", "get", "service", "web", "-o", "jsonpath={.metadata.ownerReferences[0].kind}"]))
        .stdout,
    ).toBe("Nginx");
  });

  it("replaces a pod deleted under it, and reports the new one", async () => {
    const before = await webPods("{.items[0].metadata.name}");
    expect((await k(["-n", "site", "delete", "pod", before, "--wait=true"])).code).toBe(0);
    await until(
      async () => {
        const nodes = (await k(["-n", "site", "get", "nginx", "web", "-o", "jsonpath={.status.nodes}"]))
          .stdout;
        return !nodes.includes(before) && (nodes.match(/web-/g) ?? []).length === 2;
      },
      90_000,
      "status.nodes to name a new pod in place of the deleted one",
    );
  });
});
