import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectlOn } from "../../test/plane-kubectl.js";
import { resolveKubernetesVersion } from "./assets/versions.js";
import { ControlPlane } from "./control-plane.js";

const fixtures = join(import.meta.dirname, "../../test/fixtures");

let plane: ControlPlane;
const k = kubectlOn(() => plane);

beforeAll(async () => {
  plane = await new ControlPlane({
    profile: "apiserver",
    crds: [join(fixtures, "crds/widgets.yaml")],
  }).start();
});
afterAll(async () => {
  await plane?.stop();
});

describe("ControlPlane, apiserver profile", () => {
  it("reports the Kubernetes version that was built to kubectl", async () => {
    const result = await k(["version", "-o", "json"]);
    expect(result.code).toBe(0);
    const version = JSON.parse(result.stdout) as { serverVersion: { gitVersion: string; minor: string } };
    // The version this run selected ($KUBELOOP_K8S_VERSION in the matrix, else the newest).
    const wanted = resolveKubernetesVersion();
    expect(plane.version).toBe(`v${wanted}`);
    expect(version.serverVersion.gitVersion).toBe(`v${wanted}`);
    expect(version.serverVersion.minor).toBe(wanted.split(".")[1]);
  });

  it("creates, gets and deletes objects through kubectl with the written kubeconfig", async () => {
    expect((await k(["create", "namespace", "crud"])).code).toBe(0);
    const created = await k(["-n", "crud", "create", "configmap", "settings", "--from-literal=color=blue"]);
    expect(created.code, created.stderr).toBe(0);
    const got = await k(["-n", "crud", "get", "configmap", "settings", "-o", "jsonpath={.data.color}"]);
    expect(got.stdout).toBe("blue");
    expect((await k(["-n", "crud", "delete", "configmap", "settings"])).code).toBe(0);
    const gone = await k(["-n", "crud", "get", "configmap", "settings"]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain("NotFound");
  });

  it("serves a CRD installed at start, and stores custom resources of it", async () => {
    const resources = await k(["api-resources", "--api-group=test.kubeloop.dev", "-o", "name"]);
    expect(resources.stdout.trim()).toBe("widgets.test.kubeloop.dev");
    const widget = `apiVersion: test.kubeloop.dev/v1
kind: Widget
metadata: { name: w1, namespace: default }
spec: { size: 3 }
`;
    const applied = await k(["apply", "-f", "-"], widget);
    expect(applied.code, applied.stderr).toBe(0);
    const size = await k(["get", "widget", "w1", "-o", "jsonpath={.spec.size}"]);
    expect(size.stdout).toBe("3");
  });

  it("enforces the CRD's schema on custom resources", async () => {
    const invalid = `apiVersion: test.kubeloop.dev/v1
kind: Widget
metadata: { name: too-small, namespace: default }
spec: { size: 0 }
`;
    const rejected = await k(["apply", "-f", "-"], invalid);
    expect(rejected.code).not.toBe(0);
    expect(rejected.stderr).toMatch(
      /spec\.size: Invalid value: 0: spec\.size in body should be greater than or equal to 1/,
    );
  });
});

describe("ControlPlane, apiserver profile: CRDs and users", () => {
  it("installs every CRD of a folder tree later, skipping documents that are not CRDs", async () => {
    const names = await plane.installCrds([join(fixtures, "crds")]);
    expect(names.sort()).toEqual(["gadgets.test.kubeloop.dev", "widgets.test.kubeloop.dev"]);
    const gadget = await k(
      ["apply", "-f", "-"],
      "apiVersion: test.kubeloop.dev/v1alpha1\nkind: Gadget\nmetadata: { name: g1 }\nanything: goes\n",
    );
    expect(gadget.code, gadget.stderr).toBe(0);
  });

  it("rejects a CRD the API server refuses, with the server's reason", async () => {
    const broken = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition" as const,
      metadata: { name: "wrong.test.kubeloop.dev" },
      spec: {
        group: "test.kubeloop.dev",
        names: { plural: "things", kind: "Thing" },
        versions: [{ name: "v1", served: true }],
      },
    };
    await expect(plane.installCrdObjects([broken])).rejects.toThrow(
      /rejected CRD wrong\.test\.kubeloop\.dev \(HTTP 422\)/,
    );
  });

  it("issues kubeconfigs for other users, whom RBAC governs", async () => {
    const viewer = plane.addUser("jane", ["testers"]);
    const listAsJane = () => k(["get", "configmaps", "-n", "default"], undefined, viewer.kubeconfigPath);
    const denied = await listAsJane();
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain('User "jane" cannot list resource "configmaps"');
    // Not the built-in `view`: its rules are aggregated by kube-controller-manager, absent in this profile.
    expect(
      (await k(["create", "clusterrole", "cm-reader", "--verb=get,list", "--resource=configmaps"])).code,
    ).toBe(0);
    expect(
      (await k(["create", "clusterrolebinding", "jane-reads", "--clusterrole=cm-reader", "--user=jane"]))
        .code,
    ).toBe(0);
    // The authorizer learns of new bindings through its own watch, a moment after the write.
    let allowed = await listAsJane();
    for (let i = 0; allowed.code !== 0 && i < 50; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      allowed = await listAsJane();
    }
    expect(allowed.code, allowed.stderr).toBe(0);
  });

  it("keeps its files in its own folder while running", () => {
    expect(existsSync(plane.kubeconfigPath)).toBe(true);
    expect(plane.components.map((c) => c.name)).toEqual(["etcd", "kube-apiserver"]);
    for (const component of plane.components) expect(component.pid).toBeGreaterThan(0);
  });
});
