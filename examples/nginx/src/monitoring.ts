import type { ServiceMonitor } from "./servicemonitor.ts";

/**
 * The operator's ServiceMonitor, as `kubeloop generate` writes it (config/prometheus/monitor.yaml),
 * typed by prometheus-operator's own CRD schema: servicemonitor.ts is
 * `kubeloop generate types <its CRD> --out src/servicemonitor.ts` (`npm run generate:types`).
 */
export const metricsMonitor: ServiceMonitor = {
  apiVersion: "monitoring.coreos.com/v1",
  kind: "ServiceMonitor",
  metadata: {
    name: "nginx-operator-metrics-monitor",
    namespace: "nginx-operator-system",
    labels: { "app.kubernetes.io/name": "nginx-operator", "app.kubernetes.io/component": "manager" },
  },
  spec: {
    selector: {
      matchLabels: { "app.kubernetes.io/name": "nginx-operator", "app.kubernetes.io/component": "manager" },
    },
    endpoints: [
      {
        port: "https",
        scheme: "https",
        path: "/metrics",
        bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
        // Verified: the CA the operator issues its metrics certificate from, the Service's name.
        tlsConfig: {
          ca: { secret: { name: "nginx-operator-metrics-self-issued", key: "ca.crt" } },
          serverName: "nginx-operator-metrics",
        },
      },
    ],
  },
};
