import { alertRules } from "./alerts.js";
import { dashboard } from "./dashboard.js";
import { metricsCertSecret, metricsServiceName } from "./metrics-names.js";

/**
 * What `kubeloop generate --image` writes for monitoring, opt-in (`kubeloop deploy` does not apply
 * it; `kubectl apply -k config/prometheus` where the Prometheus Operator runs):
 * - config/prometheus/monitor.yaml: a ServiceMonitor scraping the manager's HTTPS /metrics with the
 *   Prometheus service account's bearer token (it needs the `<name>-metrics-reader` ClusterRole);
 * - config/prometheus/alerts.yaml: a PrometheusRule with the alerts every kubeloop operator needs,
 *   each with a runbook in docs/observability.md;
 * - config/grafana/dashboard.yaml: the dashboard as a ConfigMap that Grafana's sidecar loads
 *   (label `grafana_dashboard: "1"`); its JSON is the `<name>.json` key, for a manual import too;
 * - config/network-policy/allow-ingress.yaml: only the webhook port from anywhere (the API server is
 *   not a pod a policy can select) and the metrics port from namespaces labelled `metrics: enabled`.
 */

export interface MonitoringOptions {
  name: string;
  namespace: string;
  /** The manager's pod labels (the Deployment's selector). */
  labels: Record<string, string>;
  metricsPort: number;
  webhookPort?: number;
  /**
   * The page holding the runbooks (`"kubeloop": { "runbooks": URL }`): each alert's `runbook_url`
   * is that page with the alert's name, lower-cased, as its anchor. Without it, alerts carry no
   * `runbook_url` (an address kubeloop guessed would send an on-call engineer nowhere) and their
   * description names the section of kubeloop's docs/observability.md instead.
   */
  runbooks?: string;
}

/** The monitoring manifests, by file under config/ (opt-in: not applied by `kubeloop deploy`). */
export function monitoringManifests(options: MonitoringOptions): [string, object[]][] {
  const { name, namespace, labels } = options;
  /** The file at `path`, holding one object: `<name>-<suffix>` in the operator's namespace. */
  const file = (
    path: string,
    type: { apiVersion: string; kind: string },
    suffix: string,
    body: object,
    extraLabels: Record<string, string> = {},
  ): [string, object[]] => [
    path,
    [
      {
        ...type,
        metadata: { name: `${name}-${suffix}`, namespace, labels: { ...labels, ...extraLabels } },
        ...body,
      },
    ],
  ];
  return [
    file(
      "prometheus/monitor.yaml",
      { apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor" },
      "metrics-monitor",
      serviceMonitorBody(name, labels),
    ),
    file(
      "prometheus/alerts.yaml",
      { apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule" },
      "alerts",
      {
        spec: { groups: alertRules(name, options.runbooks) },
      },
    ),
    file(
      "grafana/dashboard.yaml",
      { apiVersion: "v1", kind: "ConfigMap" },
      "dashboard",
      { data: { [`${name}.json`]: `${JSON.stringify(dashboard(name), null, 2)}\n` } },
      { grafana_dashboard: "1" },
    ),
    file(
      "network-policy/allow-ingress.yaml",
      { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy" },
      "allow-ingress",
      networkPolicyBody(options),
    ),
  ];
}

/** Prometheus scrapes the manager's HTTPS /metrics with its own token, verifying the certificate. */
function serviceMonitorBody(name: string, labels: Record<string, string>): object {
  return {
    spec: {
      selector: { matchLabels: labels },
      endpoints: [
        {
          port: "https",
          scheme: "https",
          path: "/metrics",
          // Prometheus' own token: its service account needs the <name>-metrics-reader ClusterRole.
          bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
          // Verified: the manager issues its certificate from the CA in this Secret (unless
          // METRICS_CERT_DIR mounts one: then point ca at that one's CA). The Service's short
          // name is in the certificate and needs no namespace, so an overlay may move it.
          tlsConfig: {
            ca: { secret: { name: metricsCertSecret(name), key: "ca.crt" } },
            serverName: metricsServiceName(name),
          },
        },
      ],
    },
  };
}

/** Only metrics scrapers and the API server's webhook calls may reach the manager. */
function networkPolicyBody(options: MonitoringOptions): object {
  const { labels } = options;
  return {
    spec: {
      podSelector: { matchLabels: labels },
      policyTypes: ["Ingress"],
      ingress: [
        {
          // Prometheus, from namespaces labelled for it (kubebuilder's convention).
          from: [{ namespaceSelector: { matchLabels: { metrics: "enabled" } } }],
          ports: [{ protocol: "TCP", port: options.metricsPort }],
        },
        ...(options.webhookPort
          ? [
              {
                // The API server calls webhooks from outside the pod network: the port alone
                // is admitted, from anywhere; the server authenticates nothing else on it.
                ports: [{ protocol: "TCP", port: options.webhookPort }],
              },
            ]
          : []),
      ],
    },
  };
}
