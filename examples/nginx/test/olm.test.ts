import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ControlPlane } from "kubeloop/testing";
import { installOlm, type OlmInstall, publishCatalog } from "kubeloop/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Cluster, cluster, nginx, startPlane } from "./cluster.ts";
import { root } from "./operator.ts";

// The operator as OLM installs it: OLM v0 (built from its Go module) on a real node, the bundle
// `kubeloop generate` wrote and `kubeloop build --bundle` made into an image, a catalog of it
// served by opm from the plane's registry, and a Subscription. Then 0.2.0 is published in the
// channel (it replaces 0.1.0) and OLM upgrades the operator.

const CSV = "manifests/nginx-operator.clusterserviceversion.yaml";
const PACKAGE = "nginx-operator";
const platform = process.arch === "arm64" ? "linux/arm64" : "linux/amd64";

let plane: ControlPlane;
let c: Cluster;
let work: string;
let olm: OlmInstall;
let olmSeconds = 0;

const k = (args: string[], input?: string) => c.k(args, input);
const jsonpath = (args: string[], path: string) => c.jsonpath(args, path);
const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);
const image = (name: string, version: string) => `${plane.registry}/${name}:${version}`;

/** The generated bundle at `version`: its CSV renamed, replacing `replaces`, running the image pushed at that version. */
function bundleAt(version: string, replaces?: string): string {
  const dir = join(work, version);
  cpSync(join(root, "bundle"), join(dir, "bundle"), { recursive: true });
  const path = join(dir, "bundle", CSV);
  let csv = readFileSync(path, "utf8")
    .replaceAll("ghcr.io/example/nginx-operator:0.1.0", image("nginx-operator", version))
    .replace(`name: ${PACKAGE}.v0.1.0`, `name: ${PACKAGE}.v${version}`)
    .replace(/^ {2}version: 0\.1\.0$/m, `  version: ${version}`);
  if (replaces) csv = csv.replace(/^ {2}version: .*$/m, (line) => `${line}\n  replaces: ${replaces}`);
  writeFileSync(path, csv);
  return dir;
}

