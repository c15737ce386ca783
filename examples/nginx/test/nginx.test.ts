import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import {
  ControlPlane,
  type CrdObject,
  killOperators,
  kubectl,
  type LocalWebhookServing,
  localWebhookServing,
  readManifests,
} from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applySampleUntilReady,
  type Operator,
  root,
  startOperator as runOperator,
  until,
} from "./operator.ts";

// End to end, as a user would: the operator runs as its own process (`npm start`'s command)
// against a simulated cluster, and everything is checked through kubectl.

let plane: ControlPlane;
let serving: LocalWebhookServing;

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });

/** The operator against this file's plane, serving its webhooks where the plane calls them. */
function startOperator(extraEnv: Record<string, string> = {}): Promise<Operator> {
  return runOperator({
    KUBECONFIG: plane.kubeconfigPath,
    WEBHOOK_CERT_DIR: serving.certDir,
    WEBHOOK_PORT: String(serving.port),
    ...extraEnv,
  });
}

/** `kubectl patch --type=merge` of an Nginx. */
const patchNginx = (namespace: string, name: string, patch: string) =>
  k(["-n", namespace, "patch", "nginx", name, "--type=merge", "-p", patch]);

async function jsonpath(args: string[], path: string): Promise<string> {
  return (await k([...args, "-o", `jsonpath=${path}`])).stdout;
}

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name));
  return line ? Number(line.split(" ").at(-1)) : Number.NaN;
}

/** The generated objects of a config file, pointed at the webhook server on this machine. */
function localObjects(file: string): object[] {
  return serving.rewrite(readManifests([join(root, file)]));
}

beforeAll(async () => {
  serving = await localWebhookServing();
  // Hardened as OpenShift and CIS-benchmarked clusters are (see hardened.test.ts): what a user does
  // here must also work there.
  plane = await new ControlPlane({ profile: "cluster", nodes: 2, hardened: true }).start();
  await plane.installCrdObjects(localObjects("config/crd/nginxes.proxy.example.com.yaml") as CrdObject[]);
});
afterAll(async () => {
  killOperators();
  await plane?.stop();
  serving?.dispose();
});

