import { join } from "node:path";
import {
  ControlPlane,
  type CrdObject,
  kubectl,
  type LocalWebhookServing,
  localWebhookServing,
  readManifests,
} from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killOperators, type Operator, root, startOperator, until } from "./operator.ts";

// End to end, as a user would: the operator runs as its own process against a simulated cluster
// whose pods with an image tag containing "broken" never become ready, and everything is checked
// through kubectl.

let plane: ControlPlane;
let serving: LocalWebhookServing;
let operator: Operator;
const NS = "shop";
/** Short, so a failed rollout shows in seconds; the operator's reaction is what is measured. */
const DEADLINE_SECONDS = 5;

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
const get = async (args: string[], path: string) =>
  (await k(["-n", NS, ...args, "-o", `jsonpath=${path}`])).stdout;
const condition = (type: string, field = "status") =>
  get(["get", "myapp", "shop"], `{.status.conditions[?(@.type=="${type}")].${field}}`);
const patchVersion = (version: string) =>
  k(["-n", NS, "patch", "myapp", "shop", "--type=merge", "-p", JSON.stringify({ spec: { version } })]);
const history = async () =>
  JSON.parse((await get(["get", "myapp", "shop"], "{.status.history}")) || "[]") as {
    version: string;
    outcome: string;
    message?: string;
  }[];

beforeAll(async () => {
  serving = await localWebhookServing();
  plane = await new ControlPlane({
    profile: "cluster",
    podBehaviours: [{ pods: { imageTagContains: "broken" }, behaviour: "never-ready" }],
  }).start();
  await plane.installCrdObjects(
    serving.rewrite(
      readManifests([join(root, "config/crd/myapps.apps.example.com.yaml")]),
    ) as unknown as CrdObject[],
  );
  operator = await startOperator("src/main.ts", {
    KUBECONFIG: plane.kubeconfigPath,
    WEBHOOK_CERT_DIR: serving.certDir,
    WEBHOOK_PORT: String(serving.port),
  });
  expect((await k(["create", "namespace", NS])).code).toBe(0);
});
afterAll(async () => {
  killOperators();
  await plane?.stop();
  serving?.dispose();
});

describe("MyApp rollouts", () => {
  it("rolls out a good version: a Deployment at that tag and a Service, Ready, recorded in history", async () => {
    const [app] = readManifests([join(root, "config/samples/myapp.yaml")]) as {
      spec: { rollout: { progressDeadlineSeconds: number } };
    }[];
    if (!app) throw new Error("config/samples/myapp.yaml is empty");
    app.spec.rollout.progressDeadlineSeconds = DEADLINE_SECONDS;
    const applied = await k(["-n", NS, "apply", "-f", "-"], JSON.stringify(app));
    expect(applied.code, applied.stderr).toBe(0);
    await until(async () => (await condition("Ready")) === "True", 60_000, "Ready=True");
    expect(await get(["get", "myapp", "shop"], "{.status.currentVersion} {.status.phase}")).toBe(
      "1.0 Running",
    );
    expect(await history()).toMatchObject([{ version: "1.0", outcome: "Succeeded" }]);
    expect(
      await get(
        ["get", "deployment", "shop"],
        "{.spec.template.spec.containers[0].image} {.status.readyReplicas}",
      ),
    ).toBe("registry.example.com/myapp:1.0 2");
    expect(await get(["get", "service", "shop"], "{.metadata.ownerReferences[0].kind}")).toBe("MyApp");
    const table = await k(["-n", NS, "get", "myapp", "shop"]);
    expect(table.stdout).toMatch(
      /NAME\s+REPLICAS\s+VERSION\s+CURRENT\s+PHASE\s+READY\s+AGE\nshop\s+2\s+1\.0\s+1\.0\s+Running\s+True/,
    );
  });

  it("rolls a version that never becomes ready back to the last healthy one within the deadline and one reconcile", async () => {
    const started = Date.now();
    expect((await patchVersion("1.1-broken")).code).toBe(0);
    await until(async () => (await condition("RolledBack")) === "True", 60_000, "RolledBack=True");
    const elapsed = (Date.now() - started) / 1000;
    console.log(`rolled back ${elapsed.toFixed(1)} s after the change (deadline ${DEADLINE_SECONDS} s)`);
    // The deadline, the Deployment controller's next check, one reconcile, and kubectl polling.
    expect(elapsed).toBeLessThan(DEADLINE_SECONDS + 20);
    expect(await condition("RolledBack", "reason")).toBe("ProgressDeadlineExceeded");
    expect(await condition("RolledBack", "message")).toMatch(
      /^1\.1-broken did not become available within 5s .*rolled back to 1\.0$/,
    );
    expect(await condition("Degraded")).toBe("True");
    expect(
      await get(["get", "myapp", "shop"], "{.status.currentVersion} {.status.failedVersion} {.status.phase}"),
    ).toBe("1.0 1.1-broken Degraded");
    expect(await history()).toMatchObject([
      { version: "1.1-broken", outcome: "RolledBack" },
      { version: "1.0", outcome: "Succeeded" },
    ]);
    expect(await get(["get", "deployment", "shop"], "{.spec.template.spec.containers[0].image}")).toBe(
      "registry.example.com/myapp:1.0",
    );
    const events = await k([
      "-n",
      NS,
      "get",
      "events",
      "--field-selector",
      "reason=RolledBack,involvedObject.kind=MyApp",
      "-o",
      "jsonpath={.items[0].type}: {.items[0].message}",
    ]);
    expect(events.stdout).toMatch(/^Warning: 1\.1-broken did not become available/);
    // The old version serves again: Ready comes back, still Degraded (the spec's version is not running).
    await until(async () => (await condition("Ready")) === "True", 60_000, "Ready=True on 1.0 again");
    expect(await get(["get", "deployment", "shop"], "{.status.readyReplicas}")).toBe("2");
  });

  it("clears the rollback when a later good version rolls out", async () => {
    expect((await patchVersion("1.2")).code).toBe(0);
    await until(
      async () => (await get(["get", "myapp", "shop"], "{.status.currentVersion}")) === "1.2",
      60_000,
      "1.2 to roll out",
    );
    expect(await condition("RolledBack")).toBe("False");
    expect(await condition("Degraded")).toBe("False");
    expect(await condition("Ready")).toBe("True");
    expect(
      await get(
        ["get", "myapp", "shop"],
        "{.status.previousVersion}|{.status.failedVersion}|{.status.phase}",
      ),
    ).toBe("1.0||Running");
    expect((await history()).map((h) => `${h.version} ${h.outcome}`)).toEqual([
      "1.2 Succeeded",
      "1.1-broken RolledBack",
      "1.0 Succeeded",
    ]);
  });

  it("refuses an invalid image tag and a negative replica count, naming the field, and changes nothing", async () => {
    const bad = (spec: object) =>
      k(["-n", NS, "patch", "myapp", "shop", "--type=merge", "-p", JSON.stringify({ spec })]);
    const tag = await bad({ version: "1.3 beta!" });
    expect(tag.code).not.toBe(0);
    expect(tag.stderr).toContain(
      'spec.version: Invalid value: "1.3 beta!": spec.version in body should match',
    );
    const replicas = await bad({ replicas: -1 });
    expect(replicas.code).not.toBe(0);
    expect(replicas.stderr).toContain(
      "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
    );
    expect(await get(["get", "myapp", "shop"], "{.spec.version} {.spec.replicas}")).toBe("1.2 2");
    expect(operator.output()).not.toMatch(/"reconcile failed/);
  });
});