/** Waits for a CSV in the global namespace to reach Succeeded; says where OLM stopped if it does not. */
async function csvSucceeded(name: string, timeoutMs: number): Promise<void> {
  const ns = olm.globalNamespace;
  await c
    .wait(
      async () => (await jsonpath(["-n", ns, "get", "csv", name], "{.status.phase}")) === "Succeeded",
      timeoutMs,
      `the ClusterServiceVersion ${name} to succeed`,
    )
    .catch(async (error: Error) => {
      const status = await Promise.all([
        jsonpath(["-n", ns, "get", "subscription", PACKAGE], "{.status.conditions}"),
        jsonpath(["-n", ns, "get", "installplan"], "{.items[*].status.conditions}"),
        jsonpath(
          ["-n", ns, "get", "csv"],
          '{range .items[*]}{.metadata.name} {.status.phase} {.status.message}{"\\n"}{end}',
        ),
        k(["-n", olm.namespace, "logs", "deployment/catalog-operator", "--tail=15"]).then((r) => r.stdout),
      ]);
      throw new Error(`${error.message}\n${status.join("\n")}`);
    });
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "nginx-olm-"));
  plane = await startPlane(Promise.resolve());
  c = cluster(plane);
  // What the operator's author runs: the operator's image and a bundle image per version, pushed.
  for (const [version, replaces] of [["0.1.0"], ["0.2.0", `${PACKAGE}.v0.1.0`]] as const) {
    const push = ["--push", image("nginx-operator", version), "--plain-http", "--platform", platform];
    await c.start("kubeloop", ["build", root, ...push]);
    const bundle = ["--bundle", "--push", image("nginx-operator-bundle", version), "--plain-http"];
    await c.start("kubeloop", ["build", bundleAt(version, replaces), ...bundle]);
  }
  const started = Date.now();
  olm = await installOlm(plane);
  olmSeconds = (Date.now() - started) / 1000;
}, 900_000);
afterAll(async () => {
  await plane?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the nginx operator installed by OLM from a catalog", () => {
  it("installs through a Subscription: the CSV Succeeded, the operator pods Ready", async () => {
    const started = Date.now();
    const catalog = await publishCatalog(plane, {
      ref: image("nginx-catalog", "1"),
      bundles: [{ image: image("nginx-operator-bundle", "0.1.0") }],
    });
    const applied = await k(
      ["apply", "-f", "-"],
      `apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: { name: nginx-catalog, namespace: ${olm.namespace} }
spec: { sourceType: grpc, image: "${catalog}", displayName: nginx operators }
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: { name: ${PACKAGE}, namespace: ${olm.globalNamespace} }
spec:
  name: ${PACKAGE}
  channel: alpha
  source: nginx-catalog
  sourceNamespace: ${olm.namespace}
  installPlanApproval: Automatic
`,
    );
    expect(applied.code, applied.stderr).toBe(0);
    await csvSucceeded(`${PACKAGE}.v0.1.0`, 240_000);
    console.log(
      `OLM install (CRDs, operators Ready): ${olmSeconds.toFixed(1)} s; ` +
        `catalog published + Subscription → CSV v0.1.0 Succeeded: ${seconds(started)} s`,
    );
    const pods = await jsonpath(
      ["-n", olm.globalNamespace, "get", "pods", "-l", "app.kubernetes.io/name=nginx-operator"],
      '{range .items[*]}{.status.containerStatuses[0].ready} {.spec.containers[0].image}{"\\n"}{end}',
    );
    const running = `true ${image("nginx-operator", "0.1.0")}`;
    expect(pods.trim().split("\n")).toEqual([running, running]);
  }, 300_000);

  it("reconciles a sample, its webhooks answering with the certificates OLM issued", async () => {
    expect((await k(["create", "namespace", "site"])).code).toBe(0);
    // The defaulting webhook completes the image, through the Service OLM made for the CSV's webhooks.
    const applied = await k(["apply", "-f", "-"], nginx("web", 2, "nginx:1.27"));
    expect(applied.code, applied.stderr).toBe(0);
    expect(await jsonpath(["-n", "site", "get", "nginx", "web"], "{.spec.image}")).toBe(
      "docker.io/library/nginx:1.27",
    );
    const denied = await k(["apply", "--dry-run=server", "-f", "-"], nginx("v", 1, "quay.io/x/nginx:1"));
    expect(denied.stderr).toContain('spec.image: registry "quay.io" is not allowed');
    await c.wait(
      async () => (await jsonpath(["-n", "site", "get", "deployment", "web"], "{.spec.replicas}")) === "2",
      60_000,
      "the operator to make the sample's Deployment",
    );
  }, 120_000);

  it("upgrades to 0.2.0 published in the channel, and the new operator reconciles", async () => {
    const started = Date.now();
    const catalog = await publishCatalog(plane, {
      ref: image("nginx-catalog", "2"),
      bundles: [
        { image: image("nginx-operator-bundle", "0.1.0") },
        { image: image("nginx-operator-bundle", "0.2.0"), replaces: `${PACKAGE}.v0.1.0` },
      ],
    });
    const patched = await k([
      "-n",
      olm.namespace,
      "patch",
      "catalogsource",
      "nginx-catalog",
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { image: catalog } }),
    ]);
    expect(patched.code, patched.stderr).toBe(0);
    await csvSucceeded(`${PACKAGE}.v0.2.0`, 240_000);
    console.log(`catalog 0.2.0 published → CSV v0.2.0 Succeeded: ${seconds(started)} s`);
    await c.wait(
      async () =>
        (await k(["-n", olm.globalNamespace, "get", "csv", `${PACKAGE}.v0.1.0`])).stderr.includes("NotFound"),
      60_000,
      "OLM to remove the replaced CSV",
    );
    // OLM rolls the operator's Deployment to 0.2.0 and issues the new CSV a certificate: the
    // webhook configuration names the new CA at once, while the mounted Secret reaches running pods
    // only at the kubelet's next sync (up to a minute), when the manager reloads it. Calls fail
    // with "unknown authority" until then; the figure printed is how long.
    const rolled = await k([
      "-n",
      olm.globalNamespace,
      "rollout",
      "status",
      "deployment/nginx-operator",
      "--timeout=180s",
    ]);
    expect(rolled.code, rolled.stderr).toBe(0);
    const rotating = Date.now();
    let scaled = await c.scale("web", 3);
    while (
      scaled.code !== 0 &&
      scaled.stderr.includes("unknown authority") &&
      Date.now() - rotating < 150_000
    ) {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      scaled = await c.scale("web", 3);
    }
    console.log(`rollout done → webhooks answering with the new certificate: ${seconds(rotating)} s`);
    expect(scaled.code, scaled.stderr).toBe(0);
    await c.wait(
      async () => (await jsonpath(["-n", "site", "get", "deployment", "web"], "{.spec.replicas}")) === "3",
      60_000,
      "the 0.2.0 operator to reconcile the sample",
    );
    const images = await jsonpath(
      ["-n", olm.globalNamespace, "get", "deployment", "nginx-operator"],
      "{.spec.template.spec.containers[0].image}",
    );
    expect(images).toBe(image("nginx-operator", "0.2.0"));
  }, 480_000);
});
