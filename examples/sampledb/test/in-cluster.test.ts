import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { kubectl, pollUntil } from "kubeloop/testing";
import { locateBinary } from "kubeloop/testing/assets";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { World } from "./world.ts";

// The operator as its users ship it: `kubeloop build` makes its image (no PostgreSQL program in
// it: every SQL step is a Job of the SampleDB's PostgreSQL image), the node profile loads it,
// `kubeloop deploy` installs the generated config/ (CRD, RBAC, a Deployment of two replicas with
// leader election, non-root on a read-only root filesystem), and the operator runs as pods: its
// ServiceAccount's RBAC is all it has for the StatefulSets, Jobs, PVCs and pods it handles.

const root = join(import.meta.dirname, "..");
const cli = join(root, "../../packages/kubeloop/dist/cli/main.js");
const IMAGE = "kubeloop.local/sampledb-operator:e2e";
const NS = "sampledb-operator-system";
const ns = "apps";
const world = new World();
const run = promisify(execFile);
let work: string;

const kubeloop = (args: string[]) =>
  run(process.execPath, [cli, ...args], {
    cwd: root,
    env: { ...process.env, KUBECONFIG: world.plane.kubeconfigPath },
    timeout: 240_000,
  });

const helm = (...args: string[]) =>
  run(locateBinary("helm")?.path ?? "helm", args, {
    cwd: root,
    env: { ...process.env, KUBECONFIG: world.plane.kubeconfigPath },
    timeout: 300_000,
  });
const gone = async (args: string[]) =>
  (await kubectl(["get", ...args], { kubeconfig: world.plane.kubeconfigPath })).stderr.includes("NotFound");
