import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControlPlane, type CrdObject, killOperators, kubectl, readManifests } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root, startOperator, until } from "./operator.ts";

// The nginx operator installed the way a multi-tenant cluster allows (OLM's MultiNamespace mode):
// it watches two namespaces, and its ServiceAccount has Roles there and nothing cluster-wide —
// the RBAC and Deployment written by `kubeloop generate --namespaces`, applied with kubectl. The
// operator authenticates with a token minted for that ServiceAccount by the TokenRequest API.

const WATCHED = ["team-a", "team-b"];
const OPERATOR_NAMESPACE = "nginx-operator-system";
const cli = join(root, "../../packages/kubeloop/dist/cli/main.js");

let plane: ControlPlane;
let generated: string;

const k = (args: string[]) => kubectl(args, { kubeconfig: plane.kubeconfigPath });
const jsonpath = async (args: string[], path: string) =>
  (await k([...args, "-o", `jsonpath=${path}`])).stdout;

interface Manifest {
  kind: string;
  spec?: { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } };
}
const manifests = (file: string) => readManifests([join(generated, file)]) as unknown as Manifest[];

beforeAll(async () => {
  generated = mkdtempSync(join(tmpdir(), "nginx-namespaces-"));
  plane = await new ControlPlane({ profile: "cluster", nodes: 1 }).start();
  await plane.installCrdObjects(readManifests([join(root, "config/crd")]) as unknown as CrdObject[]);
});
afterAll(async () => {
  killOperators();
  await plane?.stop();
  rmSync(generated, { recursive: true, force: true });
});

describe("nginx operator watching two namespaces under Roles only", () => {
  it("reconciles the Nginxes of its namespaces, with the generated Roles and a TokenRequest token, and leaves the others alone", async () => {
    const generate = spawnSync(
      process.execPath,
      [cli, "generate", "--namespaces", WATCHED.join(","), "--out", generated],
      { cwd: root, encoding: "utf8" },
    );
    expect(generate.status, generate.stderr).toBe(0);
    expect(manifests("rbac/role.yaml").map((m) => m.kind)).toEqual(["Role", "Role"]);
    expect(manifests("manager/role-bindings.yaml").map((m) => m.kind)).toEqual([
      "RoleBinding",
      "RoleBinding",
      "RoleBinding",
      // Its self-issued certificates: the Secrets (a Role), the webhooks' caBundles (a ClusterRole).
      "RoleBinding",
      "ClusterRoleBinding",
    ]);
    const env = manifests("manager/deployment.yaml")[0]?.spec?.template?.spec?.containers?.[0]?.env ?? [];
    const watchNamespace = env.find((e) => e.name === "WATCH_NAMESPACE")?.value;
    expect(watchNamespace).toBe("team-a,team-b");

    for (const namespace of [...WATCHED, "team-c"])
      expect((await k(["create", "namespace", namespace])).code).toBe(0);
    const files = [
      "manager/namespace.yaml",
      "manager/service-account.yaml",
      "rbac/role.yaml",
      "rbac/leader-election-role.yaml",
      "manager/role-bindings.yaml",
    ];
    for (const file of files) {
      const applied = await k(["apply", "-f", join(generated, file)]);
      expect(applied.code, applied.stderr).toBe(0);
    }
    const kubeconfig = (await plane.serviceAccountUser(OPERATOR_NAMESPACE, "nginx-operator")).kubeconfigPath;
    // What the generated Deployment sets, but for the webhooks (they need a serving certificate).
    const operator = await startOperator({
      KUBECONFIG: kubeconfig,
      WATCH_NAMESPACE: watchNamespace ?? "",
      POD_NAMESPACE: OPERATOR_NAMESPACE,
      LEADER_ELECT: "true",
      ENABLE_WEBHOOKS: "false",
    });
    for (const namespace of [...WATCHED, "team-c"]) {
      const applied = await k(["-n", namespace, "apply", "-f", join(root, "config/samples/nginx.yaml")]);
      expect(applied.code, applied.stderr).toBe(0);
    }
    for (const namespace of WATCHED) {
      await until(
        async () =>
          (await jsonpath(
            ["-n", namespace, "get", "nginx", "web"],
            '{.status.conditions[?(@.type=="Ready")].status}',
          )) === "True",
        90_000,
        `the Nginx of ${namespace} to be Ready`,
      );
      expect(await jsonpath(["-n", namespace, "get", "nginx", "web"], "{.status.readyCount}")).toBe("3");
      expect(
        await jsonpath(["-n", namespace, "get", "deployment", "web"], "{.metadata.ownerReferences[0].kind}"),
      ).toBe("Nginx");
    }
    expect(operator.output()).toContain("watching namespaces team-a, team-b");
    expect((await fetch(`http://127.0.0.1:${operator.probePort}/readyz`)).status).toBe(200);
    // The leader-election Role and binding in the operator's namespace are enough for its Lease.
    expect(
      await jsonpath(["-n", OPERATOR_NAMESPACE, "get", "lease", "nginx-operator"], "{.spec.holderIdentity}"),
    ).not.toBe("");

    // team-c is not watched: its Nginx got no Deployment and no status.
    expect((await k(["-n", "team-c", "get", "deployment", "web"])).stderr).toContain("NotFound");
    expect(await jsonpath(["-n", "team-c", "get", "nginx", "web"], "{.status}")).toBe("");
    // And the operator's identity really has nothing cluster-wide.
    const asOperator = await kubectl(["get", "nginxes", "--all-namespaces"], { kubeconfig });
    expect(asOperator.stderr).toContain("cannot list resource");

    expect(await operator.stop(), operator.output().slice(-3000)).toBe(0);
  });
});
