import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installMetricsServer } from "../../test/metrics-server.js";
import { jsonpath, kubectlOn } from "../../test/plane-kubectl.js";
import { pollUntil } from "../util/index.js";
import { ControlPlane } from "./control-plane.js";

// The autoscaling pipeline on real pods: metrics-server (built from its Go module, an aggregated
// API) reads the kubelets' CPU figures, and the controller manager's HPA scales a Deployment up
// while one of its pods burns CPU and down once it stops.
describe("ControlPlane, node profile: a HorizontalPodAutoscaler on CPU", () => {
  let plane: ControlPlane;
  const k = kubectlOn(() => plane);
  const replicas = async () =>
    Number((await jsonpath(k, "default", ["deployment", "burn"], "{.status.readyReplicas}")) || 0);

  beforeAll(async () => {
    plane = await new ControlPlane({ profile: "node", nodes: 2 }).start();
    await installMetricsServer(plane);
  }, 20 * 60_000); // the first run builds metrics-server (about 5 minutes on 2 cores), once
  afterAll(async () => {
    await plane?.stop();
  });

  it("scales up under CPU load and down after it", { timeout: 420_000 }, async () => {
    const tools = await plane.loadBaseImage("tools");
    // Each pod idles until /tmp/burn exists, then spins a core; 20m requested, so one spinning
    // pod is far above the 50 % target.
    const manifests = `apiVersion: apps/v1
kind: Deployment
metadata: { name: burn, namespace: default }
spec:
  selector: { matchLabels: { app: burn } }
  template:
    metadata: { labels: { app: burn } }
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: main
          image: ${tools}
          command: [sh, -c, "while :; do if [ -e /tmp/burn ]; then :; else sleep 1; fi; done"]
          resources: { requests: { cpu: 20m } }
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: { name: burn, namespace: default }
spec:
  scaleTargetRef: { apiVersion: apps/v1, kind: Deployment, name: burn }
  minReplicas: 1
  maxReplicas: 3
  metrics: [{ type: Resource, resource: { name: cpu, target: { type: Utilization, averageUtilization: 50 } } }]
  behavior:
    scaleDown: { stabilizationWindowSeconds: 0, policies: [{ type: Percent, value: 100, periodSeconds: 15 }] }
`;
    expect((await k(["apply", "-f", "-"], manifests)).code).toBe(0);
    expect((await k(["rollout", "status", "deployment/burn", "--timeout=90s"])).code).toBe(0);
    const utilization = () =>
      jsonpath(
        k,
        "default",
        ["hpa", "burn"],
        "{.status.currentMetrics[0].resource.current.averageUtilization}",
      );
    // The HPA reads a figure before any load: the pipeline works end to end.
    await pollUntil(async () => (await utilization()) !== "", {
      timeoutMs: 120_000,
      intervalMs: 2_000,
      message: "the HPA to read the pods' CPU from metrics-server",
    });
    const pod = (
      await jsonpath(k, "default", ["pods", "-l", "app=burn"], "{.items[0].metadata.name}")
    ).trim();

    const loadedAt = Date.now();
    expect((await k(["exec", pod, "--", "touch", "/tmp/burn"])).code).toBe(0);
    await pollUntil(async () => (await replicas()) >= 2, {
      timeoutMs: 180_000,
      intervalMs: 1_000,
      message: "the HPA to scale burn up under load",
    });
    const scaledUpMs = Date.now() - loadedAt;
    expect(Number(await utilization())).toBeGreaterThan(50);

    const unloadedAt = Date.now();
    expect((await k(["exec", pod, "--", "rm", "/tmp/burn"])).code).toBe(0);
    await pollUntil(
      async () =>
        (await jsonpath(k, "default", ["deployment", "burn"], "{.spec.replicas}")) === "1" &&
        (await replicas()) === 1,
      { timeoutMs: 180_000, intervalMs: 1_000, message: "the HPA to scale burn back down to 1" },
    );
    const scaledDownMs = Date.now() - unloadedAt;
    console.log(
      `HPA: scaled up ${scaledUpMs} ms after the load began, down ${scaledDownMs} ms after it ended`,
    );
  });
});
