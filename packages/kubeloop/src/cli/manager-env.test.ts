import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import type { KubeObject } from "../client/types.js";
import { Manager, type ManagerOptions, optionsFromCommandLine, optionsFromEnv } from "../manager/index.js";
import { ensureAssets } from "../testing/assets/index.js";
import { deployManifests } from "./manifests.js";

// The configuration contract: what the generated Deployment (`kubeloop generate --image`) and the
// generated Helm chart (rendered by the real `helm template`) put in the manager's environment is
// what `optionsFromEnv` reads, and every variable they set changes the options (none is ignored).

const CHART = resolve(import.meta.dirname, "../../../../examples/nginx/charts/nginx-operator");
const NAME = "nginx-operator";
const NAMESPACE = "nginx-system";
/** Read by the image's launcher (Node's heap size), not by the manager. */
const NOT_THE_MANAGERS = new Set(["KUBELOOP_MEMORY_LIMIT"]);

let helmBinary: string;
const home = mkdtempSync(join(tmpdir(), "kubeloop-helm-env-"));

beforeAll(async () => {
  helmBinary = (await ensureAssets(["helm"])).binaries.helm as string;
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

/** The manager container's environment as the kubelet would give it (the Downward API filled in). */
function environmentOf(objects: KubeObject[]): Record<string, string> {
  const deployment = objects.find((o) => o.kind === "Deployment") as
    | (KubeObject & { spec: { template: { spec: { containers: { env?: EnvVar[] }[] } } } })
    | undefined;
  const env = deployment?.spec.template.spec.containers[0]?.env ?? [];
  expect(env.length).toBeGreaterThan(0);
  const pod = { "metadata.namespace": NAMESPACE, "metadata.name": `${NAME}-7d9f-abcde` } as Record<
    string,
    string
  >;
  return {
    // Set by the kubelet in every container.
    KUBERNETES_SERVICE_HOST: "10.96.0.1",
    ...Object.fromEntries(
      env.map((e) => [e.name, e.value ?? pod[e.valueFrom?.fieldRef?.fieldPath ?? ""] ?? "unknown"]),
    ),
  };
}

function helmTemplate(...values: string[]): KubeObject[] {
  const result = spawnSync(
    helmBinary,
    ["template", "nginx", CHART, "--namespace", NAMESPACE, ...values.flatMap((v) => ["--set", v])],
    {
      encoding: "utf8",
      timeout: 120_000,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        HELM_CONFIG_HOME: join(home, "config"),
        HELM_CACHE_HOME: join(home, "cache"),
        HELM_DATA_HOME: join(home, "data"),
      },
    },
  );
  expect(result.status, result.stderr).toBe(0);
  return parseAllDocuments(result.stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

function generated(options: Partial<Parameters<typeof deployManifests>[0]> = {}): KubeObject[] {
  return deployManifests({
    name: NAME,
    namespace: NAMESPACE,
    image: "nginx-operator:v1",
    ...options,
  }).flatMap(([, objects]) => objects as KubeObject[]);
}

/** What the Manager runs with from this environment (through the same merge it makes). */
function resolved(env: Record<string, string>): ManagerOptions {
  return optionsFromCommandLine({ name: NAME, args: [], env });
}

/** Every variable set changes what the manager is told: none is set for nothing. */
function expectEveryVariableRead(env: Record<string, string>): void {
  const all = JSON.stringify(optionsFromEnv(env));
  for (const name of Object.keys(env)) {
    if (NOT_THE_MANAGERS.has(name)) continue;
    const { [name]: _, ...without } = env;
    expect(JSON.stringify(optionsFromEnv(without)), `${name} is set by the manifests but not read`).not.toBe(
      all,
    );
  }
}

describe("the manager's environment from the generated manifests", () => {
  it("reads everything the generated Deployment sets", () => {
    const env = environmentOf(
      generated({
        webhooks: true,
        caBundles: ["CustomResourceDefinition/nginxes.proxy.example.com"],
        watchNamespaces: ["a", "b"],
      }),
    );
    expectEveryVariableRead(env);
    const options = resolved(env);
    expect(options.leaderElection).toEqual({ id: NAME });
    expect(options.metrics).toMatchObject({
      port: 8443,
      secure: true,
      selfIssued: { secret: expect.any(String), service: expect.any(String) },
    });
    expect(options.probes).toEqual({ port: 8081 });
    expect(options.webhooks).toMatchObject({ port: 9443, certDir: "/tmp/k8s-webhook-server/serving-certs" });
    expect(options.webhooks ? options.webhooks.selfIssued?.caBundles : undefined).toEqual([
      { kind: "CustomResourceDefinition", name: "nginxes.proxy.example.com" },
    ]);
    expect(options.namespaces).toEqual(["a", "b"]);
    expect(options.operatorNamespace).toBe(NAMESPACE);
    expect(options.inCluster).toBe(true);
    // The Manager takes them the same way, and needs nothing more than the operator's name.
    expect(() => new Manager({ name: NAME, handleSignals: false, tracing: false })).not.toThrow();
  });

  it("reads the sharded Deployment's shard ring and pod name instead of leader election", () => {
    const env = environmentOf(generated({ sharding: { minReplicas: 2, maxReplicas: 4 } }));
    expectEveryVariableRead(env);
    const options = resolved(env);
    expect(options.leaderElection).toBeUndefined();
    expect(options.sharding).toEqual({ ring: NAME, id: `${NAME}-7d9f-abcde` });
  });

  it("reads what the Helm chart renders, with its values", () => {
    const env = environmentOf(helmTemplate());
    expectEveryVariableRead(env);
    expect(resolved(env)).toMatchObject({
      leaderElection: { id: NAME },
      metrics: { port: 8443 },
      probes: { port: 8081 },
    });
    const changed = resolved(
      environmentOf(helmTemplate("leaderElection.enabled=false", "metrics.port=9090", "webhook.port=9444")),
    );
    expect(changed.leaderElection).toBe(false);
    expect(changed.metrics).toMatchObject({ port: 9090 });
    expect(changed.webhooks).toMatchObject({ port: 9444 });
  });
});

describe("optionsFromCommandLine", () => {
  it("takes a flag over its variable over the default", () => {
    const env = { METRICS_PORT: "9000", PROBE_PORT: "9001", LEADER_ELECT: "false", WORKERS: "4" };
    expect(resolved({})).toMatchObject({ metrics: {}, probes: {} });
    expect(resolved({}).leaderElection).toBeUndefined();
    expect(resolved(env)).toMatchObject({
      metrics: { port: 9000 },
      probes: { port: 9001 },
      leaderElection: false,
      workers: 4,
    });
    const flags = optionsFromCommandLine({
      name: NAME,
      env,
      args: [
        "--metrics-port",
        "0",
        "--probe-port=0",
        "--leader-elect",
        "--leader-election-namespace",
        "ops",
        "--workers",
        "adaptive:2-8",
        "--backup-dir",
        "/x",
      ],
    });
    expect(flags).toMatchObject({
      metrics: { port: 0 },
      probes: { port: 0 },
      leaderElection: { id: NAME, namespace: "ops" },
      workers: { min: 2, max: 8 },
    });
  });

  it("names the flag or variable of a malformed value, and a Lease with no name", () => {
    expect(() => optionsFromCommandLine({ args: ["--metrics-port", "http"], env: {} })).toThrow(
      /--metrics-port="http" must be a port number/,
    );
    expect(() => optionsFromEnv({ PROBE_PORT: "70000" })).toThrow(/PROBE_PORT="70000"/);
    expect(() => optionsFromEnv({ LEADER_ELECT: "yes" })).toThrow(
      /LEADER_ELECT="yes" must be "true" or "false"/,
    );
    expect(() => optionsFromEnv({ WORKERS: "many" })).toThrow(/WORKERS="many" must be a number of workers/);
    expect(() => optionsFromCommandLine({ args: ["--leader-elect"], env: {} })).toThrow(
      /the Lease has no name/,
    );
    expect(
      optionsFromCommandLine({ args: ["--leader-elect", "--leader-election-id", "lease"], env: {} })
        .leaderElection,
    ).toEqual({ id: "lease" });
  });
});
