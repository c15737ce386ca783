import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ControlPlane,
  type CrdObject,
  kubectl,
  type LocalWebhookServing,
  localWebhookServing,
  pollUntil,
  readManifests,
} from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The operator installed as its generated config says — its ServiceAccount, bound only to the
// generated roles, with a token from the TokenRequest API — on a cluster hardened as OpenShift and
// CIS-benchmarked distributions are: owner-reference permission enforcement, Pod Security
// `restricted` enforced on every namespace, AlwaysPullImages, anonymous access off, an audit log.

const root = join(import.meta.dirname, "..");
const NAMESPACE = "nginx-operator-system";
const IDENTITY = `system:serviceaccount:${NAMESPACE}:nginx-operator`;
/** The API server's words when a child's owner reference blocks deletion of an owner it may not finalize. */
const BLOCK_OWNER_DELETION_FORBIDDEN =
  "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on";

let plane: ControlPlane;
let serving: LocalWebhookServing;
let operator: ChildProcess | undefined;
let output = "";

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });

async function jsonpath(args: string[], path: string): Promise<string> {
  return (await k([...args, "-o", `jsonpath=${path}`])).stdout;
}

/** Polls `check` every 200 ms; after `ms`, throws naming `what`, followed by the operator's output. */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  await pollUntil(check, { timeoutMs: ms, intervalMs: 200, message: what }).catch((error: Error) => {
    throw new Error(`${error.message}\n${output}`, { cause: error });
  });
}

/** The generated objects of config files, pointed at the webhook server on this machine. */
const localObjects = (...files: string[]): object[] =>
  serving.rewrite(readManifests(files.map((f) => join(root, f))));

const asList = (items: object[]) => JSON.stringify({ apiVersion: "v1", kind: "List", items });

interface AuditRecord {
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
}

const auditRecords = (): AuditRecord[] =>
  readFileSync(plane.auditLogPath, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as AuditRecord);