describe("nginx operator", () => {
  let operator: Operator;

  it("turns an Nginx into a Deployment whose pods run, and reports them in its status", async () => {
    operator = await startOperator();
    // The operator serves its admission webhooks; route the API server to them.
    const configurations = localObjects("config/webhook/manifests.yaml");
    const installed = await k(
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: configurations }),
    );
    expect(installed.code, installed.stderr).toBe(0);
    await until(async () => /"webhooks serving"/.test(operator.output()), 30_000, "the webhook server");
    await applySampleUntilReady(plane.kubeconfigPath, "web", 60_000, operator);
    expect(await jsonpath(["-n", "web", "get", "deployment", "web"], "{.status.readyReplicas}")).toBe("3");
    const nodes = (await jsonpath(["-n", "web", "get", "nginx", "web"], "{.status.nodes}"))
      .replace(/[[\]"]/g, "")
      .split(",");
    const pods = (
      await jsonpath(
        ["-n", "web", "get", "pods", "-l", "app.kubernetes.io/instance=web"],
        "{.items[*].metadata.name}",
      )
    ).split(" ");
    expect(nodes.sort()).toEqual(pods.sort());
    const table = await k(["-n", "web", "get", "nginx"]);
    expect(table.stdout).toMatch(/NAME\s+REPLICAS\s+RUNNING\s+READY\s+AGE\nweb\s+3\s+3\s+True/);
    // The defaulting webhook wrote the image as the runtime pulls it.
    expect(await jsonpath(["-n", "web", "get", "nginx", "web"], "{.spec.image}")).toBe(
      "docker.io/nginxinc/nginx-unprivileged:1.27",
    );
    expect(
      await jsonpath(["-n", "web", "get", "deployment", "web"], "{.metadata.ownerReferences[0].kind}"),
    ).toBe("Nginx");
  });

  it("follows scaling up and down", async () => {
    for (const count of [5, 1]) {
      expect((await patchNginx("web", "web", `{"spec":{"replicas":${count}}}`)).code).toBe(0);
      await until(
        async () =>
          (await jsonpath(["-n", "web", "get", "nginx", "web"], "{.status.readyCount}")) === String(count),
        60_000,
        `${count} running pods`,
      );
    }
    // `kubectl scale` works too, through the scale subresource.
    expect((await k(["-n", "web", "scale", "nginx", "web", "--replicas=2"])).code).toBe(0);
    await until(
      async () => (await jsonpath(["-n", "web", "get", "deployment", "web"], "{.spec.replicas}")) === "2",
      30_000,
      "2 replicas",
    );
  });

  it("recreates a deleted Deployment", async () => {
    const uid = await jsonpath(["-n", "web", "get", "deployment", "web"], "{.metadata.uid}");
    expect((await k(["-n", "web", "delete", "deployment", "web"])).code).toBe(0);
    await until(
      async () => {
        const now = await jsonpath(["-n", "web", "get", "deployment", "web"], "{.metadata.uid}");
        return now !== "" && now !== uid;
      },
      30_000,
      "a new Deployment",
    );
  });

  it("rejects an invalid count with the API server's message", async () => {
    const bad = await patchNginx("web", "web", '{"spec":{"replicas":101}}');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(
      "spec.replicas: Invalid value: 101: spec.replicas in body should be less than or equal to 100",
    );
  });

  it("refuses an image from a registry the operator does not allow, with its webhook's message", async () => {
    const bad = await patchNginx("web", "web", '{"spec":{"image":"quay.io/nginx/nginx-unprivileged:1.27"}}');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(
      'admission webhook "validate.nginxes.proxy.example.com" denied the request: spec.image: registry "quay.io" is not allowed; allowed: docker.io, registry.k8s.io, ghcr.io',
    );
    // Allowed but unpinned: accepted, with a warning kubectl prints.
    const unpinned = await patchNginx("web", "web", '{"spec":{"image":"nginx"}}');
    expect(unpinned.code, unpinned.stderr).toBe(0);
    expect(unpinned.stderr).toContain(
      "Warning: spec.image docker.io/library/nginx:latest is not pinned: pods may run different versions",
    );
    expect(await jsonpath(["-n", "web", "get", "nginx", "web"], "{.spec.image}")).toBe(
      "docker.io/library/nginx:latest",
    );
  });

  it("serves the first release's v1alpha1 (count) through its conversion webhook", async () => {
    const applied = await k(["-n", "web", "apply", "-f", join(root, "config/samples/nginx-v1alpha1.yaml")]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toContain("proxy.example.com/v1alpha1 Nginx is deprecated");
    // Stored as v1: read in either version, nothing lost.
    expect(
      await jsonpath(["-n", "web", "get", "nginxes.v1.proxy.example.com", "legacy"], "{.spec.replicas}"),
    ).toBe("2");
    expect(
      await jsonpath(["-n", "web", "get", "nginxes.v1alpha1.proxy.example.com", "legacy"], "{.spec.count}"),
    ).toBe("2");
    await until(
      async () => (await jsonpath(["-n", "web", "get", "nginx", "legacy"], "{.status.readyCount}")) === "2",
      60_000,
      "the v1alpha1 Nginx to run 2 pods",
    );
    const table = await k(["-n", "web", "get", "nginxes.v1alpha1.proxy.example.com", "legacy"]);
    expect(table.stdout).toMatch(/legacy\s+2\s+2\s+True/);
    expect((await k(["-n", "web", "delete", "nginx", "legacy", "--wait=false"])).code).toBe(0);
  });

  it("serves metrics with controller-runtime's names and is ready", async () => {
    expect(
      await metric(
        operator.metricsPort,
        'controller_runtime_reconcile_total{controller="nginx-operator",result="success"}',
      ),
    ).toBeGreaterThan(0);
    const text = await (await fetch(`http://127.0.0.1:${operator.metricsPort}/metrics`)).text();
    for (const name of [
      "workqueue_adds_total",
      "workqueue_depth",
      "controller_runtime_reconcile_time_seconds_bucket",
      "rest_client_requests_total",
    ]) {
      expect(text).toContain(name);
    }
    expect((await fetch(`http://127.0.0.1:${operator.probePort}/readyz`)).status).toBe(200);
  });

  it("lets garbage collection remove everything when the Nginx is deleted", async () => {
    expect((await k(["-n", "web", "delete", "nginx", "web"])).code).toBe(0);
    // kube-controller-manager's garbage collector learns of new CRDs by rereading discovery every
    // 30 s, so right after the CRD is installed this can take that long.
    await until(
      async () => (await k(["-n", "web", "get", "deployment", "web"])).stderr.includes("NotFound"),
      90_000,
      "the Deployment to go",
    );
    await until(
      async () =>
        (await jsonpath(
          ["-n", "web", "get", "pods", "-l", "app.kubernetes.io/instance=web"],
          "{.items[*].metadata.name}",
        )) === "",
      60_000,
      "the pods to go",
    );
    expect(await operator.stop(), operator.output().slice(-3000)).toBe(0);
    // The replicas below run without webhooks; nothing may call a server that is gone.
    expect(
      (
        await k([
          "delete",
          "mutatingwebhookconfiguration/nginx-operator-mutating",
          "validatingwebhookconfiguration/nginx-operator-validating",
        ])
      ).code,
    ).toBe(0);
  });
});

describe("nginx operator's generated config", () => {
  it("is up to date with its resource and controller (kubeloop generate --check)", () => {
    const cli = join(root, "../../packages/kubeloop/dist/cli/main.js");
    // The project's package.json ("kubeloop" section) says what to read.
    const check = spawnSync(process.execPath, [cli, "generate", "--check"], { cwd: root, encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.stdout).toContain(
      "config is up to date (1 CRD, RBAC, webhooks, manifests, Helm chart, OLM bundle)",
    );
    expect(check.status).toBe(0);
  });

  it("passes the API server's validation (kubectl apply/replace --dry-run=server)", async () => {
    // Namespaced objects can be checked only in a namespace that exists.
    expect((await k(["create", "namespace", "nginx-operator-system"])).code).toBe(0);
    // Each folder's objects; its kustomization.yaml is kustomize's, not the API server's.
    const dirs = ["config/rbac", "config/webhook", "config/manager"].flatMap((dir) =>
      readdirSync(join(root, dir))
        .filter((file) => file !== "kustomization.yaml")
        .flatMap((file) => ["-f", join(root, dir, file)]),
    );
    const dry = await k(["apply", "--dry-run=server", ...dirs]);
    expect(dry.code, dry.stderr).toBe(0);
    // The CRD is installed already, pointed at the local webhook server: an apply would merge the
    // two client configs, so replace it whole, as a fresh install would write it.
    const crd = await k([
      "replace",
      "--dry-run=server",
      "-f",
      join(root, "config/crd/nginxes.proxy.example.com.yaml"),
    ]);
    expect(crd.code, crd.stderr).toBe(0);
    expect(crd.stdout).toContain("customresourcedefinition.apiextensions.k8s.io/nginxes.proxy.example.com");
    for (const object of [
      "clusterrole.rbac.authorization.k8s.io/nginx-operator",
      "deployment.apps/nginx-operator",
      "service/nginx-operator-metrics",
      "service/nginx-operator-webhook-service",
      "validatingwebhookconfiguration.admissionregistration.k8s.io/nginx-operator-validating",
      "mutatingwebhookconfiguration.admissionregistration.k8s.io/nginx-operator-mutating",
    ]) {
      expect(dry.stdout).toContain(object);
    }
  });
});

describe("nginx operator under the generated RBAC only", () => {
  it("works with the generated ClusterRole, and without one of its rules says which permission is missing", async () => {
    const identity = "system:serviceaccount:ops:nginx-operator";
    const user = plane.addUser(identity, ["system:serviceaccounts", "system:serviceaccounts:ops"]);
    expect((await k(["apply", "-f", join(root, "config/rbac/role.yaml")])).code).toBe(0);
    expect(
      (
        await k([
          "create",
          "clusterrolebinding",
          "nginx-operator",
          "--clusterrole=nginx-operator",
          `--user=${identity}`,
        ])
      ).code,
    ).toBe(0);
    expect((await k(["create", "namespace", "rbac"])).code).toBe(0);
    const operator = await startOperator({ KUBECONFIG: user.kubeconfigPath, ENABLE_WEBHOOKS: "false" });
    expect((await k(["-n", "rbac", "apply", "-f", join(root, "config/samples/nginx.yaml")])).code).toBe(0);
    await until(
      async () => (await jsonpath(["-n", "rbac", "get", "nginx", "web"], "{.status.readyCount}")) === "3",
      60_000,
      "3 pods",
    );
    expect(await operator.stop(), operator.output().slice(-3000)).toBe(0);

    // Take away the pods rule: on restart the operator cannot sync, and /readyz says why.
    const role = await k(["get", "clusterrole", "nginx-operator", "-o", "json"]);
    const parsed = JSON.parse(role.stdout) as {
      rules: { resources: string[] }[];
      metadata: Record<string, unknown>;
    };
    parsed.rules = parsed.rules.filter((rule) => !rule.resources.includes("pods"));
    expect((await k(["replace", "-f", "-"], JSON.stringify(parsed))).code).toBe(0);
    const crippled = await startOperator({ KUBECONFIG: user.kubeconfigPath, ENABLE_WEBHOOKS: "false" });
    let body = "";
    await until(
      async () => {
        const response = await fetch(`http://127.0.0.1:${crippled.probePort}/readyz?verbose`).catch(
          () => undefined,
        );
        body = response ? await response.text() : "";
        return response?.status === 500 && body.includes("forbidden");
      },
      30_000,
      "/readyz to report the missing permission",
    );
    expect(body).toContain(`User "${identity}" cannot list resource "pods"`);
    crippled.kill();
  });
});

describe("nginx operator, two replicas with leader election", () => {
  it("reconciles with one replica only, and fails over to the other when the leader is killed", async () => {
    expect((await k(["create", "namespace", "ha"])).code).toBe(0);
    const env = { LEADER_ELECT: "true", LEADER_ELECTION_NAMESPACE: "ha", ENABLE_WEBHOOKS: "false" };
    const a = await startOperator(env);
    await until(
      async () =>
        (await jsonpath(["-n", "ha", "get", "lease", "nginx-operator"], "{.spec.holderIdentity}")) !== "",
      30_000,
      "a leader",
    );
    const b = await startOperator(env);
    await until(() => /waiting for leadership/.test(b.output()), 30_000, "the standby to campaign");
    const leaderStatus = (o: Operator) =>
      metric(o.metricsPort, 'leader_election_master_status{name="nginx-operator"}');
    expect(await leaderStatus(a)).toBe(1);
    expect(await leaderStatus(b)).toBe(0);
    expect((await k(["-n", "ha", "apply", "-f", join(root, "config/samples/nginx.yaml")])).code).toBe(0);
    await until(
      async () => (await jsonpath(["-n", "ha", "get", "nginx", "web"], "{.status.readyCount}")) === "3",
      60_000,
      "3 pods",
    );
    const reconciles = (o: Operator) =>
      metric(
        o.metricsPort,
        'controller_runtime_reconcile_total{controller="nginx-operator",result="success"}',
      );
    expect(await reconciles(a)).toBeGreaterThan(0);
    expect(await reconciles(b)).toBe(0);

    const killedAt = Date.now();
    a.kill();
    await until(async () => (await leaderStatus(b)) === 1, 30_000, "the standby to take over");
    // The standby may take over once the record it last saw is a lease duration old (15 s); that
    // record can be up to one jittered retry period (2.4 s) older than the kill, and its next try
    // comes up to one more later: 19.8 s at most, plus this test's polling on a loaded machine.
    expect(Date.now() - killedAt).toBeLessThan(15_000 + 2 * 2_400 + 3_000);
    expect((await patchNginx("ha", "web", '{"spec":{"replicas":2}}')).code).toBe(0);
    await until(
      async () => (await jsonpath(["-n", "ha", "get", "nginx", "web"], "{.status.readyCount}")) === "2",
      60_000,
      "the new leader to reconcile",
    );
    expect(await reconciles(b)).toBeGreaterThan(0);

    expect(await b.stop(), b.output().slice(-3000)).toBe(0);
    // Released on shutdown: the next replica need not wait out the lease.
    expect(await jsonpath(["-n", "ha", "get", "lease", "nginx-operator"], "{.spec.holderIdentity}")).toBe("");
  });
});
