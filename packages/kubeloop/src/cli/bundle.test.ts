import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { ensureAssets } from "../testing/assets/index.js";
import { toYaml } from "./yaml.js";

// The OLM bundles generate writes for the examples, checked by OLM's own validator
// (operator-framework/api's operator-verify, built from Go modules and cached like the control plane).

const EXAMPLES = resolve(import.meta.dirname, "../../../../examples");
const scratch = mkdtempSync(join(tmpdir(), "kubeloop-bundle-"));
let operatorVerify: string;

beforeAll(async () => {
  operatorVerify = (await ensureAssets(["operator-verify"])).binaries["operator-verify"] as string;
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** operator-verify logs its findings and exits 0 either way: errors are the `level=error` lines. */
function verify(bundle: string, ...flags: string[]): { errors: string[]; warnings: string[] } {
  const result = spawnSync(operatorVerify, ["manifests", ...flags, bundle], { encoding: "utf8" });
  expect(result.status, result.stderr).toBe(0);
  const lines = `${result.stdout}${result.stderr}`.split("\n");
  return {
    errors: lines.filter((line) => line.includes("level=error")),
    warnings: lines.filter((line) => line.includes("level=warning")),
  };
}

interface Csv {
  metadata: { annotations: Record<string, string> };
  spec: {
    installModes: { type: string; supported: boolean }[];
    install: {
      spec: {
        deployments: {
          spec: {
            template: {
              spec: { containers: { env: { name: string; valueFrom?: unknown }[] }[]; volumes?: unknown };
            };
          };
        }[];
        permissions?: { rules: { resources?: string[] }[] }[];
        clusterPermissions?: { rules: { resources?: string[] }[] }[];
      };
    };
    customresourcedefinitions: {
      owned: {
        name: string;
        version: string;
        description: string;
        specDescriptors: { path: string; description?: string }[];
        statusDescriptors: { path: string }[];
      }[];
    };
    webhookdefinitions?: { type: string; conversionCRDs?: string[] }[];
  };
}

const csvOf = (example: string, name: string) =>
  parse(
    readFileSync(join(EXAMPLES, example, "bundle/manifests", `${name}.clusterserviceversion.yaml`), "utf8"),
  ) as Csv;

describe("the generated OLM bundle", () => {
  it.each([
    ["nginx", "nginx-operator"],
    ["pgdatabase", "pgdatabase-operator"],
    ["sampledb", "sampledb-operator"],
  ])("of %s passes OLM's validators (default, operatorhub and object) with no error", (example) => {
    const bundle = join(EXAMPLES, example, "bundle");
    expect(verify(bundle).errors).toEqual([]);
    const strict = verify(bundle, "--operatorhub_validate", "--object_validate");
    expect(strict.errors).toEqual([]);
  });

  it("is really validated: a CSV that claims namespaced installs beside a conversion webhook is refused", () => {
    const broken = join(scratch, "broken");
    cpSync(join(EXAMPLES, "nginx/bundle"), broken, { recursive: true });
    const path = join(broken, "manifests/nginx-operator.clusterserviceversion.yaml");
    const csv = parse(readFileSync(path, "utf8")) as Csv;
    for (const mode of csv.spec.installModes) mode.supported = true;
    writeFileSync(path, toYaml(csv));
    expect(verify(broken).errors.join("\n")).toContain(
      "only AllNamespaces InstallModeType is supported when conversionCRDs is present",
    );
  });

  it("installs the manager Deployment with the generated RBAC, watching OLM's target namespaces", () => {
    const csv = csvOf("pgdatabase", "pgdatabase-operator");
    const install = csv.spec.install.spec;
    const container = install.deployments[0]?.spec.template.spec.containers[0];
    expect(container?.env.find((e) => e.name === "WATCH_NAMESPACE")?.valueFrom).toEqual({
      fieldRef: { fieldPath: "metadata.annotations['olm.targetNamespaces']" },
    });
    // Leader election is namespaced; what the controllers need cluster-wide is a cluster permission.
    expect(install.permissions?.[0]?.rules.flatMap((r) => r.resources)).toContain("leases");
    const generated = parseAllDocuments(
      readFileSync(join(EXAMPLES, "pgdatabase/config/rbac/role.yaml"), "utf8"),
    )
      .map((d) => d.toJS() as { kind: string; rules: unknown[] })
      .find((o) => o.kind === "ClusterRole");
    expect(install.clusterPermissions?.[0]?.rules).toEqual(expect.arrayContaining(generated?.rules ?? []));
    // With no conversion webhook, every install mode works through WATCH_NAMESPACE.
    expect(csv.spec.installModes.every((m) => m.supported)).toBe(true);
  });

  it("owns each CRD version with its schema's description and a descriptor per spec and status field", () => {
    const csv = csvOf("nginx", "nginx-operator");
    const owned = csv.spec.customresourcedefinitions.owned;
    expect(owned.map((o) => `${o.name}/${o.version}`).sort()).toEqual([
      "nginxes.proxy.example.com/v1",
      "nginxes.proxy.example.com/v1alpha1",
    ]);
    const v1 = owned.find((o) => o.version === "v1");
    expect(v1?.description).toBe("An nginx web server with a chosen number of replicas.");
    expect(v1?.specDescriptors.map((d) => d.path)).toEqual([
      "replicas",
      "image",
      "ingress.host",
      "ingress.className",
    ]);
    expect(v1?.specDescriptors.every((d) => d.description)).toBe(true);
    expect(v1?.statusDescriptors.map((d) => d.path)).toContain("conditions");
    expect(csv.spec.webhookdefinitions?.map((w) => w.type).sort()).toEqual([
      "ConversionWebhook",
      "MutatingAdmissionWebhook",
      "ValidatingAdmissionWebhook",
    ]);
    // OLM mounts its own serving certificate, so the generated Secret volume is not in the CSV.
    expect(csv.spec.install.spec.deployments[0]?.spec.template.spec.volumes).toBeUndefined();
  });
});
