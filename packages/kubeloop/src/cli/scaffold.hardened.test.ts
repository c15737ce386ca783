import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { until as pollFor } from "../../test/helpers.js";
import { ControlPlane } from "../testing/control-plane.js";
import { kubectl } from "../testing/kubectl.js";

// A scaffolded project whose controller owns a child, as its controller's comment suggests, runs
// as its ServiceAccount under nothing but its generated RBAC on an API server that enforces owner
// references (the hardened profile; apiserver is enough, no pods are involved). The project uses
// this repository's kubeloop and dependencies through a node_modules link, so nothing is installed.

const cli = join(import.meta.dirname, "../../dist/cli/main.js");
const repoModules = join(import.meta.dirname, "../../../../node_modules");
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-scaffold-hardened-"));
const project = join(tmp, "harbor");
const NAMESPACE = "harbor-system";
const IDENTITY = `system:serviceaccount:${NAMESPACE}:harbor`;

let plane: ControlPlane;
let manager: ChildProcess | undefined;
let output = "";

function kubeloop(cwd: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [cli, ...args], { cwd, encoding: "utf8", timeout: 120_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });

/** Polls until `check` holds; a timeout shows what the operator printed. */
const until = (check: () => Promise<boolean>, ms: number, what: string) =>
  pollFor(check, ms, what, () => output);

/** The scaffolded controller, made to own a ConfigMap the way its own comment says to. */
function ownAConfigMap(): void {
  const path = join(project, "src/controllers/dock.ts");
  const source = readFileSync(path, "utf8");
  const edited = source
    .replace(
      'import { controller, done } from "kubeloop";',
      'import { controller, done } from "kubeloop";\nimport { ConfigMap } from "kubeloop/k8s";',
    )
    .replace('.named("dock")', '.named("dock")\n  .owns(ConfigMap)')
    .replace(
      "    await ctx.status({}, { ready: true });",
      `    await ctx.apply({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: dock.metadata.name, namespace: dock.metadata.namespace },
      data: { size: String(dock.spec.size) },
    });
    await ctx.status({}, { ready: true });`,
    );
  expect(edited).toContain(".owns(ConfigMap)");
  expect(edited).toContain("await ctx.apply(");
  writeFileSync(path, edited);
}

beforeAll(async () => {
  expect(kubeloop(tmp, "init", "harbor", "--domain", "example.org", "--skip-install").code).toBe(0);
  const created = kubeloop(project, "create", "api", "--group", "ship", "--version", "v1", "--kind", "Dock");
  expect(created.code, created.stderr).toBe(0);
  symlinkSync(repoModules, join(project, "node_modules"), "dir");
  ownAConfigMap();
  const generated = kubeloop(project, "generate");
  expect(generated.code, generated.stderr).toBe(0);
  plane = await new ControlPlane({ profile: "apiserver", hardened: true }).start();
});
afterAll(async () => {
  manager?.kill("SIGKILL");
  await plane?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe("a scaffolded project on a hardened API server", () => {
  it("generates update on its kind's finalizers", () => {
    const role = parse(readFileSync(join(project, "config/rbac/role.yaml"), "utf8")) as {
      kind: string;
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    expect(role.kind).toBe("ClusterRole");
    expect(role.rules).toContainEqual({
      apiGroups: ["ship.example.org"],
      resources: ["docks/finalizers"],
      verbs: ["update"],
    });
  });

  it("runs its controller as its ServiceAccount under the generated RBAC, children owned with blockOwnerDeletion", async () => {
    const dirs = ["config/crd", "config/manager/namespace.yaml", "config/manager/service-account.yaml"];
    for (const file of [...dirs, "config/rbac", "config/manager/role-bindings.yaml"]) {
      // A folder is a kustomization (kubeloop generate writes one in each): apply it as one.
      const applied = await k(["apply", file.endsWith(".yaml") ? "-f" : "-k", join(project, file)]);
      expect(applied.code, applied.stderr).toBe(0);
    }
    const kubeconfig = (await plane.serviceAccountUser(NAMESPACE, "harbor")).kubeconfigPath;
    await until(
      async () =>
        (await k(["wait", "--for=condition=Established", "crd/docks.ship.example.org", "--timeout=10s"]))
          .code === 0,
      30_000,
      "the CRD",
    );
    manager = spawn(process.execPath, ["src/main.ts", "--kubeconfig", kubeconfig], {
      cwd: project,
      env: { ...process.env, METRICS_PORT: "0", PROBE_PORT: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
    };
    manager.stdout?.on("data", collect);
    manager.stderr?.on("data", collect);

    const sample = await k(["-n", "default", "apply", "-f", join(project, "config/samples")]);
    expect(sample.code, sample.stderr).toBe(0);
    const name = (await k(["-n", "default", "get", "docks", "-o", "jsonpath={.items[0].metadata.name}"]))
      .stdout;
    await until(
      async () =>
        (
          await k([
            "-n",
            "default",
            "get",
            "dock",
            name,
            "-o",
            'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
          ])
        ).stdout === "True",
      60_000,
      "Ready=True",
    );
    const child = JSON.parse((await k(["-n", "default", "get", "configmap", name, "-o", "json"])).stdout) as {
      data: { size: string };
      metadata: { ownerReferences: object[]; managedFields?: unknown };
    };
    expect(child.data.size).toBe("3");
    expect(child.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "Dock", name, controller: true, blockOwnerDeletion: true }),
    ]);
    // Written by the project's ServiceAccount, not the admin.
    const writes = readFileSync(plane.auditLogPath, "utf8")
      .trim()
      .split("\n")
      .map(
        (line) =>
          JSON.parse(line) as {
            user: { username: string };
            objectRef?: { resource?: string; name?: string };
            responseStatus?: { code?: number };
          },
      )
      .filter(
        (r) =>
          r.objectRef?.resource === "configmaps" && r.objectRef.name === name && r.user.username === IDENTITY,
      );
    expect(writes.map((r) => r.responseStatus?.code)).toContain(201);
  });
});
