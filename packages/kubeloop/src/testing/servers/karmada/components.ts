import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { CertificateAuthority } from "../../pki.js";

/**
 * Karmada's four processes as the plane runs them on loopback: their flags (upstream's
 * artifacts/deploy manifests, with addresses and files of this machine), the certificates they
 * serve with, and the objects that point Karmada's API server at them: the APIService of the
 * aggregated API server (Cluster objects live there, not in a CRD) and the webhook configuration.
 */

/** The namespace Karmada's own objects live in, and the one push-mode credentials go to. */
export const KARMADA_SYSTEM = "karmada-system";
export const KARMADA_CLUSTER_NAMESPACE = "karmada-cluster";
/** The name the aggregated API server's certificate must carry: the API server dials its Service's DNS name. */
const AGGREGATED_SERVICE = "karmada-aggregated-apiserver";
const AGGREGATED_DNS = `${AGGREGATED_SERVICE}.${KARMADA_SYSTEM}.svc`;
const HOST = "127.0.0.1";

export interface KarmadaPorts {
  aggregatedApiServer: number;
  webhook: number;
  webhookProbe: number;
  webhookMetrics: number;
  controllerManagerProbe: number;
  controllerManagerMetrics: number;
  schedulerProbe: number;
  schedulerMetrics: number;
}

export interface KarmadaCerts {
  /** PEM of the CA that signed both serving certificates. */
  caCert: string;
  aggregatedCertPath: string;
  aggregatedKeyPath: string;
  /** Holds tls.crt and tls.key, as karmada-webhook's --cert-dir wants. */
  webhookCertDir: string;
}

/** A CA and the serving certificates of the webhook (127.0.0.1) and the aggregated API server (its Service name). */
export function writeKarmadaCerts(dir: string): KarmadaCerts {
  const pki = join(dir, "pki");
  const webhookCertDir = join(pki, "webhook");
  mkdirSync(webhookCertDir, { recursive: true });
  const ca = CertificateAuthority.create("kubeloop-karmada");
  const aggregated = ca.issueServing({
    commonName: AGGREGATED_DNS,
    dnsNames: [AGGREGATED_DNS, "localhost"],
    ipAddresses: [HOST],
  });
  const webhook = ca.issueServing({ commonName: "localhost", dnsNames: ["localhost"], ipAddresses: [HOST] });
  const certs: KarmadaCerts = {
    caCert: ca.cert,
    aggregatedCertPath: join(pki, "aggregated-apiserver.crt"),
    aggregatedKeyPath: join(pki, "aggregated-apiserver.key"),
    webhookCertDir,
  };
  writeFileSync(certs.aggregatedCertPath, aggregated.cert);
  writeFileSync(certs.aggregatedKeyPath, aggregated.key, { mode: 0o600 });
  writeFileSync(join(webhookCertDir, "tls.crt"), webhook.cert);
  writeFileSync(join(webhookCertDir, "tls.key"), webhook.key, { mode: 0o600 });
  return certs;
}

/** Flags of each Karmada process; all talk to Karmada's API server as its admin. */
export function karmadaArgs(
  kubeconfig: string,
  etcdUrl: string,
  ports: KarmadaPorts,
  certs: KarmadaCerts,
): Record<
  "karmada-aggregated-apiserver" | "karmada-webhook" | "karmada-controller-manager" | "karmada-scheduler",
  string[]
> {
  const at = (port: number) => `${HOST}:${port}`;
  return {
    "karmada-aggregated-apiserver": [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      `--etcd-servers=${etcdUrl}`,
      `--tls-cert-file=${certs.aggregatedCertPath}`,
      `--tls-private-key-file=${certs.aggregatedKeyPath}`,
      `--bind-address=${HOST}`,
      `--secure-port=${ports.aggregatedApiServer}`,
      "--audit-log-path=-",
      "--audit-log-maxage=0",
      "--audit-log-maxbackup=0",
    ],
    "karmada-webhook": [
      `--kubeconfig=${kubeconfig}`,
      `--bind-address=${HOST}`,
      `--secure-port=${ports.webhook}`,
      `--cert-dir=${certs.webhookCertDir}`,
      `--health-probe-bind-address=${at(ports.webhookProbe)}`,
      `--metrics-bind-address=${at(ports.webhookMetrics)}`,
    ],
    "karmada-controller-manager": [
      `--kubeconfig=${kubeconfig}`,
      // Ten seconds, as upstream deploys it: how soon a member's health and objects' status show.
      "--cluster-status-update-frequency=10s",
      // One instance: the election's lease would only delay the start.
      "--leader-elect=false",
      `--health-probe-bind-address=${at(ports.controllerManagerProbe)}`,
      `--metrics-bind-address=${at(ports.controllerManagerMetrics)}`,
    ],
    "karmada-scheduler": [
      `--kubeconfig=${kubeconfig}`,
      "--leader-elect=false",
      `--health-probe-bind-address=${at(ports.schedulerProbe)}`,
      `--metrics-bind-address=${at(ports.schedulerMetrics)}`,
    ],
  };
}

/**
 * The health endpoint each process answers with 200 once it works. karmada-webhook registers no
 * health checks, so its own port answering TLS (any status) is its sign: see `answers`.
 */
export function karmadaProbes(ports: KarmadaPorts): Record<string, string> {
  return {
    "karmada-aggregated-apiserver": `https://${HOST}:${ports.aggregatedApiServer}/readyz`,
    "karmada-webhook": `https://${HOST}:${ports.webhook}/`,
    "karmada-controller-manager": `http://${HOST}:${ports.controllerManagerProbe}/healthz`,
    "karmada-scheduler": `http://${HOST}:${ports.schedulerProbe}/healthz`,
  };
}

/**
 * The APIService for cluster.karmada.io and the ExternalName Service it names, as upstream's
 * karmada-aggregated-apiserver-apiservice.yaml, but the name resolves to this machine: the API server
 * dials `<externalName>:<APIService port>` and checks the certificate against the Service's DNS name.
 */
export function aggregatedApiObjects(port: number, caCert: string): object[] {
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: AGGREGATED_SERVICE, namespace: KARMADA_SYSTEM },
      spec: { type: "ExternalName", externalName: "localhost" },
    },
    {
      apiVersion: "apiregistration.k8s.io/v1",
      kind: "APIService",
      metadata: { name: "v1alpha1.cluster.karmada.io" },
      spec: {
        group: "cluster.karmada.io",
        version: "v1alpha1",
        groupPriorityMinimum: 2000,
        versionPriority: 10,
        caBundle: Buffer.from(caCert).toString("base64"),
        service: { name: AGGREGATED_SERVICE, namespace: KARMADA_SYSTEM, port },
      },
    },
  ];
}

/** Upstream's webhook configuration (copied from the module at build time), pointed at the local webhook. */
export function webhookConfigurations(path: string, port: number, caCert: string): object[] {
  const text = readFileSync(path, "utf8")
    .replaceAll("https://karmada-webhook.karmada-system.svc:443", `https://${HOST}:${port}`)
    .replaceAll("{{caBundle}}", Buffer.from(caCert).toString("base64"));
  return parseAllDocuments(text)
    .map((document) => document.toJS() as object | null)
    .filter((object): object is object => object !== null);
}

/** True when `url` answers at all (any HTTP status): the server is up and its TLS works. */
export function answers(url: string): Promise<boolean> {
  return new Promise((resolveAnswer) => {
    const req = httpsGet(url, { rejectUnauthorized: false, timeout: 2000 }, (res) => {
      res.resume();
      resolveAnswer(true);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolveAnswer(false));
  });
}
