import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CertificateAuthority, readManifests } from "kubeloop/testing";
import { PrometheusServer } from "kubeloop/testing/servers";
import { expect } from "vitest";
import { DEPLOYMENT, type kubectlOn, NS, until } from "./cluster.ts";
import { root } from "./operator.ts";

// A real Prometheus (this machine's, a host process) scraping the operator's pods as the generated
// ServiceMonitor describes: every endpoint of the metrics Service, HTTPS, a ServiceAccount's token.
// TLS verified as that ServiceMonitor does it: the CA from the Secret the manager issued its
// metrics certificate from at start, and the metrics Service's name.

/** The job name the generated alert rules select (`job="<operator>-metrics"`: the Service's name). */
const JOB = "myapp-operator-metrics";

/** The generated alert rules (config/prometheus), with every `for` cut to 5 s so a test can see one fire. */
function alertRules(): object[] {
  const rule = readManifests([join(root, "config/prometheus")]).find((o) => o.kind === "PrometheusRule") as
    | { spec: { groups: { name: string; rules: { for?: string }[] }[] } }
    | undefined;
  if (!rule) throw new Error("config/prometheus has no PrometheusRule");
  return rule.spec.groups.map((group) => ({
    ...group,
    rules: group.rules.map((r) => (r.for ? { ...r, for: "5s" } : r)),
  }));
}

/**
 * How the generated ServiceMonitor verifies the operator's metrics: the CA in the Secret the
 * manager issues its metrics certificate from, and the server name it names.
 */
async function monitorTls(
  cluster: ReturnType<typeof kubectlOn>,
): Promise<{ ca: string; serverName: string }> {
  const monitor = readManifests([join(root, "config/prometheus")]).find((o) => o.kind === "ServiceMonitor") as
    | {
        spec: {
          endpoints: { tlsConfig: { ca: { secret: { name: string; key: string } }; serverName: string } }[];
        };
      }
    | undefined;
  const tls = monitor?.spec.endpoints[0]?.tlsConfig;
  if (!tls?.ca.secret) throw new Error("config/prometheus/monitor.yaml verifies no CA");
  const key = tls.ca.secret.key.replaceAll(".", "\\.");
  const ca = await cluster.get(["-n", NS, "get", "secret", tls.ca.secret.name], `{.data.${key}}`);
  return { ca: Buffer.from(ca, "base64").toString(), serverName: tls.serverName };
}

/** A token of a `prometheus` service account bound to the operator's metrics-reader ClusterRole. */
async function prometheusToken(cluster: ReturnType<typeof kubectlOn>): Promise<string> {
  await cluster.k(["create", "namespace", "monitoring"]);
  await cluster.k(["-n", "monitoring", "create", "serviceaccount", "prometheus"]);
  await cluster.k([
    "create",
    "clusterrolebinding",
    "prometheus-myapp-metrics",
    `--clusterrole=${DEPLOYMENT}-metrics-reader`,
    "--serviceaccount=monitoring:prometheus",
  ]);
  return (await cluster.k(["-n", "monitoring", "create", "token", "prometheus", "--duration=1h"])).trim();
}

/**
 * Scrapes the operator with a real Prometheus and the generated alert rules: every pod up over
 * verified HTTPS, no alert while it is healthy; then `breakIt` makes reconciles fail and the
 * reconcile-error alert must fire. Resolves with the time from `breakIt` to the alert firing.
 */
export async function scrapeOperator(
  cluster: ReturnType<typeof kubectlOn>,
  breakIt: () => Promise<void>,
): Promise<number> {
  const { ca: caPem, serverName } = await monitorTls(cluster);
  const token = await prometheusToken(cluster);
  // What the ServiceMonitor selects: the metrics Service's `https` port on each ready pod. Debian's
  // Prometheus is built without Kubernetes discovery, so the test reads the EndpointSlice itself.
  const addresses = await cluster.get(
    ["-n", NS, "get", "endpointslices", "-l", `kubernetes.io/service-name=${JOB}`],
    "{.items[*].endpoints[?(@.conditions.ready==true)].addresses[0]}",
  );
  const targets = addresses.split(" ").map((ip) => `${ip}:8443`);
  expect(targets).toHaveLength(2);
  const files = mkdtempSync(join(tmpdir(), "myapp-prometheus-"));
  writeFileSync(join(files, "ca.crt"), caPem);
  writeFileSync(join(files, "other-ca.crt"), CertificateAuthority.create("someone-else").cert);
  writeFileSync(join(files, "token"), token);
  const job = (name: string, caFile: string) => ({
    job_name: name,
    scheme: "https",
    static_configs: [{ targets }],
    authorization: { type: "Bearer", credentials_file: join(files, "token") },
    tls_config: { ca_file: join(files, caFile), server_name: serverName },
  });
  let prometheus: PrometheusServer | undefined;
  try {
    prometheus = await new PrometheusServer({
      // The second job trusts another CA: its scrapes must fail, or nothing was verified.
      scrapeConfigs: [job(JOB, "ca.crt"), job("untrusted", "other-ca.crt")],
      ruleGroups: alertRules(),
    }).start();
    const server = prometheus;
    const scraped = async () => {
      const targets = await server.targets();
      const mine = targets.filter((t) => t.labels.job === JOB);
      return mine.length === 2 && mine.every((t) => t.health === "up") ? targets : undefined;
    };
    await until(async () => (await scraped()) !== undefined, 60_000, "both operator pods scraped").catch(
      async (error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(await server.targets())}`);
      },
    );
    await expectRefused(server);
    const reconciled = await server.query(
      `controller_runtime_reconcile_total{job="${JOB}",result="success"} > 0`,
    );
    expect(reconciled.length).toBeGreaterThan(0);
    // Healthy: a few evaluations (each rule's `for` is 5 s) and no alert at all.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    expect((await server.alerts()).map((a) => a.labels.alertname)).toEqual([]);

    const broken = Date.now();
    await breakIt();
    await until(
      async () =>
        (await server.alerts()).some(
          (a) => a.labels.alertname === "KubeloopReconcileErrorsHigh" && a.state === "firing",
        ),
      90_000,
      "KubeloopReconcileErrorsHigh to fire",
    );
    const alert = (await server.alerts()).find((a) => a.labels.alertname === "KubeloopReconcileErrorsHigh");
    expect(alert?.annotations.summary).toMatch(/^myapp-operator: controller \S+ fails .+ of its reconciles$/);
    return Date.now() - broken;
  } finally {
    await prometheus?.stop();
    rmSync(files, { recursive: true, force: true });
  }
}

/** The job that trusts another CA: each pod is a target of its own, and every one must be refused. */
async function expectRefused(server: PrometheusServer): Promise<void> {
  const untrusted = async () => (await server.targets()).filter((t) => t.labels.job === "untrusted");
  await until(
    async () => {
      const targets = await untrusted();
      return targets.length === 2 && targets.every((t) => t.lastError !== "");
    },
    30_000,
    "every scrape with the wrong CA to fail",
  );
  for (const refused of await untrusted())
    expect(refused.lastError).toContain("certificate signed by unknown authority");
}
