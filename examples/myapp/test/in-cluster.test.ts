import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControlPlane } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerPid, DEPLOYMENT, kubectlOn, kubeloop, NS, until } from "./cluster.ts";
import { CHART, CRD, gone, helm, writeOverlay } from "./install.ts";
import { scrapeOperator } from "./scrape.ts";

// The MyApp operator as its users ship it: `kubeloop build` makes its image, the node profile
// loads it, `kubeloop deploy` installs the generated config/, and the operator runs as pods on a
// real node, reconciling MyApps into Deployments whose pods really run. Then what production
// asks of it: a real Prometheus scraping its HTTPS metrics with a token and alerting, and the
// kubelet restarting it when it wedges.

const IMAGE = "kubeloop.local/myapp-operator:e2e";
const platform = process.arch === "arm64" ? "linux/arm64" : "linux/amd64";

let plane: ControlPlane;
let cluster: ReturnType<typeof kubectlOn>;
let work: string;
let appImage: string;

/** The sample MyApp, served by the nginx base image (it answers /healthz on 8080, as MyApp's pods are probed). */
const myApp = (name: string, namespace: string, replicas: number) => ({
  apiVersion: "apps.example.com/v1",
  kind: "MyApp",
  metadata: { name, namespace },
  spec: {
    replicas,
    image: appImage.split(":")[0],
    version: appImage.split(":")[1],
    rollout: { progressDeadlineSeconds: 60 },
  },
});
const condition = (name: string, namespace: string, type: string) =>
  cluster.get(["-n", namespace, "get", "myapp", name], `{.status.conditions[?(@.type=="${type}")].status}`);
const operatorPods = () =>
  cluster.get(
    ["-n", NS, "get", "pods", "-l", "app.kubernetes.io/name=myapp-operator"],
    '{range .items[*]}{.metadata.name} {.status.containerStatuses[0].ready} {.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].containerID}{"\\n"}{end}',
  );
