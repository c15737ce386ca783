import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { pollUntil } from "../../util/index.js";
import { goEnv } from "../assets/go.js";
import { defaultAssetsRoot } from "../assets/index.js";
import { singleBinaryImage } from "../control-plane/node-images.js";
import { kubectl } from "../kubectl.js";
import { CertificateAuthority } from "../pki.js";
import { aggregatedApiAccess, aggregatedApiService, apiService } from "./aggregated-api.js";

/** The prometheus-adapter release {@link installPrometheusAdapter} runs, built from its Go module. */
export const PROMETHEUS_ADAPTER_VERSION = "v0.12.0";
const MODULE = "sigs.k8s.io/prometheus-adapter";
const GROUP = "custom.metrics.k8s.io";
const IMAGE = `kubeloop.local/prometheus-adapter:${PROMETHEUS_ADAPTER_VERSION}`;

/** What the adapter needs of a node-profile plane (a `ControlPlane` started with `profile: "node"`). */
export interface AdapterPlane {
  readonly kubeconfigPath: string;
  loadImage(tarball: string): Promise<unknown>;
}

/**
 * The path of prometheus-adapter's binary, built once into the asset cache with the control plane's Go
 * settings. Through a wrapper module that requires the pinned release (its go.mod has no
 * `replace`, so the build is the release's): `go install …@version` would first ask the proxy
 * for the module's version list, which the proxy here refuses.
 */
