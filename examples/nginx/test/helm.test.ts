import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ControlPlane } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildImage, type Cluster, cluster, helmBinary, NS, nginx, startPlane } from "./cluster.ts";
import { root } from "./operator.ts";

// The generated Helm chart, installed by helm itself on a real node: the operator pods come up
// from it, `helm upgrade` to a second image rolls them while Nginx objects keep changing and none
// of those changes is lost, and `helm uninstall` leaves the CRDs (and the objects) as the chart's
// crd.keep says.

const REPOSITORY = "kubeloop.local/nginx-operator";
const CHART = join(root, "charts/nginx-operator");
/** What the second build's main.ts logs first: the upgraded operator says it is running. */
const MARK = "nginx operator, second build";

let plane: ControlPlane;
let c: Cluster;
let work: string;
let copy: string;
let nginxImage: string;

const helm = (...args: string[]) => c.run(helmBinary, args);
const values = (tag: string) => [
  "--set",
  `manager.image.repository=${REPOSITORY}`,
  "--set-string",
  `manager.image.tag=${tag}`,
  // The operator's own setting: the registry the node's nginx image comes from.
  "--set",
  "manager.env[0].name=ALLOWED_REGISTRIES",
  "--set",
  "manager.env[0].value=kubeloop.local",
];
const deploymentOf = (name: string) =>
  c.jsonpath(["-n", "site", "get", "deployment", name, "--ignore-not-found"], "{.spec.replicas}");

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "nginx-helm-"));
  // The second build is of a copy with one file changed; inside the example, so that it resolves
  // the same node_modules.
  copy = mkdtempSync(join(root, ".upgrade-"));
  cpSync(join(root, "src"), join(copy, "src"), { recursive: true });
  cpSync(join(root, "package.json"), join(copy, "package.json"));
  const main = join(copy, "src/main.ts");
  writeFileSync(main, `console.log(${JSON.stringify(MARK)});\n${readFileSync(main, "utf8")}`);
  plane = await startPlane(
    (async () => {
      await buildImage(root, join(work, "1.tar"), `${REPOSITORY}:1`);
      await buildImage(copy, join(work, "2.tar"), `${REPOSITORY}:2`);
    })(),
  );
  c = cluster(plane);
  await plane.loadImage(join(work, "1.tar"));
  await plane.loadImage(join(work, "2.tar"));
  nginxImage = await plane.loadBaseImage("nginx");
}, 600_000);
afterAll(async () => {
  await plane?.stop();
  for (const dir of [work, copy]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the nginx operator installed by helm, as pods", () => {
  it("helm install: the operator Ready, a sample reconciled through its webhooks", async () => {
    const started = Date.now();
    helm(
      "install",
      "nginx-operator",
      CHART,
      "-n",
      NS,
      "--create-namespace",
      "--wait",
      "--timeout=3m",
      ...values("1"),
    );
    console.log(`helm install --wait → operator Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect((await c.k(["create", "namespace", "site"])).code).toBe(0);
    // Through the webhook Service with the certificate the chart made (defaulting qualifies names).
    await c.wait(
      async () =>
        (await c.k(["apply", "-f", "-"], nginx("web", 1, "kubeloop.local/nginx:1.22.1"))).code === 0,
      30_000,
      "the webhooks to admit the sample",
    );
    await c.wait(
      async () =>
        (await c.jsonpath(
          ["-n", "site", "get", "nginx", "web"],
          '{.status.conditions[?(@.type=="Ready")].status}',
        )) === "True",
      120_000,
      "the sample to be Ready",
    );
    expect(nginxImage).toBe("kubeloop.local/nginx:1.22.1");
  }, 300_000);

  it("helm upgrade to a second image rolls the operator and loses no change made meanwhile", async () => {
    const first = await c.leader();
    const started = Date.now();
    const upgrade = c.start(helmBinary, [
      "upgrade",
      "nginx-operator",
      CHART,
      "-n",
      NS,
      "--wait",
      "--timeout=3m",
      ...values("2"),
    ]);
    // Changes while the pods roll: new Nginx objects, and the sample rescaled each time.
    const written: string[] = [];
    let scale = 1;
    const writes = (async () => {
      for (let i = 0; Date.now() - started < 25_000; i++) {
        const name = `during-${i}`;
        if ((await c.k(["apply", "-f", "-"], nginx(name, 0, "kubeloop.local/nginx:1.22.1"))).code === 0) {
          written.push(name);
        }
        scale = (i % 3) + 1;
        await c.scale("web", scale);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    // When a pod of the new image first leads (the Lease may pass through the other old pod first,
    // when the rollout replaces the leader before it).
    let newLeader = "";
    const led = (async () => {
      await c.wait(
        async () => {
          newLeader = await c.leader();
          if (newLeader === "" || newLeader === first) return false;
          const image = await c.jsonpath(["-n", NS, "get", "pod", newLeader], "{.spec.containers[0].image}");
          return image === `${REPOSITORY}:2`;
        },
        120_000,
        "a pod of the new image to lead",
      );
      return Date.now();
    })();
    await Promise.all([upgrade, writes]);
    const ledAt = await led;
    expect(written.length).toBeGreaterThan(5);
    const leader = newLeader;
    const image = await c.jsonpath(["-n", NS, "get", "pod", leader], "{.spec.containers[0].image}");
    expect(image).toBe(`${REPOSITORY}:2`);
    expect((await c.k(["-n", NS, "logs", leader])).stdout).toContain(MARK);
    // The last rescale made during the roll is the one in force.
    await c.wait(async () => (await deploymentOf("web")) === String(scale), 60_000, "web at its last scale");
    // The new version reconciles a change made now (0: a scale the loop never wrote).
    expect((await c.scale("web", 0)).code).toBe(0);
    const patched = Date.now();
    await c.wait(async () => (await deploymentOf("web")) === "0", 60_000, "the new leader to rescale web");
    console.log(`the new version reconciles a change: ${((Date.now() - patched) / 1000).toFixed(1)} s`);
    console.log(
      `helm upgrade → a pod of the new image leads: ${((ledAt - started) / 1000).toFixed(1)} s (while changes were written)`,
    );
    // Every Nginx created during the roll has its Deployment.
    for (const name of written) {
      await c.wait(async () => (await deploymentOf(name)) === "0", 60_000, `the Deployment of ${name}`);
    }
  }, 300_000);

  it("helm uninstall removes the operator and keeps the CRDs and their objects", async () => {
    helm("uninstall", "nginx-operator", "-n", NS, "--wait", "--timeout=2m");
    for (const what of [
      ["-n", NS, "get", "deployment", "nginx-operator"],
      ["get", "validatingwebhookconfiguration", "nginx-operator-validating"],
      ["get", "clusterrole", "nginx-operator"],
    ]) {
      expect((await c.k(what)).stderr, what.join(" ")).toContain("NotFound");
    }
    expect((await c.k(["get", "crd", "nginxes.proxy.example.com"])).code).toBe(0);
    expect((await c.k(["-n", "site", "get", "nginx", "web"])).code).toBe(0);
  }, 180_000);
});
