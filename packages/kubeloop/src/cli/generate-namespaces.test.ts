import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { cachedProjectDir, DIST as dist, resourceModule, runCli } from "../../test/cli-project.js";

// `kubeloop generate` for an operator that watches some namespaces: Roles and RoleBindings there,
// a ClusterRole only for what is cluster-scoped, WATCH_NAMESPACE in the Deployment, and --check.

const dir = cachedProjectDir("generate-namespaces");

beforeAll(() => {
  writeFileSync(
    join(dir, "resources.mjs"),
    resourceModule(`export const Shop = defineResource({
  group: "shop.example.com", version: "v1", kind: "Shop",
  spec: Type.Object({ size: Type.Integer() }),
});
`),
  );
  writeFileSync(
    join(dir, "controllers.mjs"),
    `import { controller } from ${JSON.stringify(join(dist, "controller/index.js"))};
import { Deployment, Node } from ${JSON.stringify(join(dist, "k8s/index.js"))};
import { Shop } from "./resources.mjs";
export const shops = controller(Shop).owns(Deployment).reconcile(() => undefined);
export const placement = controller(Shop).named("placement").watches(Node, () => undefined).reconcile(() => undefined);
`,
  );
  writeFileSync(
    join(dir, "namespaced-only.mjs"),
    `export { shops } from "./controllers.mjs";
`,
  );
});

const generate = (...args: string[]) =>
  runCli(dir, ["generate", "--resources", "resources.mjs", "--name", "shops", "--image", "shops:1", ...args]);

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { resources: string[] }[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
  spec?: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
}

const read = (out: string, file: string): Manifest[] =>
  parseAllDocuments(readFileSync(join(dir, out, file), "utf8")).map((doc) => doc.toJS() as Manifest);

describe("kubeloop generate --namespaces", () => {
  it("writes a Role and a RoleBinding per namespace, bound to the operator's ServiceAccount, and no ClusterRole when nothing is cluster-scoped", () => {
    const args = ["--controllers", "namespaced-only.mjs", "--namespaces", "team-a,team-b", "--out", "a"];
    const written = generate(...args);
    expect(written.code, written.stderr).toBe(0);
    const roles = read("a", "rbac/role.yaml");
    expect(roles.map((r) => `${r.kind} ${r.metadata.namespace}/${r.metadata.name}`)).toEqual([
      "Role team-a/shops",
      "Role team-b/shops",
    ]);
    expect(roles[0]?.rules).toEqual(roles[1]?.rules);
    expect(roles[0]?.rules?.map((rule) => rule.resources[0])).toContain("deployments");
    const bindings = read("a", "manager/role-bindings.yaml");
    expect(
      bindings.map((b) => `${b.kind} ${b.metadata.namespace}/${b.metadata.name} → ${b.roleRef?.kind}`),
    ).toEqual([
      "RoleBinding team-a/shops → Role",
      "RoleBinding team-b/shops → Role",
      "RoleBinding shops-system/shops-leader-election → Role",
      // Its self-issued metrics certificate's Secret, in its own namespace.
      "RoleBinding shops-system/shops-serving-certs → Role",
    ]);
    for (const binding of bindings) {
      expect(binding.subjects).toEqual([
        { kind: "ServiceAccount", name: "shops", namespace: "shops-system" },
      ]);
    }
    const [deployment] = read("a", "manager/deployment.yaml");
    expect(deployment?.spec?.template.spec.containers[0]?.env).toContainEqual({
      name: "WATCH_NAMESPACE",
      value: "team-a,team-b",
    });
    expect(generate(...args, "--check").code).toBe(0);
  });

  it("keeps a ClusterRole (and its binding) for cluster-scoped types only", () => {
    const written = generate("--controllers", "controllers.mjs", "--namespaces", "team-a", "--out", "b");
    expect(written.code, written.stderr).toBe(0);
    const roles = read("b", "rbac/role.yaml");
    expect(roles.map((r) => `${r.kind} ${r.metadata.namespace ?? ""}`)).toEqual([
      "ClusterRole ",
      "Role team-a",
    ]);
    expect(roles[0]?.rules?.map((rule) => rule.resources[0])).toEqual(["nodes"]);
    expect(roles[1]?.rules?.some((rule) => rule.resources.includes("nodes"))).toBe(false);
    expect(read("b", "manager/role-bindings.yaml").map((b) => b.kind)).toEqual([
      "ClusterRoleBinding",
      "RoleBinding",
      "RoleBinding",
      "RoleBinding",
    ]);
  });

  it("reads the namespaces from package.json, and --check fails when they changed", () => {
    const project = join(dir, "project");
    mkdirSync(project, { recursive: true });
    for (const file of ["resources.mjs", "controllers.mjs", "namespaced-only.mjs"])
      writeFileSync(join(project, file), readFileSync(join(dir, file)));
    const writeProject = (namespaces: string[]) =>
      writeFileSync(
        join(project, "package.json"),
        JSON.stringify({
          name: "shops",
          version: "0.1.0",
          type: "module",
          kubeloop: {
            resources: "resources.mjs",
            controllers: "namespaced-only.mjs",
            image: "shops:1",
            namespaces,
          },
        }),
      );
    const run = (...args: string[]) => runCli(project, ["generate", ...args]);
    writeProject(["team-a", "team-b"]);
    expect(run().code).toBe(0);
    expect(run("--check").stdout).toContain("config is up to date");
    writeProject(["team-a", "team-c"]);
    const check = run("--check");
    expect(check.code).toBe(1);
    expect(check.stderr).toContain("out of date: config/rbac/role.yaml");
    expect(check.stderr).toContain("out of date: config/manager/role-bindings.yaml");
    expect(check.stderr).toContain("out of date: config/manager/deployment.yaml");
    // An empty list is all namespaces: today's ClusterRole.
    writeProject([]);
    expect(run().code).toBe(0);
    expect(read("project/config", "rbac/role.yaml").map((r) => r.kind)).toEqual(["ClusterRole"]);
  });

  it("refuses a malformed namespace, saying where it came from", () => {
    const bad = generate("--controllers", "controllers.mjs", "--namespaces", "team-a,Team_B", "--out", "c");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--namespaces: "Team_B" is not a namespace name');
  });
});
