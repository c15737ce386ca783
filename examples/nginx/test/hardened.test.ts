import { join } from "node:path";
import {
  ControlPlane,
  type CrdObject,
  killOperators,
  kubectl,
  type LocalWebhookServing,
  localWebhookServing,
  readManifests,
  revokeRule,
} from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applySampleUntilReady, type Operator, root, startOperator } from "./operator.ts";

// The operator installed as its generated config says — its ServiceAccount, bound only to the
// generated roles, with a token from the TokenRequest API — on a cluster hardened as OpenShift and
// CIS-benchmarked distributions are: owner-reference permission enforcement, Pod Security
// `restricted` enforced on every namespace, AlwaysPullImages, anonymous access off, an audit log.

const NAMESPACE = "nginx-operator-system";
const IDENTITY = `system:serviceaccount:${NAMESPACE}:nginx-operator`;
/** The API server's words when a child's owner reference blocks deletion of an owner it may not finalize. */
const BLOCK_OWNER_DELETION_FORBIDDEN =
  "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on";

let plane: ControlPlane;
let serving: LocalWebhookServing;
let operator: Operator;

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });

async function jsonpath(args: string[], path: string): Promise<string> {
  return (await k([...args, "-o", `jsonpath=${path}`])).stdout;
}

/** Polls `check` every 200 ms; after `ms`, throws naming `what`, followed by the operator's output. */
const until = (check: () => Promise<boolean>, ms: number, what: string) =>
  operator.waitUntil(check, { timeoutMs: ms, intervalMs: 200, message: what });

/** The generated objects of config files, pointed at the webhook server on this machine. */
const localObjects = (...files: string[]): object[] =>
  serving.rewrite(readManifests(files.map((f) => join(root, f))));

const asList = (items: object[]) => JSON.stringify({ apiVersion: "v1", kind: "List", items });

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
  operator = await startOperator({
    KUBECONFIG: (await plane.serviceAccountUser(NAMESPACE, "nginx-operator")).kubeconfigPath,
    LEADER_ELECT: "true",
    LEADER_ELECTION_NAMESPACE: NAMESPACE,
    WEBHOOK_CERT_DIR: serving.certDir,
    WEBHOOK_PORT: String(serving.port),
  });
  await until(async () => operator.output().includes('"webhooks serving"'), 30_000, "the webhook server");
});
afterAll(async () => {
  killOperators();
  await plane?.stop();
  serving?.dispose();
});

describe("nginx operator on a hardened cluster, as its ServiceAccount with the generated RBAC", () => {
  it("turns an Nginx into a Deployment it owns, whose restricted pods run", async () => {
    // No Pod Security label: the cluster's default, restricted, applies.
    await applySampleUntilReady(plane.kubeconfigPath, "web", 90_000, operator);
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
    const writes = plane
      .auditRecords()
      .filter(
        (r) =>
          r.objectRef?.resource === "deployments" &&
          r.objectRef.name === "web" &&
          r.user.username === IDENTITY,
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

  it("without update on nginxes/finalizers is refused its Deployment and Service, and says why in Ready", async () => {
    // The failure this grant prevents, reproduced: take the rule away from the running operator.
    await revokeRule({
      kubeconfig: plane.kubeconfigPath,
      role: "clusterrole/nginx-operator",
      resource: "nginxes/finalizers",
      as: IDENTITY,
    });
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
    // Two controllers own the Nginx's children (the Deployment, the Service) and report into the
    // same Ready condition: whichever was refused last says why.
    expect(message).toMatch(/^(deployments\.apps|services) "blocked" is forbidden: /);
    expect(message).toContain(BLOCK_OWNER_DELETION_FORBIDDEN);
    expect((await k(["-n", "web", "get", "deployment", "blocked"])).stderr).toContain("NotFound");
    expect((await k(["-n", "web", "get", "service", "blocked"])).stderr).toContain("NotFound");
  });
});
