import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cachedProjectDir, DIST, describedResourceModule, runCli } from "../../test/cli-project.js";

// `kubeloop generate` writes the chart and the bundle of a project with an image, and `--check`
// covers them like config/: a stale, missing or left-over file fails it.

const project = cachedProjectDir("ship");

function writeProject(fields: Record<string, unknown>): void {
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({
      name: "gizmos",
      type: "module",
      ...fields,
      kubeloop: { resources: "resources.mjs", image: "gizmos:1.2.0" },
    }),
  );
}

const generate = (...args: string[]) => runCli(project, ["generate", ...args]);

writeFileSync(
  join(project, "resources.mjs"),
  describedResourceModule(join(DIST, "resources/index.js"), "ship.kubeloop.dev", "Gizmo", "A gizmo."),
);

describe("generate for shipping", () => {
  it("refuses a project without a version, since the chart and the bundle are versioned by it", () => {
    writeProject({});
    const result = generate();
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('"version" must be a semantic version such as 0.1.0');
  });

  it("writes the chart and the bundle, versioned by package.json, and --check covers them", () => {
    writeProject({ version: "1.2.3", description: "Gizmos on demand" });
    expect(generate().code).toBe(0);
    const chart = readFileSync(join(project, "charts/gizmos/Chart.yaml"), "utf8");
    expect(chart).toContain("version: 1.2.3");
    expect(chart).toContain("appVersion: 1.2.0");
    expect(existsSync(join(project, "charts/gizmos/templates/crd/gizmos.ship.kubeloop.dev.yaml"))).toBe(true);
    expect(existsSync(join(project, "bundle/manifests/gizmos.clusterserviceversion.yaml"))).toBe(true);
    expect(readFileSync(join(project, "bundle.Dockerfile"), "utf8")).toContain(
      "LABEL operators.operatorframework.io.bundle.package.v1=gizmos",
    );
    const clean = generate("--check");
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain("Helm chart, OLM bundle");

    appendFileSync(join(project, "charts/gizmos/values.yaml"), "extra: true\n");
    rmSync(join(project, "bundle/metadata/annotations.yaml"));
    const stray = join(project, "charts/gizmos/templates/rbac/old.yaml");
    writeFileSync(stray, readFileSync(join(project, "charts/gizmos/templates/rbac/role-bindings.yaml")));
    const user = join(project, "charts/gizmos/templates/extras-mine.yaml");
    writeFileSync(user, "# mine\n");
    const check = generate("--check");
    expect(check.code).toBe(1);
    expect(check.stderr).toContain("out of date: charts/gizmos/values.yaml");
    expect(check.stderr).toContain("out of date: bundle/metadata/annotations.yaml");
    expect(check.stderr).toContain("no longer generated: charts/gizmos/templates/rbac/old.yaml");
    expect(check.stderr).not.toContain("extras-mine.yaml"); // not generated: the user's own
    expect(generate().code).toBe(0);
    expect(existsSync(stray)).toBe(false);
    expect(existsSync(user)).toBe(true);
    expect(generate("--check").code).toBe(0);
  });

  it("writes them for the project's own config only, not for a variant written with --out", () => {
    rmSync(join(project, "charts"), { recursive: true, force: true });
    expect(generate("--out", "variant", "--namespaces", "team-a").code).toBe(0);
    expect(existsSync(join(project, "charts"))).toBe(false);
  });
});