const rolledOut = async () => {
  await cluster.k(["-n", NS, "rollout", "status", `deployment/${DEPLOYMENT}`, "--timeout=180s"]);
  await until(
    async () => (await operatorPods()).trim().split("\n").length === Number(await replicas()),
    60_000,
    "the replaced operator pods to be gone",
  );
};
const replicas = () => cluster.get(["-n", NS, "get", "deployment", DEPLOYMENT], "{.spec.replicas}");

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "myapp-in-cluster-"));
  const tarball = join(work, "operator.tar");
  // Built while the plane starts: the two take about as long.
  const [started, built] = await Promise.all([
    new ControlPlane({ profile: "node", nodes: 1 }).start(),
    kubeloop(["build", ".", "--tarball", tarball, "--tag", IMAGE, "--platform", platform]),
  ]);
  plane = started;
  expect(built.stderr).toContain(`wrote ${tarball}`);
  cluster = kubectlOn(plane);
  expect(await plane.loadImage(tarball)).toContain(IMAGE);
  appImage = await plane.loadBaseImage("nginx");
}, 420_000);
afterAll(async () => {
  await plane?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the MyApp operator deployed by kubeloop deploy, as pods", () => {
  it("comes up Ready from its generated manifests", async () => {
    const started = Date.now();
    await kubeloop(["deploy", "--image", IMAGE], plane.kubeconfigPath);
    await rolledOut();
    console.log(
      `kubeloop deploy → 2 MyApp operator pods Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    const pods = (await operatorPods()).trim().split("\n");
    expect(pods.map((pod) => pod.split(" ").slice(1, 3).join(" "))).toEqual(["true 0", "true 0"]);
    // Ready is the probe's verdict: the kubelet asked /readyz on the probe port.
    const probe = await cluster.get(
      ["-n", NS, "get", "deployment", DEPLOYMENT],
      "{.spec.template.spec.containers[0].readinessProbe.httpGet.path} {.spec.template.spec.containers[0].livenessProbe.httpGet.path}",
    );
    expect(probe).toBe("/readyz /healthz");
  }, 300_000);

  it("reconciles a sample MyApp into a Deployment whose pods run, and serves v1alpha1 by conversion", async () => {
    await cluster.k(["create", "namespace", "shop"]);
    await cluster.apply(myApp("shop", "shop", 2));
    await until(
      async () => (await condition("shop", "shop", "Ready")) === "True",
      120_000,
      "MyApp shop to be Ready",
    ).catch(async (error: Error) => {
      const state = await Promise.all([
        cluster.k(["-n", "shop", "get", "myapp,deployment,pods", "-o", "yaml"]),
        cluster.k(["-n", "shop", "get", "events"]),
        cluster.k(["-n", NS, "logs", "-l", "app.kubernetes.io/name=myapp-operator", "--tail=30"]),
      ]);
      throw new Error(`${error.message}\n${state.join("\n")}`);
    });
    const pods = await cluster.get(
      ["-n", "shop", "get", "pods", "-l", "app.kubernetes.io/instance=shop"],
      '{range .items[*]}{.status.containerStatuses[0].ready} {.status.containerStatuses[0].image}{"\\n"}{end}',
    );
    expect(pods.trim().split("\n")).toEqual([`true ${appImage}`, `true ${appImage}`]);
    expect(await cluster.get(["-n", "shop", "get", "myapp", "shop"], "{.status.currentVersion}")).toBe(
      appImage.split(":")[1],
    );
    // release 1's `size`: only the operator's conversion webhook, through its Service, answers this.
    expect(
      await cluster.get(["-n", "shop", "get", "myapps.v1alpha1.apps.example.com", "shop"], "{.spec.size}"),
    ).toBe("2");
  }, 150_000);

  it("is scraped by a real Prometheus over verified HTTPS with a token; a reconcile-error alert fires when reconciles fail", async () => {
    const firing = await scrapeOperator(cluster, async () => {
      // Reconciles fail for real: a quota forbids the Service every MyApp gets.
      await cluster.k(["create", "namespace", "full"]);
      await cluster.apply({
        apiVersion: "v1",
        kind: "ResourceQuota",
        metadata: { name: "no-services", namespace: "full" },
        spec: { hard: { services: "0" } },
      });
      await cluster.apply(myApp("blocked", "full", 1));
    });
    console.log(
      `reconciles failing → KubeloopReconcileErrorsHigh firing (for: 5s): ${(firing / 1000).toFixed(1)} s`,
    );
  }, 300_000);

  it("is restarted by its liveness probe when it wedges, and reconciles again", async () => {
    // One replica: the wedged pod is the leader, and nothing reconciles until the kubelet acts.
    await cluster.k(["-n", NS, "scale", `deployment/${DEPLOYMENT}`, "--replicas=1"]);
    await rolledOut();
    const [name = "", , restarts = "", containerId = ""] = (await operatorPods()).trim().split(" ");
    expect(restarts).toBe("0");
    const pid = containerPid(plane, containerId);
    // Stopped, the process answers nothing: the kernel still accepts the probe's connection, but no
    // request is read, exactly as when its event loop is blocked by a runaway computation.
    process.kill(pid, "SIGSTOP");
    const wedged = Date.now();
    try {
      await cluster.k([
        "-n",
        "shop",
        "patch",
        "myapp",
        "shop",
        "--type=merge",
        "-p",
        '{"spec":{"replicas":1}}',
      ]);
      const unhealthy = () =>
        cluster.get(
          ["-n", NS, "get", "events", "--field-selector", `involvedObject.name=${name},reason=Unhealthy`],
          "{.items[*].message}",
        );
      await until(
        async () => (await unhealthy()).includes("Liveness probe failed"),
        120_000,
        "a failed liveness probe",
      );
      // Probes have failed for a while by now, and nothing reconciled the change: it really is wedged.
      expect(await cluster.get(["-n", "shop", "get", "deployment", "shop"], "{.spec.replicas}")).toBe("2");
      await until(
        async () =>
          (await cluster.get(
            ["-n", NS, "get", "pod", name],
            "{.status.containerStatuses[0].restartCount}",
          )) === "1",
        240_000,
        "the kubelet to restart the wedged operator",
      );
      const restarted = Date.now();
      await until(
        async () =>
          (await cluster.get(["-n", "shop", "get", "deployment", "shop"], "{.spec.replicas}")) === "1",
        120_000,
        "the restarted operator to reconcile the change",
      );
      console.log(
        `wedged → restarted by the kubelet: ${((restarted - wedged) / 1000).toFixed(1)} s; → change reconciled: ${((Date.now() - wedged) / 1000).toFixed(1)} s`,
      );
      // Ready again once its readiness probe has passed since the restart.
      await until(
        async () => (await operatorPods()).includes(`${name} true 1 `),
        60_000,
        "the restarted operator pod to be Ready",
      );
    } finally {
      // A stopped process ignores the SIGTERM of plane.stop(): let it go on if the test failed early.
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // Already killed by the kubelet.
      }
    }
  }, 300_000);
});

describe("the MyApp operator installed by helm, then by kubectl apply -k", () => {
  const ready = (name: string) =>
    until(
      async () => (await condition(name, "shop", "Ready")) === "True",
      120_000,
      `MyApp ${name} to be Ready`,
    );
  /** release 1's `spec.size`: only the conversion webhook, through its Service, answers this. */
  const sizeByConversion = (name: string) =>
    cluster.get(
      ["-n", "shop", "get", `myapps.v1alpha1.${CRD.split(".").slice(1).join(".")}`, name],
      "{.spec.size}",
    );

  it("helm install: Ready, a sample reconciled, conversion through the Service; helm uninstall keeps the CRD and the MyApps", async () => {
    // Room for the chart: the MyApps go while their operator runs, then deploy's install, CRD and all.
    await cluster.k(["delete", "myapps", "--all", "--all-namespaces", "--wait", "--timeout=120s"]);
    await kubeloop(["undeploy"], plane.kubeconfigPath);
    await until(
      async () => (await gone(plane, ["namespace", NS])) && (await gone(plane, ["crd", CRD])),
      180_000,
      "the deployed operator, its namespace and CRD to be gone",
    );
    const started = Date.now();
    await helm(
      plane,
      "install",
      "myapp-operator",
      CHART,
      "-n",
      NS,
      "--create-namespace",
      "--wait",
      "--timeout=3m",
      "--set",
      `manager.image.repository=${IMAGE.split(":")[0]}`,
      "--set-string",
      `manager.image.tag=${IMAGE.split(":")[1]}`,
    );
    console.log(
      `helm install --wait → MyApp operator Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    await cluster.apply(myApp("charted", "shop", 1));
    await ready("charted");
    expect(await sizeByConversion("charted")).toBe("1");

    await helm(plane, "uninstall", "myapp-operator", "-n", NS, "--wait", "--timeout=2m");
    expect(await gone(plane, ["-n", NS, "deployment", DEPLOYMENT])).toBe(true);
    expect(await gone(plane, ["clusterrole", "myapp-operator"])).toBe(true);
    // The chart keeps its CRD (crd.keep), and so the MyApps.
    expect(await gone(plane, ["crd", CRD])).toBe(false);
    expect(await gone(plane, ["-n", "shop", "myapp", "charted"])).toBe(false);
  }, 420_000);

  it("kubectl apply -k config/default: Ready with no certificate given, the operator's own CA in the CRD, Helm's MyApp reconciled", async () => {
    const overlay = writeOverlay(join(work, "kustomize"), IMAGE);
    const started = Date.now();
    await cluster.k(["apply", "-k", overlay]);
    await rolledOut();
    console.log(
      `kubectl apply -k → 2 MyApp operator pods Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    // The CRD still had the CA of Helm's certificate: the operator put its own there.
    const ca = await cluster.get(
      ["-n", NS, "get", "secret", `${DEPLOYMENT}-webhook-self-issued`],
      "{.data.ca\\.crt}",
    );
    expect(ca.length).toBeGreaterThan(100);
    expect(await cluster.get(["get", "crd", CRD], "{.spec.conversion.webhook.clientConfig.caBundle}")).toBe(
      ca,
    );
    expect(await gone(plane, ["-n", NS, "secret", `${DEPLOYMENT}-webhook-server-cert`])).toBe(true);
    await cluster.k([
      "-n",
      "shop",
      "patch",
      "myapp",
      "charted",
      "--type=merge",
      "-p",
      '{"spec":{"replicas":2}}',
    ]);
    await until(
      async () =>
        (await cluster.get(["-n", "shop", "get", "deployment", "charted"], "{.spec.replicas}")) === "2",
      120_000,
      "the change to Helm's MyApp reconciled",
    );
    await ready("charted");
    expect(await sizeByConversion("charted")).toBe("2");
  }, 300_000);
});
