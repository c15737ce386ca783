import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI as cli, describedResourceModule } from "../../test/cli-project.js";
import { type Finding, liveChecks, staticChecks } from "./check.js";
import { loadProject } from "./project.js";
import { toYaml } from "./yaml.js";

// `kubeloop check`: each check passes on the nginx example and fails, saying why and how to fix
// it, on a project broken on purpose. The live checks run a real manager on the cluster profile.

const WORKSPACE = resolve(import.meta.dirname, "../../../..");
// Outside node_modules (Node strips types only elsewhere), with links to kubeloop and typebox.
const dir = mkdtempSync(join(tmpdir(), "kubeloop-check-"));
const EXAMPLES = join(WORKSPACE, "examples");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const described = (type: string, extra: object = {}) => ({ type, description: `a ${type}`, ...extra });
const crd = (name: string, version: object) => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: `${name}.broken.example.com` },
  spec: {
    group: "broken.example.com",
    scope: "Namespaced",
    names: { plural: name, kind: name[0]?.toUpperCase() + name.slice(1, -1) },
    versions: [{ name: "v1", served: true, storage: true, ...version }],
  },
});
const schema = (properties: object) => ({
  schema: { openAPIV3Schema: { type: "object", description: "A kind.", properties } },
});
const spec = described("object", { properties: { size: described("integer") } });
const status = described("object", { properties: { ready: described("boolean") } });

function brokenConfig(name: string, crds: object[], rules: object[]): string {
  const config = join(dir, name);
  mkdirSync(join(config, "crd"), { recursive: true });
  mkdirSync(join(config, "rbac"), { recursive: true });
  crds.forEach((object, i) => {
    writeFileSync(join(config, "crd", `${i}.yaml`), toYaml(object));
  });
  const role = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, rules };
  writeFileSync(join(config, "rbac", "role.yaml"), toYaml(role));
  return config;
}

const byCheck = (findings: Finding[]) => Object.fromEntries(findings.map((f) => [f.check, f.message]));

describe("kubeloop check, static", () => {
  it("passes the nginx example", () => {
    expect(staticChecks(join(EXAMPLES, "nginx/config"))).toEqual([]);
    const run = spawnSync(process.execPath, [cli, "check"], {
      cwd: join(EXAMPLES, "nginx"),
      encoding: "utf8",
    });
    expect(run.status, run.stdout).toBe(0);
    expect(run.stdout).toContain("pass  crd-descriptions");
  });

  it("fails each CRD check on a CRD broken for it, naming the version, the field and the fix", () => {
    const config = brokenConfig(
      "crds",
      [
        crd("noschemas", {}),
        crd("undescribeds", {
          ...schema({ spec: { type: "object", properties: { size: { type: "integer" } } }, status }),
          subresources: { status: {} },
        }),
        crd("flats", { ...schema({ size: described("integer") }), subresources: { status: {} } }),
        crd("nostatuses", schema({ spec, status })),
      ],
      [],
    );
    const findings = byCheck(staticChecks(config));
    expect(findings["crd-schema"]).toBe(
      "CRD noschemas.broken.example.com version v1 has no openAPIV3Schema: define the version with a TypeBox schema (defineResource's spec and status).",
    );
    expect(findings["crd-descriptions"]).toContain(
      "CRD undescribeds.broken.example.com version v1: no description on spec, spec.size. Give each field a description",
    );
    expect(findings["crd-spec-status"]).toBe(
      "CRD flats.broken.example.com version v1: no spec or status; fields outside spec and status (size). Put what the user asks for under spec and what the operator observes under status.",
    );
    expect(findings["crd-status-subresource"]).toContain(
      "CRD nostatuses.broken.example.com version v1 has no status subresource",
    );
    expect(Object.keys(findings).sort()).toEqual([
      "crd-descriptions",
      "crd-schema",
      "crd-spec-status",
      "crd-status-subresource",
    ]);
  });

  it("fails RBAC with a wildcard or deletecollection, unless the project declares it", () => {
    const config = brokenConfig(
      "rbac",
      [],
      [
        { apiGroups: ["apps"], resources: ["*"], verbs: ["get"] },
        { apiGroups: [""], resources: ["configmaps"], verbs: ["delete", "deletecollection"] },
      ],
    );
    const findings = byCheck(staticChecks(config));
    expect(findings["rbac-wildcards"]).toBe(
      'ClusterRole rbac grants "*" in resources (apps/*: get): name the groups, resources and verbs the controllers use, or declare it with --allow wildcard.',
    );
    expect(findings["rbac-deletecollection"]).toContain(
      "ClusterRole rbac grants deletecollection (core/configmaps: delete,deletecollection)",
    );
    expect(staticChecks(config, { allow: ["wildcard", "deletecollection"] })).toEqual([]);
  });
});

