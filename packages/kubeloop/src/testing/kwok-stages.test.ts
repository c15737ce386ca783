import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { ControlPlane } from "./control-plane.js";
import { ControlPlaneError } from "./errors.js";
import { kubectl } from "./kubectl.js";
import { composeKwokStages, type KwokStage, type PodBehaviour } from "./kwok-stages.js";
import { waitFor } from "./wait.js";

const DEFAULTS = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: node-initialize }
spec: { resourceRef: { apiGroup: v1, kind: Node }, next: { statusTemplate: "phase: Running" } }
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-ready }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
      - { key: .status.phase, operator: In, values: [Pending] }
  next: { statusTemplate: "phase: Running" }
`;

const stagesOf = (yaml: string) => parseAllDocuments(yaml).map((d) => d.toJS() as KwokStage);

describe("composeKwokStages", () => {
  it("keeps the default node and pod stages and takes each behaviour's pods out of pod-ready", () => {
    const stages = stagesOf(
      composeKwokStages(DEFAULTS, [
        { pods: { imageTagContains: "broken" }, behaviour: "never-ready" },
        { pods: { label: "example.com/crash" }, behaviour: "crash-loop" },
      ]),
    );
    expect(stages.map((s) => s.metadata.name)).toEqual([
      "node-initialize",
      "pod-ready",
      "kubeloop-never-ready-0-start",
      "kubeloop-crash-loop-1-start",
      "kubeloop-crash-loop-1-crash",
    ]);
    const podReady = stages[1]?.spec.selector?.matchExpressions ?? [];
    expect(podReady.map((e) => e.operator)).toEqual(["In", "NotIn", "DoesNotExist"]);
    expect(podReady[2]?.key).toBe('.metadata.labels["example.com/crash"]');
    // First match wins: the crash-loop stages leave out the never-ready pods.
    const crash = stages[4]?.spec.selector?.matchExpressions ?? [];
    expect(crash.at(-1)?.operator).toBe("NotIn");
    expect(crash.at(-1)?.key).toContain('contains("broken")');
    expect(stages[4]?.spec.delay?.durationMilliseconds).toBe(10_000);
  });

  it("refuses a behaviour it cannot express, naming the field", () => {
    const bad = (b: unknown) => () => composeKwokStages(DEFAULTS, [b as PodBehaviour]);
    expect(bad({ pods: { imageTagContains: "" }, behaviour: "never-ready" })).toThrow(
      /podBehaviours\[0\]\.pods\.imageTagContains must be a non-empty string/,
    );
    expect(bad({ pods: { label: "no spaces" }, behaviour: "never-ready" })).toThrow(/is not a label key/);
    expect(bad({ pods: { imageTagContains: "x" }, behaviour: "ready-after", seconds: -1 })).toThrow(
      /seconds must be a number > 0, got -1/,
    );
    expect(bad({ pods: { imageTagContains: "x" }, behaviour: "explode" })).toThrow(
      /use one of never-ready, crash-loop, ready-after/,
    );
    expect(
      () => new ControlPlane({ podBehaviours: [{ pods: { label: "a" }, behaviour: "never-ready" }] }),
    ).toThrow(ControlPlaneError);
  });
});

describe("podBehaviours on the cluster profile", () => {
  let plane: ControlPlane;
  const k = (args: string[], input?: string) =>
    kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
  const get = async (args: string[], path: string) => (await k([...args, "-o", `jsonpath=${path}`])).stdout;
  const until = (what: string, check: () => Promise<boolean>) => waitFor(what, check, { timeoutMs: 60_000 });

  const deployment = (name: string, image: string, labels: Record<string, string> = {}) => `
apiVersion: apps/v1
kind: Deployment
metadata: { name: ${name}, namespace: pods }
spec:
  replicas: 1
  progressDeadlineSeconds: 3
  selector: { matchLabels: { app: ${name} } }
  template:
    metadata: { labels: ${JSON.stringify({ app: name, ...labels })} }
    spec: { containers: [{ name: app, image: "${image}" }] }
`;

  beforeAll(async () => {
    plane = await new ControlPlane({
      profile: "cluster",
      podBehaviours: [
        { pods: { imageTagContains: "broken" }, behaviour: "never-ready" },
        {
          pods: { label: "example.com/crash", value: "true" },
          behaviour: "crash-loop",
          restartEverySeconds: 1,
        },
        { pods: { imageTagContains: "slow" }, behaviour: "ready-after", seconds: 3 },
      ],
    }).start();
    expect((await k(["create", "namespace", "pods"])).code).toBe(0);
  });
  afterAll(async () => {
    await plane?.stop();
  });

  it("still makes other pods Ready at once", async () => {
    expect((await k(["apply", "-f", "-"], deployment("good", "nginx:1.27"))).code).toBe(0);
    const status = await k(["-n", "pods", "rollout", "status", "deployment/good", "--timeout=60s"]);
    expect(status.code, status.stderr).toBe(0);
  });

  it("never-ready: Running but not Ready, so the Deployment exceeds its progress deadline", async () => {
    expect(
      (await k(["apply", "-f", "-"], deployment("broken", "registry.example:5000/app:2.0-broken"))).code,
    ).toBe(0);
    await until(
      "Progressing=False ProgressDeadlineExceeded",
      async () =>
        (await get(
          ["-n", "pods", "get", "deployment", "broken"],
          '{.status.conditions[?(@.type=="Progressing")].reason}',
        )) === "ProgressDeadlineExceeded",
    );
    const pod = await get(
      ["-n", "pods", "get", "pods", "-l", "app=broken"],
      '{.items[0].status.phase} {.items[0].status.conditions[?(@.type=="Ready")].status} {.items[0].status.containerStatuses[0].started} {.items[0].status.podIP}',
    );
    expect(pod).toMatch(/^Running False true 10\.244\.\d+\.\d+$/);
  });

  it("crash-loop: CrashLoopBackOff with a restart count that keeps rising", async () => {
    expect(
      (await k(["apply", "-f", "-"], deployment("crash", "app:1.0", { "example.com/crash": "true" }))).code,
    ).toBe(0);
    const container = ["-n", "pods", "get", "pods", "-l", "app=crash"];
    await until(
      "2 restarts",
      async () => Number(await get(container, "{.items[0].status.containerStatuses[0].restartCount}")) >= 2,
    );
    expect(
      await get(
        container,
        "{.items[0].status.containerStatuses[0].state.waiting.reason} {.items[0].status.containerStatuses[0].lastState.terminated.exitCode} {.items[0].status.containerStatuses[0].ready}",
      ),
    ).toBe("CrashLoopBackOff 1 false");
  });

  it("ready-after: Running and not Ready first, Ready the given seconds later", async () => {
    expect((await k(["apply", "-f", "-"], deployment("slow", "app:1.0-slow"))).code).toBe(0);
    const pods = ["-n", "pods", "get", "pods", "-l", "app=slow"];
    const ready = '{.items[0].status.conditions[?(@.type=="Ready")].status}';
    await until(
      "the slow pod to run",
      async () => (await get(pods, "{.items[0].status.phase}")) === "Running",
    );
    await until("the slow pod to be Ready", async () => (await get(pods, ready)) === "True");
    const times = await get(
      pods,
      '{.items[0].status.startTime} {.items[0].status.conditions[?(@.type=="Ready")].lastTransitionTime}',
    );
    const [started, readyAt] = times.split(" ").map((t) => Date.parse(t));
    // Timestamps have whole seconds: 3 s can show as 2.
    expect((readyAt ?? 0) - (started ?? 0)).toBeGreaterThanOrEqual(2000);
  });
});