beforeAll(async () => {
  serving = await localWebhookServing();
  plane = await new ControlPlane({ profile: "cluster", hardened: true }).start();
  await plane.installCrdObjects(localObjects("config/crd/nginxes.proxy.example.com.yaml") as CrdObject[]);
  // What `kubeloop deploy` installs, but for the Deployment: the operator runs here as a process.
  const install = await k(
    ["apply", "-f", "-"],
    asList(
      localObjects(
        "config/manager/namespace.yaml",
        "config/manager/service-account.yaml",
        "config/rbac",
        "config/manager/role-bindings.yaml",
        "config/webhook/manifests.yaml",
      ),
    ),
  );
  expect(install.code, install.stderr).toBe(0);
  operator = spawn(process.execPath, [join(root, "src/main.ts")], {
    env: {
      ...process.env,
      KUBECONFIG: (await plane.serviceAccountUser(NAMESPACE, "nginx-operator")).kubeconfigPath,
      METRICS_PORT: "0",
      PROBE_PORT: "0",
      LEADER_ELECT: "true",
      LEADER_ELECTION_NAMESPACE: NAMESPACE,
      WEBHOOK_CERT_DIR: serving.certDir,
      WEBHOOK_PORT: String(serving.port),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  operator.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  operator.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  await until(async () => output.includes('"webhooks serving"'), 30_000, "the webhook server");
});
afterAll(async () => {
  operator?.kill("SIGKILL");
  await plane?.stop();
  serving?.dispose();
});

describe("nginx operator on a hardened cluster, as its ServiceAccount with the generated RBAC", () => {
  it("turns an Nginx into a Deployment it owns, whose restricted pods run", async () => {
    // No Pod Security label: the cluster's default, restricted, applies.
    expect((await k(["create", "namespace", "web"])).code).toBe(0);
    const applied = await k(["-n", "web", "apply", "-f", join(root, "config/samples/nginx.yaml")]);
    expect(applied.code, applied.stderr).toBe(0);
    await until(
      async () =>
        (await jsonpath(
          ["-n", "web", "get", "nginx", "web"],
          '{.status.conditions[?(@.type=="Ready")].status}',
        )) === "True",
      90_000,
      "Ready=True",
    );
    expect(await jsonpath(["-n", "web", "get", "deployment", "web"], "{.status.readyReplicas}")).toBe("3");
    const owner = JSON.parse(
      await jsonpath(["-n", "web", "get", "deployment", "web"], "{.metadata.ownerReferences[0]}"),
    ) as { kind: string; controller: boolean; blockOwnerDeletion: boolean };
    expect(owner).toMatchObject({ kind: "Nginx", controller: true, blockOwnerDeletion: true });
    // The webhook qualified the image; AlwaysPullImages rewrote the pods' pull policy.
    expect(
      await jsonpath(
        ["-n", "web", "get", "pods", "-l", "app.kubernetes.io/instance=web"],
        "{.items[*].spec.containers[0].imagePullPolicy}",
      ),
    ).toBe("Always Always Always");
    // The operator's own identity wrote the Deployment, not an admin.
    const writes = auditRecords().filter(
      (r) =>
        r.objectRef?.resource === "deployments" && r.objectRef.name === "web" && r.user.username === IDENTITY,
    );
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((r) => (r.responseStatus?.code ?? 0) < 300)).toBe(true);
  });

  it("installs its generated manager Deployment, whose pods pass Pod Security restricted", async () => {
    const applied = await k(["apply", "-f", join(root, "config/manager/deployment.yaml")]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).not.toContain("PodSecurity");
    // The ReplicaSet's pods exist only if admission let them in.
    await until(
      async () =>
        (
          await jsonpath(
            ["-n", NAMESPACE, "get", "pods", "-l", "app.kubernetes.io/name=nginx-operator"],
            "{.items[*].metadata.name}",
          )
        )
          .split(" ")
          .filter(Boolean).length === 2,
      30_000,
      "the manager's 2 pods",
    );
  });

  it("without update on nginxes/finalizers is refused the Deployment, and says why in Ready", async () => {
    // The failure this grant prevents, reproduced: take the rule away from the running operator.
    const role = JSON.parse((await k(["get", "clusterrole", "nginx-operator", "-o", "json"])).stdout) as {
      rules: { resources: string[] }[];
    };
    const without = role.rules.filter((rule) => !rule.resources.includes("nginxes/finalizers"));
    expect(without).toHaveLength(role.rules.length - 1);
    const replaced = await k(["replace", "-f", "-"], JSON.stringify({ ...role, rules: without }));
    expect(replaced.code, replaced.stderr).toBe(0);
    // RBAC is read from the API server's cache: wait until it has the change.
    await until(
      async () =>
        (
          await k([
            "auth",
            "can-i",
            "update",
            "nginxes.proxy.example.com/blocked",
            "--subresource=finalizers",
            "-n",
            "web",
            `--as=${IDENTITY}`,
          ])
        ).stdout.trim() === "no",
      10_000,
      "the role change to take effect",
    );
    const applied = await k(
      ["-n", "web", "apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "proxy.example.com/v1",
        kind: "Nginx",
        metadata: { name: "blocked" },
        spec: { replicas: 1 },
      }),
    );
    expect(applied.code, applied.stderr).toBe(0);
    let message = "";
    await until(
      async () => {
        message = await jsonpath(
          ["-n", "web", "get", "nginx", "blocked"],
          '{.status.conditions[?(@.type=="Ready")].message}',
        );
        return message.includes("forbidden");
      },
      60_000,
      "the Ready condition to report the refusal",
    );
    expect(message).toContain(`deployments.apps "blocked" is forbidden: ${BLOCK_OWNER_DELETION_FORBIDDEN}`);
    expect((await k(["-n", "web", "get", "deployment", "blocked"])).stderr).toContain("NotFound");
  });
});
