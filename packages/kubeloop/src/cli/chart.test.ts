import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { startPlane, stopPlane } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { NotFound } from "../client/errors.js";
import type { KubeObject } from "../client/types.js";
import { ensureAssets } from "../testing/assets/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { kubectl } from "../testing/kubectl.js";
import { anchorsIn } from "./yaml.js";

// The nginx example's generated chart, with the real Helm (built from helm.sh/helm/v3 and cached
// like the control plane) against the cluster profile, whose kwok nodes run the manager's pods.

const CHART = resolve(import.meta.dirname, "../../../../examples/nginx/charts/nginx-operator");
const RELEASE = "nginx";
const NAMESPACE = "nginx-system";
const CRD = "nginxes.proxy.example.com";

let plane: ControlPlane;
let client: Client;
let helmBinary: string;
const home = mkdtempSync(join(tmpdir(), "kubeloop-helm-"));

beforeAll(async () => {
  const assets = await ensureAssets(["helm"]);
  helmBinary = assets.binaries.helm as string;
  ({ plane, client } = await startPlane({ profile: "cluster" }));
});
afterAll(async () => {
  await stopPlane(plane, client);
  rmSync(home, { recursive: true, force: true });
});

function helm(...args: string[]): { code: number; stdout: string; stderr: string } {
  const result = spawnSync(helmBinary, args, {
    encoding: "utf8",
    timeout: 180_000,
    env: {
      PATH: process.env.PATH,
      KUBECONFIG: plane.kubeconfigPath,
      // Helm's own config, cache and data stay in this test's folder, and so does client-go's
      // discovery cache ($HOME/.kube/cache; with no HOME it lands in the working directory).
      HOME: home,
      HELM_CONFIG_HOME: join(home, "config"),
      HELM_CACHE_HOME: join(home, "cache"),
      HELM_DATA_HOME: join(home, "data"),
    },
  });
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

function objectsOf(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((document) => document.toJS() as KubeObject | null)
    .filter((object): object is KubeObject => object !== null);
}

const typeOf = (object: KubeObject) => ({ apiVersion: object.apiVersion ?? "", kind: object.kind ?? "" });
const deployment = () =>
  client.get({ apiVersion: "apps/v1", kind: "Deployment" }, "nginx-operator", {
    namespace: NAMESPACE,
  }) as Promise<KubeObject & { spec: { replicas: number }; status?: { readyReplicas?: number } }>;

describe("the generated Helm chart", () => {
  it("passes helm lint --strict, and a wrong value fails with the value's path", () => {
    const lint = helm("lint", "--strict", CHART);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const wrongType = helm("template", RELEASE, CHART, "--set", "manager.replicas=two");
    expect(wrongType.code).toBe(1);
    expect(wrongType.stderr).toContain("at '/manager/replicas': got string, want integer");
    const badDigest = helm("template", RELEASE, CHART, "--set", "manager.image.digest=latest");
    expect(badDigest.code).toBe(1);
    expect(badDigest.stderr).toContain("/manager/image/digest");
    const typo = helm("template", RELEASE, CHART, "--set", "manager.replica=2");
    expect(typo.stderr).toContain("additional properties 'replica' not allowed");
    const secret = helm("template", RELEASE, CHART, "--set", "webhook.certificates.source=secret");
    expect(secret.stderr).toContain("at '/webhook/certificates/caBundle'");
    const source = helm("template", RELEASE, CHART, "--set", "webhook.certificates.source=vault");
    expect(source.stderr).toContain("at '/webhook/certificates/source'");
  });

  it("pins the manager's image by the digest kubeloop build prints, else by tag", () => {
    const digest = `sha256:${"a".repeat(64)}`;
    const images = (...set: string[]) =>
      objectsOf(helm("template", RELEASE, CHART, ...set.flatMap((s) => ["--set", s])).stdout)
        .filter((o) => o.kind === "Deployment")
        .map(
          (o) =>
            (o as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template.spec
              .containers[0]?.image,
        );
    expect(images()).toEqual(["ghcr.io/example/nginx-operator:0.1.0"]);
    expect(images(`manager.image.digest=${digest}`)).toEqual([`ghcr.io/example/nginx-operator@${digest}`]);
  });

  it("renders objects the API server accepts (helm template | kubectl apply --dry-run=server), without anchors", async () => {
    const rendered = helm(
      "template",
      RELEASE,
      CHART,
      "--namespace",
      NAMESPACE,
      "--set",
      "networkPolicy.enabled=true",
      "--set",
      "manager.env[0].name=ALLOWED_REGISTRIES",
      "--set",
      "manager.env[0].value=kubeloop.local",
    );
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(anchorsIn(rendered.stdout)).toEqual([]);
    const objects = objectsOf(rendered.stdout);
    expect(objects.map((o) => o.kind)).toEqual(
      expect.arrayContaining([
        "CustomResourceDefinition",
        "Deployment",
        "Secret",
        "ValidatingWebhookConfiguration",
      ]),
    );
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } });
    const dryRun = await kubectl(["apply", "--dry-run=server", "--validate=strict", "-f", "-"], {
      kubeconfig: plane.kubeconfigPath,
      input: rendered.stdout,
    });
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(dryRun.stdout).toContain("deployment.apps/nginx-operator created (server dry run)");
    // manager.env comes after the generated variables.
    const deployment = objects.find((o) => o.kind === "Deployment") as KubeObject & {
      spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
    };
    expect(deployment.spec.template.spec.containers[0]?.env.at(-1)).toEqual({
      name: "ALLOWED_REGISTRIES",
      value: "kubeloop.local",
    });
    // The launcher in the image sizes the heap from the limit the chart's resources set.
    expect(deployment.spec.template.spec.containers[0]?.env).toContainEqual({
      name: "KUBELOOP_MEMORY_LIMIT",
      valueFrom: { resourceFieldRef: { containerName: "manager", resource: "limits.memory" } },
    });
    // Every webhook trusts the CA of the serving certificate made in the same render.
    const secret = objects.find((o) => o.kind === "Secret") as KubeObject & { data: Record<string, string> };
    const bundles = objects.flatMap((o) =>
      ((o as { webhooks?: { clientConfig: { caBundle: string } }[] }).webhooks ?? []).map(
        (w) => w.clientConfig.caBundle,
      ),
    );
    expect(bundles.length).toBeGreaterThan(0);
    expect(new Set(bundles)).toEqual(new Set([secret.data["ca.crt"]]));
  });

  it("installs, upgrades with a changed value, rolls back and uninstalls, leaving only the kept CRD", async () => {
    const install = helm("install", RELEASE, CHART, "--namespace", NAMESPACE, "--wait", "--timeout", "150s");
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain("The CRDs are kept on `helm uninstall`");
    expect((await deployment()).status?.readyReplicas).toBe(2);
    const certificate = async () =>
      (
        (await client.get({ apiVersion: "v1", kind: "Secret" }, "nginx-operator-webhook-server-cert", {
          namespace: NAMESPACE,
        })) as KubeObject & { data: Record<string, string> }
      ).data["tls.crt"];
    const installedCertificate = await certificate();

    const upgrade = helm(
      "upgrade",
      RELEASE,
      CHART,
      "-n",
      NAMESPACE,
      "--set",
      "manager.replicas=3",
      "--wait",
      "--timeout",
      "150s",
    );
    expect(upgrade.code, upgrade.stderr).toBe(0);
    const upgraded = await deployment();
    expect(upgraded.spec.replicas).toBe(3);
    expect(upgraded.status?.readyReplicas).toBe(3);
    // The serving certificate is read back on upgrade, not made anew (the pods keep trusting it).
    expect(await certificate()).toBe(installedCertificate);

    const rollback = helm("rollback", RELEASE, "1", "-n", NAMESPACE, "--wait", "--timeout", "150s");
    expect(rollback.code, rollback.stderr).toBe(0);
    expect((await deployment()).spec.replicas).toBe(2);
    const history = helm("history", RELEASE, "-n", NAMESPACE, "-o", "json");
    expect((JSON.parse(history.stdout) as { revision: number }[]).map((r) => r.revision)).toEqual([1, 2, 3]);

    const manifest = objectsOf(helm("get", "manifest", RELEASE, "-n", NAMESPACE).stdout);
    expect(manifest.length).toBeGreaterThan(10);
    const uninstall = helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait");
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(uninstall.stdout + uninstall.stderr).toContain(`kept due to the resource policy`);
    const left: string[] = [];
    for (const object of manifest) {
      const namespace = object.metadata?.namespace;
      try {
        await client.get(typeOf(object), object.metadata?.name ?? "", namespace ? { namespace } : {});
        left.push(`${object.kind}/${object.metadata?.name}`);
      } catch (error) {
        if (!(error instanceof NotFound)) throw error;
      }
    }
    expect(left).toEqual([`CustomResourceDefinition/${CRD}`]);
  });
});
