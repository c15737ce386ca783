import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonpath, kubectlOn } from "../../../test/plane-kubectl.js";
import { pollUntil } from "../../util/index.js";
import { ControlPlane } from "../control-plane.js";
import { cutNetwork, deletePod, fillVolume, killContainer, type Recovery, stopNode } from "./index.js";

// Faults on real pods and nodes (two nodes): an nginx Deployment survives each, and each fault's
// recovery is measured from the pods' status, not assumed.
describe("chaos on real pods", () => {
  let plane: ControlPlane;
  const k = kubectlOn(() => plane);
  const recoveries: Recovery[] = [];

  /** The Deployment's pods: uid, node, Ready, restart count, terminating. */
  const pods = async () =>
    (
      await jsonpath(
        k,
        "default",
        ["pods", "-l", "app=web"],
        '{range .items[*]}{.metadata.name} {.metadata.uid} {.spec.nodeName} {.status.conditions[?(@.type=="Ready")].status} {.status.containerStatuses[0].restartCount} {.metadata.deletionTimestamp}{"\\n"}{end}',
      )
    )
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [name = "", uid = "", node = "", ready, restarts, deleting] = line.split(" ");
        return { name, uid, node, ready: ready === "True", restarts: Number(restarts), deleting: !!deleting };
      });
  /** Whole: two Ready pods that are not going away, on the given nodes (default: any). */
  /** A pod to hit: Ready, and not one a previous fault left terminating. */
  const pickVictim = async () => {
    const found = (await pods()).find((pod) => pod.ready && !pod.deleting);
    if (!found) throw new Error("no Ready pod to hit");
    return found;
  };
  const whole = async (accept: (pod: Awaited<ReturnType<typeof pods>>[number]) => boolean = () => true) =>
    (await pods()).filter((pod) => pod.ready && !pod.deleting && accept(pod)).length === 2;

  beforeAll(async () => {
    plane = await new ControlPlane({ profile: "node", nodes: 2 }).start();
    const nginx = await plane.loadBaseImage("nginx");
    const tools = await plane.loadBaseImage("tools");
    // Evicted 2 s after their node is lost instead of 300 s; a readiness probe every second.
    const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: default }
spec:
  replicas: 2
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      terminationGracePeriodSeconds: 1
      tolerations:
        - { key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 2 }
        - { key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 2 }
      topologySpreadConstraints:
        - { maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: { matchLabels: { app: web } } }
      containers:
        - name: nginx
          image: ${nginx}
          readinessProbe: { httpGet: { path: /, port: 8080 }, periodSeconds: 1, failureThreshold: 1 }
---
apiVersion: v1
kind: Pod
metadata: { name: store, namespace: default }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${tools}
      command: [sleep, "3600"]
      volumeMounts: [{ name: scratch, mountPath: /scratch }]
  volumes: [{ name: scratch, emptyDir: { medium: Memory, sizeLimit: 4Mi } }]
`;
    expect((await k(["apply", "-f", "-"], deployment)).code).toBe(0);
    const rollout = await k(["rollout", "status", "deployment/web", "--timeout=90s"]);
    expect(rollout.code, rollout.stderr).toBe(0);
    const store = await k(["wait", "--for=condition=Ready", "pod/store", "--timeout=60s"]);
    expect(store.code, store.stderr).toBe(0);
  });
  afterAll(async () => {
    // The measured recoveries, for whoever reads the test's output.
    for (const r of recoveries)
      console.log(
        `${r.kind} ${r.target}: whole after ${r.ms} ms${r.sinceRestoreMs === undefined ? "" : ` (${r.sinceRestoreMs} ms after restore)`}`,
      );
    await plane?.stop();
  });

  it("replaces a deleted pod", async () => {
    const victim = await pickVictim();
    const fault = await deletePod(plane, { namespace: "default", pod: victim.name });
    expect(fault.uid).toBe(victim.uid);
    const recovery = await fault.recovered(() => whole((pod) => pod.uid !== victim.uid), {
      timeoutMs: 60_000,
    });
    recoveries.push(recovery);
    expect(recovery.sawBroken).toBe(true);
    expect(recovery.ms).toBeGreaterThan(0);
  });

  it("restarts a container whose process was killed on its node", async () => {
    const victim = await pickVictim();
    const fault = await killContainer(plane, { namespace: "default", pod: victim.name, container: "nginx" });
    expect(fault.restartCount).toBe(victim.restarts);
    const recovery = await fault.recovered(
      () => whole((pod) => pod.uid !== victim.uid || pod.restarts > victim.restarts),
      { timeoutMs: 60_000 },
    );
    recoveries.push(recovery);
    // The same pod, restarted in place by the kubelet.
    const after = (await pods()).find((pod) => pod.uid === victim.uid);
    expect(after?.restarts).toBe(victim.restarts + 1);
  });

  it("takes a pod whose network is cut out of service, and back once restored", async () => {
    const victim = await pickVictim();
    const cut = await cutNetwork(plane, { namespace: "default", pod: victim.name });
    // The kubelet's probe no longer reaches nginx: the pod is not Ready, and not an endpoint.
    await pollUntil(async () => (await pods()).find((pod) => pod.uid === victim.uid)?.ready === false, {
      timeoutMs: 30_000,
      message: `${victim.name} to fail its readiness probe`,
    });
    await cut.restore();
    const recovery = await cut.recovered(() => whole(), { timeoutMs: 60_000 });
    recoveries.push(recovery);
    expect(recovery.sinceRestoreMs).toBeGreaterThanOrEqual(0);
    // The same pod came back: the cut ended, nothing was replaced.
    expect((await pods()).map((pod) => pod.uid)).toContain(victim.uid);
  });

  it("fills a size-limited volume until it is full, and empties it on restore", async () => {
    const fill = await fillVolume(plane, {
      namespace: "default",
      pod: "store",
      path: "/scratch",
      bytes: 64 << 20,
    });
    expect(fill.full).toBe(true);
    expect(fill.written).toBeLessThanOrEqual(4 << 20);
    const exec = (command: string[]) => k(["exec", "store", "--", ...command]);
    expect((await exec(["sh", "-c", "echo more > /scratch/more"])).stderr).toMatch(/No space left/);
    await fill.restore();
    const written = await exec(["sh", "-c", "echo more > /scratch/more && cat /scratch/more"]);
    expect(written.stdout.trim(), written.stderr).toBe("more");
  });

  it("moves the pods off a node whose kubelet stopped", async () => {
    const fault = await stopNode(plane, "node-1");
    const recovery = await fault.recovered(() => whole((pod) => pod.node === "node-0"), {
      timeoutMs: 90_000,
      intervalMs: 250,
    });
    recoveries.push(recovery);
    // Evicted after 20 s NotReady + 2 s of toleration, at the earliest.
    expect(recovery.ms).toBeGreaterThan(15_000);
    await fault.restore();
    await pollUntil(
      async () =>
        (await jsonpath(
          k,
          "default",
          ["node", "node-1"],
          '{.status.conditions[?(@.type=="Ready")].status}',
        )) === "True",
      { timeoutMs: 60_000, message: "node-1 to be Ready again" },
    );
  });
});