describe("kubeloop check --live", () => {
  it("fails owner references and cleanup for what an operator leaks, and passes what it owns", async () => {
    const project = join(dir, "leaky");
    mkdirSync(join(project, "src"), { recursive: true });
    mkdirSync(join(project, "config/samples"), { recursive: true });
    mkdirSync(join(project, "node_modules"));
    symlinkSync(join(WORKSPACE, "packages/kubeloop"), join(project, "node_modules/kubeloop"));
    symlinkSync(join(WORKSPACE, "node_modules/typebox"), join(project, "node_modules/typebox"));
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({
        name: "leaky",
        version: "0.1.0",
        type: "module",
        kubeloop: { resources: "src/resources.ts", controllers: "src/controllers.ts" },
      }),
    );
    writeFileSync(
      join(project, "src/resources.ts"),
      describedResourceModule("kubeloop/resources", "check.kubeloop.dev", "Leak", "Makes two ConfigMaps."),
    );
    writeFileSync(
      join(project, "src/controllers.ts"),
      `import { controller, done } from "kubeloop";
import { ConfigMap } from "kubeloop/k8s";
import { Leak } from "./resources.ts";
export const leaks = controller(Leak).owns(ConfigMap).reconcile(async (leak, ctx) => {
  if (ctx.gone) return done();
  const metadata = (suffix: string) => ({ name: \`\${ctx.name}-\${suffix}\`, namespace: ctx.namespace ?? "" });
  await ctx.apply({ apiVersion: "v1", kind: "ConfigMap", metadata: metadata("owned"), data: {} });
  // On purpose: written with the plain client, so it has no owner reference and outlives the Leak.
  await ctx.client.apply({ apiVersion: "v1", kind: "ConfigMap", metadata: metadata("leaked"), data: {} }, { fieldManager: "leaky", force: true });
  return done();
});
`,
    );
    writeFileSync(
      join(project, "src/main.ts"),
      `import { Manager } from "kubeloop";
import { leaks } from "./controllers.ts";
const manager = new Manager({ metrics: { port: 0 }, probes: { port: 0 }, leaderElection: false });
manager.add(leaks);
await manager.start();
`,
    );
    writeFileSync(
      join(project, "config/samples/leak.yaml"),
      toYaml({
        apiVersion: "check.kubeloop.dev/v1",
        kind: "Leak",
        metadata: { name: "one" },
        spec: { size: 1 },
      }),
    );
    const generate = spawnSync(process.execPath, [cli, "generate"], { cwd: project, encoding: "utf8" });
    expect(generate.status, generate.stderr).toBe(0);

    const progress: string[] = [];
    const findings = await liveChecks(loadProject(project), {
      timeoutMs: 40_000, // kube-controller-manager's garbage collector learns of a new CRD within 30 s
      onProgress: (line) => progress.push(line),
    });
    expect(findings.map((f) => f.check).sort(), JSON.stringify(findings, null, 1)).toEqual([
      "owner-references",
      "resource-cleanup",
    ]);
    expect(byCheck(findings)["owner-references"]).toContain(
      "ConfigMap kubeloop-check/one-leaked was created without an owner reference to the Leak it was made for",
    );
    expect(byCheck(findings)["resource-cleanup"]).toContain(
      "ConfigMap kubeloop-check/one-leaked is still there 40s after its sample was deleted",
    );
    // The owned ConfigMap was made too, and went with the Leak: it is in no finding.
    expect(progress).toContain("  the operator made 2 objects");
    expect(findings.some((f) => f.message.includes("one-owned"))).toBe(false);
  });
});
