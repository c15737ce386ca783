import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonpath, kubectlOn } from "../../test/plane-kubectl.js";
import { pollUntil } from "../util/index.js";
import { ControlPlane } from "./control-plane.js";

// Two real nodes: a node whose kubelet stops goes NotReady, and its pods are evicted and started on
// the other node, as in a cluster that loses a machine.
describe("ControlPlane, node profile with two nodes", () => {
  let plane: ControlPlane;
  const k = kubectlOn(() => plane);

  beforeAll(async () => {
    plane = await new ControlPlane({ profile: "node", nodes: 2 }).start();
  });
  afterAll(async () => {
    await plane?.stop();
  });

  it("schedules on both nodes, and moves pods off a node whose kubelet stopped", async () => {
    const tools = await plane.loadBaseImage("tools");
    const nodes = await k(["get", "nodes", "-o", "name"]);
    expect(nodes.stdout.trim().split("\n").sort()).toEqual(["node/node-0", "node/node-1"]);
    // Evicted 5 s after their node is lost, instead of the default 300 s.
    const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: { name: sleeper, namespace: default }
spec:
  replicas: 2
  selector: { matchLabels: { app: sleeper } }
  template:
    metadata: { labels: { app: sleeper } }
    spec:
      terminationGracePeriodSeconds: 1
      tolerations:
        - { key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5 }
        - { key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5 }
      topologySpreadConstraints:
        - { maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: { matchLabels: { app: sleeper } } }
      containers: [{ name: main, image: ${tools}, command: [sleep, "3600"] }]
`;
    expect((await k(["apply", "-f", "-"], deployment)).code).toBe(0);
    const rollout = await k(["rollout", "status", "deployment/sleeper", "--timeout=90s"]);
    expect(rollout.code, rollout.stderr).toBe(0);
    const placed = async () =>
      (
        await jsonpath(
          k,
          "default",
          ["pods", "-l", "app=sleeper"],
          '{range .items[*]}{.spec.nodeName}{"\\n"}{end}',
        )
      )
        .trim()
        .split("\n");
    expect((await placed()).sort()).toEqual(["node-0", "node-1"]);

    const ready = (node: string) =>
      jsonpath(k, "default", ["node", node], '{.status.conditions[?(@.type=="Ready")].status}');
    await plane.stopKubelet("node-1");
    await pollUntil(async () => (await ready("node-1")) !== "True", {
      timeoutMs: 60_000,
      message: "node-1 to stop being Ready",
    });
    await pollUntil(
      async () => {
        // node=ready=deletionTimestamp: the evicted pods stay Terminating on the lost node.
        const pods = await jsonpath(
          k,
          "default",
          ["pods", "-l", "app=sleeper"],
          '{range .items[*]}{.spec.nodeName}={.status.containerStatuses[0].ready}={.metadata.deletionTimestamp}{"\\n"}{end}',
        );
        const lines = pods.split("\n").filter((line) => line === "node-0=true=");
        return lines.length === 2;
      },
      { timeoutMs: 90_000, message: "both replicas running on node-0" },
    );

    await plane.startKubelet("node-1");
    await pollUntil(async () => (await ready("node-1")) === "True", {
      timeoutMs: 60_000,
      message: "node-1 to be Ready again",
    });
  });
});
