import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { goEnv } from "../src/testing/assets/go.js";
import { defaultAssetsRoot } from "../src/testing/assets/index.js";
import { singleBinaryImage } from "../src/testing/control-plane/node-images.js";
import type { ControlPlane } from "../src/testing/control-plane.js";
import { kubectl } from "../src/testing/kubectl.js";
import { CertificateAuthority } from "../src/testing/pki.js";
import {
  aggregatedApiAccess,
  aggregatedApiService,
  apiService,
} from "../src/testing/servers/aggregated-api.js";
import { pollUntil } from "../src/util/index.js";

/** The metrics-server release the HPA tests run, built from its Go module. */
export const METRICS_SERVER_VERSION = "v0.9.0";
const IMAGE = `kubeloop.local/metrics-server:${METRICS_SERVER_VERSION}`;

/**
 * metrics-server's binary, built once into the asset cache with the control plane's Go settings
 * (static, no toolchain download): `go install sigs.k8s.io/metrics-server/cmd/metrics-server@…`.
 */
export function metricsServerBinary(root = defaultAssetsRoot()): string {
  const dir = join(root, `metrics-server-${METRICS_SERVER_VERSION}`);
  const binary = join(dir, "metrics-server");
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const module = `sigs.k8s.io/metrics-server/cmd/metrics-server@${METRICS_SERVER_VERSION}`;
  const built = spawnSync("go", ["install", "-trimpath", "-ldflags=-s -w", module], {
    env: { ...goEnv(), GOBIN: dir },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (built.status !== 0 || !existsSync(binary))
    throw new Error(`go install ${module} failed: ${(built.error?.message ?? built.stderr).slice(-2000)}`);
  return binary;
}

/**
 * Runs metrics-server in `kube-system` as an aggregated API (`v1beta1.metrics.k8s.io`): its
 * serving certificate comes from a CA made here, which the APIService trusts; it checks the
 * kubelets' serving certificates against the plane's CA (they are signed by it), so no
 * `--kubelet-insecure-tls`. Resolves once `kubectl top nodes` has figures.
 */
export async function installMetricsServer(plane: ControlPlane): Promise<void> {
  const image = singleBinaryImage(metricsServerBinary(), {
    ref: IMAGE,
    user: "65534:65534",
    cacheDir: defaultAssetsRoot(),
  });
  await plane.loadImage(image);
  const ca = CertificateAuthority.create("metrics-server-ca");
  const serving = ca.issueServing({
    commonName: "metrics-server",
    dnsNames: ["metrics-server.kube-system.svc", "metrics-server.kube-system.svc.cluster.local"],
    ipAddresses: [],
  });
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  const manifests = `${aggregatedApiAccess("metrics-server", "system:metrics-server", [
    '{ apiGroups: [""], resources: [nodes/metrics], verbs: [get] }',
    '{ apiGroups: [""], resources: [pods, nodes], verbs: [get, list, watch] }',
  ])}---
apiVersion: v1
kind: Secret
metadata: { name: metrics-server-certs, namespace: kube-system }
data: { tls.crt: ${b64(serving.cert)}, tls.key: ${b64(serving.key)}, kubelet-ca.crt: ${b64(plane.caCert)} }
${aggregatedApiService("metrics-server", 4443)}---
apiVersion: apps/v1
kind: Deployment
metadata: { name: metrics-server, namespace: kube-system }
spec:
  selector: { matchLabels: { app: metrics-server } }
  template:
    metadata: { labels: { app: metrics-server } }
    spec:
      serviceAccountName: metrics-server
      containers:
        - name: metrics-server
          image: ${IMAGE}
          args:
            - --secure-port=4443
            - --tls-cert-file=/certs/tls.crt
            - --tls-private-key-file=/certs/tls.key
            - --kubelet-certificate-authority=/certs/kubelet-ca.crt
            - --kubelet-preferred-address-types=InternalIP
            - --metric-resolution=10s
            - --kubelet-request-timeout=5s
          readinessProbe: { httpGet: { path: /readyz, port: 4443, scheme: HTTPS }, periodSeconds: 2 }
          volumeMounts: [{ name: certs, mountPath: /certs, readOnly: true }]
      volumes: [{ name: certs, secret: { secretName: metrics-server-certs } }]
${apiService("metrics-server", "metrics.k8s.io", "v1beta1", ca.cert)}`;
  const k = (args: string[], input?: string) =>
    kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
  const applied = await k(["apply", "-f", "-"], manifests);
  if (applied.code !== 0) throw new Error(`metrics-server manifests: ${applied.stderr}`);
  let last = "";
  await pollUntil(
    async () => {
      const top = await k(["top", "nodes", "--no-headers"]);
      last = top.stderr || top.stdout;
      return top.code === 0 && top.stdout.trim().split("\n").length === plane.nodeNames.length;
    },
    { timeoutMs: 120_000, intervalMs: 2_000, message: "metrics-server to report every node" },
  ).catch(async (error: Error) => {
    const logs = await k(["-n", "kube-system", "logs", "deployment/metrics-server", "--tail=30"]);
    throw new Error(
      `${error.message}\nlast kubectl top: ${last}\nmetrics-server's log:\n${logs.stdout}${logs.stderr}`,
    );
  });
}