const CRD = "sampledbs.seed.example.com";

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sampledb-in-cluster-"));
  const tarball = join(work, "operator.tar");
  const platform = process.arch === "arm64" ? "linux/arm64" : "linux/amd64";
  // Built while the plane starts: the two take about as long.
  const build = run(
    process.execPath,
    [cli, "build", root, "--tarball", tarball, "--tag", IMAGE, "--platform", platform],
    { cwd: root, timeout: 240_000 },
  );
  await world.start(1, { crd: false, alongside: build });
  expect(await world.plane.loadImage(tarball)).toContain(IMAGE);
}, 420_000);
afterAll(async () => {
  await world.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const apply = (name: string, instances: number, backup = "") =>
  world.ok(
    ["-n", ns, "apply", "-f", "-"],
    `apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: ${name} }
spec: { instances: ${instances}, storage: 256Mi, image: ${world.postgres}${backup} }
`,
  );

describe("the SampleDB operator deployed by kubeloop deploy, as pods", () => {
  it("comes up Ready from the generated manifests, non-root on a read-only root filesystem", async () => {
    const started = Date.now();
    await kubeloop(["deploy", "--image", IMAGE]);
    await world.ok(["-n", NS, "rollout", "status", "deployment/sampledb-operator", "--timeout=180s"]);
    console.log(`kubeloop deploy → 2 operator pods Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const pods = JSON.parse(await world.ok(["-n", NS, "get", "pods", "-o", "json"])) as {
      items: {
        spec: {
          securityContext?: { runAsNonRoot?: boolean };
          containers: { image: string; securityContext?: { readOnlyRootFilesystem?: boolean } }[];
        };
      }[];
    };
    expect(pods.items).toHaveLength(2);
    for (const pod of pods.items) {
      expect(pod.spec.containers[0]?.image).toBe(IMAGE);
      // The kubelet starts the container only if the image's user (65532) is not root.
      expect(pod.spec.securityContext?.runAsNonRoot).toBe(true);
      expect(pod.spec.containers[0]?.securityContext?.readOnlyRootFilesystem).toBe(true);
    }
    // One of them leads (the Lease), so the other stands by.
    const holder = await world.ok([
      "-n",
      NS,
      "get",
      "lease",
      "sampledb-operator",
      "-o",
      "jsonpath={.spec.holderIdentity}",
    ]);
    expect(holder).toMatch(/^sampledb-operator-/);
    await world.ok(["create", "namespace", ns]);
  });

  it("reconciles a SampleDB to Ready, with a scheduled backup that restores", async () => {
    await apply("orders", 1, ", backup: { schedule: 20s, retention: 2 }");
    const seconds = await world.waitForPhase(ns, "orders", "Ready");
    console.log(`operator as a pod: create → Ready, 1 instance: ${seconds.toFixed(1)} s`);
    expect(
      await world.sqlPod(
        ns,
        "orders",
        "writer",
        "psql -qc 'create table t (n int)' -c 'insert into t select generate_series(1, 500)' && psql -Atc 'select sum(n) from t'",
      ),
    ).toContain("125250");
    const file = await world.waitFor(
      ns,
      "orders",
      "{.status.lastBackupFile}",
      (value) => value.endsWith(".dump"),
      "a backup",
      90_000,
    );
    // The dump is a real one: pg_restore lists the table's data in it.
    const listed = await world.backupPod(ns, "orders", "lister", `pg_restore --list /backups/${file}`);
    expect(listed).toMatch(/TABLE DATA public t /);
  });

  it("reconciles 3 instances to Ready", async () => {
    await apply("trio", 3);
    const seconds = await world.waitForPhase(ns, "trio", "Ready", 240_000);
    console.log(`operator as a pod: create → Ready, 3 instances: ${seconds.toFixed(1)} s`);
    expect(await world.ok(["-n", ns, "get", "sampledb", "trio", "-o", "wide"])).toMatch(
      /trio\s+Ready\s+trio-0\s+3\/3\s/,
    );
  });

  it("deletes a SampleDB with a final snapshot, removing the StatefulSet and its volume, with its RBAC alone", async () => {
    await world.ok(["-n", ns, "delete", "sampledb", "orders", "--timeout=120s"]);
    expect(await world.ok(["-n", ns, "get", "statefulset,pvc", "-o", "name"])).not.toMatch(
      /orders-0|statefulset.apps\/orders\b/,
    );
    expect(await world.ok(["-n", ns, "get", "pvc", "orders-backups", "-o", "name"])).toContain(
      "orders-backups",
    );
    const files = await world.backupFiles(ns, "orders", "files");
    expect(files.length).toBeGreaterThanOrEqual(2);
    const logs = await world.ok([
      "-n",
      NS,
      "logs",
      "-l",
      "app.kubernetes.io/name=sampledb-operator",
      "--prefix",
    ]);
    expect(logs).not.toMatch(/forbidden/i);
  });
});

// The two other ways users install it, one after the other on the same plane, with the SampleDB
// "trio" (3 instances, made above) kept throughout: each new install must reconcile it.
describe("the SampleDB operator installed by helm, then by kubectl apply -k", () => {
  /** Sets trio's instances and waits for the operator to bring it to Ready with that many. */
  const scaleTrio = async (instances: number) => {
    await world.ok([
      "-n",
      ns,
      "patch",
      "sampledb",
      "trio",
      "--type=merge",
      "-p",
      `{"spec":{"instances":${instances}}}`,
    ]);
    await world.waitFor(
      ns,
      "trio",
      "{.status.ready}",
      (v) => v === `${instances}/${instances}`,
      `trio ${instances}/${instances} ready`,
      180_000,
    );
    await world.waitForPhase(ns, "trio", "Ready");
  };
  /** Removes the running install but the CRD (so trio stays), and waits for its namespace to go. */
  const removeOperatorKeepingCrd = async () => {
    await kubeloop(["undeploy", "--keep-crds"]);
    await pollUntil(() => gone(["namespace", NS]), {
      timeoutMs: 180_000,
      intervalMs: 500,
      message: "the operator's namespace to be gone",
    });
  };

  it("helm install adopting the CRD: Ready, trio reconciled; helm uninstall keeps the CRD and trio", async () => {
    await removeOperatorKeepingCrd();
    // Helm takes over an existing CRD that carries its release's ownership metadata.
    await world.ok([
      "annotate",
      "crd",
      CRD,
      "meta.helm.sh/release-name=sampledb-operator",
      `meta.helm.sh/release-namespace=${NS}`,
    ]);
    await world.ok(["label", "crd", CRD, "app.kubernetes.io/managed-by=Helm"]);
    const started = Date.now();
    await helm(
      "install",
      "sampledb-operator",
      join(root, "charts/sampledb-operator"),
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
      `helm install --wait → SampleDB operator Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    await scaleTrio(2);
    await helm("uninstall", "sampledb-operator", "-n", NS, "--wait", "--timeout=2m");
    expect(await gone(["-n", NS, "deployment", "sampledb-operator"])).toBe(true);
    expect(await gone(["clusterrole", "sampledb-operator"])).toBe(true);
    expect(await gone(["crd", CRD])).toBe(false);
    expect(await gone(["-n", ns, "sampledb", "trio"])).toBe(false);
  }, 420_000);

  it("kubectl apply -k config/default: Ready, trio reconciled", async () => {
    // An overlay of a copy of config/ (kustomize loads bases by relative path only) setting the image.
    cpSync(join(root, "config"), join(work, "kustomize/config"), { recursive: true });
    const overlay = join(work, "kustomize/overlay");
    mkdirSync(overlay);
    const [newName, newTag] = IMAGE.split(":");
    writeFileSync(
      join(overlay, "kustomization.yaml"),
      JSON.stringify({
        resources: ["../config/default"],
        images: [{ name: "ghcr.io/example/sampledb-operator", newName, newTag }],
      }),
    );
    const started = Date.now();
    await world.ok(["apply", "-k", overlay]);
    await world.ok(["-n", NS, "rollout", "status", "deployment/sampledb-operator", "--timeout=180s"]);
    console.log(
      `kubectl apply -k → 2 SampleDB operator pods Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    await scaleTrio(1);
  }, 300_000);
});