export function prometheusAdapterBinary(root = defaultAssetsRoot()): string {
  const dir = join(root, `prometheus-adapter-${PROMETHEUS_ADAPTER_VERSION}`);
  const binary = join(dir, "adapter");
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const work = mkdtempSync(join(dir, ".build-"));
  const go = (args: string[]) =>
    spawnSync("go", args, { cwd: work, env: goEnv(), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  try {
    for (const args of [
      ["mod", "init", "kubeloop.local/prometheus-adapter"],
      ["get", `${MODULE}@${PROMETHEUS_ADAPTER_VERSION}`],
      ["build", "-trimpath", "-ldflags=-s -w", "-o", binary, `${MODULE}/cmd/adapter`],
    ]) {
      const run = go(args);
      if (run.status !== 0)
        throw new Error(
          `building prometheus-adapter ${PROMETHEUS_ADAPTER_VERSION}: go ${args.join(" ")} failed ` +
            `(it needs Go and the module proxy):\n${(run.error?.message ?? run.stderr).slice(-2000)}`,
        );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return binary;
}

/** Where the adapter reads from, and what it serves. */
export interface AdapterOptions {
  /** Prometheus' URL as pods reach it (a host process: listening on the plane's host address). */
  prometheusUrl: string;
  /** The adapter's `rules` (e.g. those of `kubeloop generate --autoscale`'s adapter-rules.yaml). */
  rules: object[];
  /** How often it lists the series it serves (default 5 s: new pods' series show up soon). */
  relistInterval?: string;
}

/**
 * Runs prometheus-adapter in `kube-system` of a node-profile plane as the aggregated
 * custom-metrics API (`v1beta2` and `v1beta1.custom.metrics.k8s.io`), serving with a certificate
 * from a CA made here which the APIServices trust, and lets the HPA controller read it. Resolves
 * once the APIService is Available. Builds the adapter first when the asset cache lacks it
 * (Go and the module proxy; about 5 minutes on an idle 2-core machine).
 *
 * @example
 * ```ts
 * import { ControlPlane } from "kubeloop/testing";
 * import { installPrometheusAdapter, PrometheusServer } from "kubeloop/testing/servers";
 *
 * const plane = await new ControlPlane({ profile: "node", nodes: 1 }).start();
 * // Pods reach this machine on the plane's host address (the registry's).
 * const prometheus = await new PrometheusServer({ host: plane.registry.split(":")[0] }).start();
 * await installPrometheusAdapter(plane, {
 *   prometheusUrl: prometheus.url,
 *   rules: [{ seriesQuery: 'up{namespace!="",pod!=""}', metricsQuery: "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)" }],
 * });
 * ```
 */
export async function installPrometheusAdapter(plane: AdapterPlane, options: AdapterOptions): Promise<void> {
  const image = singleBinaryImage(prometheusAdapterBinary(), {
    ref: IMAGE,
    user: "65534:65534",
    cacheDir: defaultAssetsRoot(),
  });
  await plane.loadImage(image);
  const ca = CertificateAuthority.create("prometheus-adapter-ca");
  const host = "prometheus-adapter.kube-system.svc";
  const serving = ca.issueServing({
    commonName: host,
    dnsNames: [host, `${host}.cluster.local`],
    ipAddresses: [],
  });
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  const manifests = `${aggregatedApiAccess("prometheus-adapter", "prometheus-adapter:resource-reader", [
    '{ apiGroups: [""], resources: [namespaces, pods, services], verbs: [get, list, watch] }',
  ])}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: "custom-metrics:reader" }
rules: [{ apiGroups: [custom.metrics.k8s.io], resources: ["*"], verbs: [get, list] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: "custom-metrics:hpa" }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "custom-metrics:reader" }
subjects: [{ kind: ServiceAccount, name: horizontal-pod-autoscaler, namespace: kube-system }]
---
apiVersion: v1
kind: Secret
metadata: { name: prometheus-adapter, namespace: kube-system }
data:
  tls.crt: ${b64(serving.cert)}
  tls.key: ${b64(serving.key)}
  config.yaml: ${b64(stringify({ rules: options.rules }))}
${aggregatedApiService("prometheus-adapter", 6443)}---
apiVersion: apps/v1
kind: Deployment
metadata: { name: prometheus-adapter, namespace: kube-system }
spec:
  selector: { matchLabels: { app: prometheus-adapter } }
  template:
    metadata: { labels: { app: prometheus-adapter } }
    spec:
      serviceAccountName: prometheus-adapter
      containers:
        - name: adapter
          image: ${IMAGE}
          args:
            - --secure-port=6443
            - --tls-cert-file=/etc/adapter/tls.crt
            - --tls-private-key-file=/etc/adapter/tls.key
            - --config=/etc/adapter/config.yaml
            - --prometheus-url=${options.prometheusUrl}
            - --metrics-relist-interval=${options.relistInterval ?? "5s"}
          readinessProbe: { httpGet: { path: /readyz, port: 6443, scheme: HTTPS }, periodSeconds: 2 }
          volumeMounts: [{ name: config, mountPath: /etc/adapter, readOnly: true }]
      volumes: [{ name: config, secret: { secretName: prometheus-adapter } }]
${apiService("prometheus-adapter", GROUP, "v1beta2", ca.cert, 200)}${apiService("prometheus-adapter", GROUP, "v1beta1", ca.cert)}`;
  const k = (args: string[], input?: string) =>
    kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
  const applied = await k(["apply", "-f", "-"], manifests);
  if (applied.code !== 0) throw new Error(`prometheus-adapter manifests: ${applied.stderr}`);
  await untilAvailable(k);
}

/** Waits for the custom-metrics API to be Available; a timeout says why, with the adapter's log. */
async function untilAvailable(k: (args: string[]) => ReturnType<typeof kubectl>): Promise<void> {
  let last = "";
  await pollUntil(
    async () => {
      const available = await k([
        "get",
        "apiservice",
        "v1beta2.custom.metrics.k8s.io",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Available")].status}',
      ]);
      last = `${available.stdout} ${available.stderr}`;
      return available.stdout === "True";
    },
    { timeoutMs: 120_000, intervalMs: 2_000, message: "the custom-metrics API to be available" },
  ).catch(async (error: Error) => {
    const logs = await k(["-n", "kube-system", "logs", "deployment/prometheus-adapter", "--tail=30"]);
    throw new Error(
      `${error.message}\nAPIService Available: ${last}\nprometheus-adapter's log:\n${logs.stdout}${logs.stderr}`,
    );
  });
}
