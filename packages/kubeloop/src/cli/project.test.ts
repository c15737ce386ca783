import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadProject } from "./project.js";

const dir = mkdtempSync(join(tmpdir(), "kubeloop-project-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function project(name: string, json: unknown): string {
  const root = join(dir, name);
  mkdirSync(join(root, "src/nested"), { recursive: true });
  writeFileSync(join(root, "package.json"), typeof json === "string" ? json : JSON.stringify(json));
  return root;
}

describe("loadProject", () => {
  it("reads the kubeloop section, from the project's root or any folder below it", () => {
    const root = project("shop", {
      name: "@acme/shop-operator",
      kubeloop: { controllers: "src/controllers.ts", webhooks: "src/webhooks.ts", image: "shop:dev" },
    });
    const found = loadProject(join(root, "src/nested"));
    expect(found).toEqual({
      root,
      name: "shop-operator",
      resources: join(root, "src/resources.ts"),
      controllers: join(root, "src/controllers.ts"),
      webhooks: join(root, "src/webhooks.ts"),
      image: "shop:dev",
      namespace: "shop-operator-system",
      config: join(root, "config"),
    });
  });

  it("says how to make a project when there is none", () => {
    const root = project("plain", { name: "plain" });
    expect(() => loadProject(root)).toThrow(/not a kubeloop project .* run `kubeloop init`/);
  });

  it("names a misspelt field and a broken package.json", () => {
    expect(() => loadProject(project("typo", { kubeloop: { resource: "src/r.ts" } }))).toThrow(
      'unknown field "kubeloop.resource"',
    );
    expect(() => loadProject(project("broken", "{ not json"))).toThrow("is not valid JSON");
  });

  it("takes imagePackages (for kubeloop build) as a list of names, and says so when it is not one", () => {
    expect(
      loadProject(project("pg", { name: "pg", kubeloop: { imagePackages: ["postgresql-client-15"] } })).name,
    ).toBe("pg");
    expect(() =>
      loadProject(project("pg-str", { kubeloop: { imagePackages: "postgresql-client-15" } })),
    ).toThrow('"kubeloop.imagePackages" must be an array of strings');
  });
});
