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

/** The Secret the manager keeps its metrics certificate and CA in (when none is mounted); scrapers trust its `ca.crt`. */
export function metricsCertSecret(name: string): string {
  return `${name}-metrics-self-issued`;
}

export function metricsServiceName(name: string): string {
  return `${name}-metrics`;
}

/** An alerting rule, as Prometheus and the PrometheusRule CRD take it. */
export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: "warning" | "critical" };
  annotations: { summary: string; description: string; runbook_url?: string };
}

/**
 * The alerts of one operator, scoped to its metrics (`job="<name>-metrics"`: the Service a
 * ServiceMonitor scrapes names the job). Thresholds are the defaults of controller-runtime
 * operators' common rules; edit a copy if yours differ.
 */
export function alertRules(name: string, runbooks?: string): { name: string; rules: AlertRule[] }[] {
  const job = `job="${metricsServiceName(name)}"`;
  const rule = (
    alert: string,
    expr: string,
    forDuration: string,
    severity: "warning" | "critical",
    summary: string,
    description: string,
  ): AlertRule => ({
    alert,
    expr,
    for: forDuration,
    labels: { severity },
    annotations: runbooks
      ? { summary, description, runbook_url: `${runbooks}#${alert.toLowerCase()}` }
      : {
          summary,
          description: `${description} Runbook: kubeloop's docs/observability.md, section ${alert}.`,
        },
  });
  return [
    {
      name: `${name}.rules`,
      rules: [
        rule(
          "KubeloopOperatorDown",
          `absent(up{${job}} == 1)`,
          "5m",
          "critical",
          `${name}: no replica of the operator can be scraped`,
          "No replica of the operator has answered a scrape for 5 minutes: nothing reconciles.",
        ),
        rule(
          "KubeloopReconcileErrorsHigh",
          `sum by (controller) (rate(controller_runtime_reconcile_errors_total{${job}}[5m]))\n` +
            `  / sum by (controller) (rate(controller_runtime_reconcile_total{${job}}[5m])) > 0.1`,
          "10m",
          "warning",
          `${name}: controller {{ $labels.controller }} fails {{ $value | humanizePercentage }} of its reconciles`,
          "More than 10% of the controller's reconciles have ended in an error for 10 minutes.",
        ),
        rule(
          "KubeloopWorkqueueDepthGrowing",
          `sum by (name) (workqueue_depth{${job}}) > 10\n` +
            `  and sum by (name) (delta(workqueue_depth{${job}}[15m])) > 0`,
          "15m",
          "warning",
          `${name}: the work queue of {{ $labels.name }} keeps growing ({{ $value }} keys waiting)`,
          "The queue holds more than 10 keys and has grown over 15 minutes: the controller falls behind.",
        ),
        rule(
          "KubeloopWorkqueueLatencyHigh",
          `histogram_quantile(0.99, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket{${job}}[10m]))) > 60`,
          "15m",
          "warning",
          `${name}: keys wait {{ $value | humanizeDuration }} in the queue of {{ $labels.name }} (p99)`,
          "The 99th percentile of the time a key waits before a worker takes it has been above a minute for 15 minutes.",
        ),
        rule(
          "KubeloopNoLeader",
          `max by (name) (leader_election_master_status{${job}}) < 1`,
          "5m",
          "critical",
          `${name}: no replica leads the Lease {{ $labels.name }}`,
          "Replicas run but none has held the Lease for 5 minutes: nothing reconciles.",
        ),
        rule(
          "KubeloopWatchUnhealthy",
          `kubeloop_informer_watch_healthy{${job}} == 0`,
          "5m",
          "warning",
          `${name}: the watch of {{ $labels.kind }} {{ with $labels.namespace }}in {{ . }}{{ end }} fails`,
          "An informer has failed to list or watch (e.g. Forbidden: a missing Role) for 5 minutes; its cache is stale and the pod is not ready.",
        ),
        rule(
          "KubeloopWebhookFailures",
          `sum by (webhook) (rate(controller_runtime_webhook_requests_total{${job}, code=~"5.."}[5m]))\n` +
            `  / sum by (webhook) (rate(controller_runtime_webhook_requests_total{${job}}[5m])) > 0.05`,
          "5m",
          "critical",
          `${name}: webhook {{ $labels.webhook }} fails {{ $value | humanizePercentage }} of its reviews`,
          "More than 5% of the webhook's reviews failed for 5 minutes: users' writes of the kind are refused.",
        ),
        rule(
          "KubeloopCertificateExpiring",
          `kubeloop_certificate_expiration_timestamp_seconds{${job}} - time() < 7 * 86400`,
          "1h",
          "warning",
          `${name}: the {{ $labels.server }} certificate expires in {{ $value | humanizeDuration }}`,
          "A serving certificate in use expires within 7 days and has not been renewed.",
        ),
      ],
    },
  ];
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
      {
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
      },
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
      {
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
      },
    ),
  ];
}

/**
 * A Grafana dashboard of one operator (schema 39, a `datasource` variable for Prometheus): rows of
 * reconciles, queues, the API, and the process.
 */
export function dashboard(name: string): object {
  const job = `job="${metricsServiceName(name)}"`;
  let id = 0;
  const panel = (
    title: string,
    targets: [expr: string, legend: string][],
    gridPos: { x: number; y: number; w: number; h: number },
    unit = "short",
    description = "",
  ) => ({
    id: ++id,
    type: "timeseries",
    title,
    description,
    // Grafana's variable syntax, not a template literal.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana expands it.
    datasource: { type: "prometheus", uid: "${datasource}" },
    gridPos,
    fieldConfig: { defaults: { unit }, overrides: [] },
    targets: targets.map(([expr, legendFormat], index) => ({
      refId: String.fromCharCode(65 + index),
      expr,
      legendFormat,
    })),
  });
  /** A counter's per-second rate over Grafana's interval, summed by the labels `by`. */
  const rate = (by: string, metric: string) => `sum by (${by}) (rate(${metric}{${job}}[$__rate_interval]))`;
  const quantiles = (metric: string, by: string) =>
    [0.5, 0.9, 0.99].map((q): [string, string] => [
      `histogram_quantile(${q}, ${rate(`${by}, le`, `${metric}_bucket`)})`,
      `{{${by}}} p${q * 100}`,
    ]);
  return {
    title: `${name} operator`,
    uid: `kubeloop-${name}`.slice(0, 40),
    description: `Reconciles, queues, API requests and process health of the ${name} operator (generated by kubeloop).`,
    tags: ["kubeloop", "operator"],
    schemaVersion: 39,
    editable: true,
    time: { from: "now-1h", to: "now" },
    refresh: "30s",
    templating: {
      list: [{ name: "datasource", type: "datasource", query: "prometheus", label: "Prometheus" }],
    },
    panels: [
      panel(
        "Reconciles per second",
        [[rate("controller, result", "controller_runtime_reconcile_total"), "{{controller}} {{result}}"]],
        { x: 0, y: 0, w: 12, h: 8 },
        "ops",
      ),
      panel(
        "Reconcile errors per second",
        [
          [rate("controller", "controller_runtime_reconcile_errors_total"), "{{controller}} errors"],
          [
            rate("controller", "controller_runtime_terminal_reconcile_errors_total"),
            "{{controller}} terminal",
          ],
        ],
        { x: 12, y: 0, w: 12, h: 8 },
        "ops",
      ),
      panel(
        "Reconcile time (p50, p90, p99)",
        quantiles("controller_runtime_reconcile_time_seconds", "controller"),
        { x: 0, y: 8, w: 12, h: 8 },
        "s",
      ),
      panel(
        "Active workers",
        [
          [`sum by (controller) (controller_runtime_active_workers{${job}})`, "{{controller}} active"],
          [
            `max by (controller) (controller_runtime_max_concurrent_reconciles{${job}})`,
            "{{controller}} max",
          ],
        ],
        { x: 12, y: 8, w: 12, h: 8 },
      ),
      panel("Work queue depth", [[`sum by (name) (workqueue_depth{${job}})`, "{{name}}"]], {
        x: 0,
        y: 16,
        w: 8,
        h: 8,
      }),
      panel(
        "Time in queue (p50, p90, p99)",
        quantiles("workqueue_queue_duration_seconds", "name"),
        { x: 8, y: 16, w: 8, h: 8 },
        "s",
      ),
      panel(
        "Queue adds and retries per second",
        [
          [rate("name", "workqueue_adds_total"), "{{name}} adds"],
          [rate("name", "workqueue_retries_total"), "{{name}} retries"],
        ],
        { x: 16, y: 16, w: 8, h: 8 },
        "ops",
      ),
      panel(
        "API requests per second",
        [[rate("method, code", "rest_client_requests_total"), "{{method}} {{code}}"]],
        { x: 0, y: 24, w: 12, h: 8 },
        "reqps",
      ),
      panel(
        "Leader and watches",
        [
          [`max by (pod, name) (leader_election_master_status{${job}})`, "{{pod}} leads {{name}}"],
          [
            `min by (kind, namespace) (kubeloop_informer_watch_healthy{${job}})`,
            "watch {{kind}} {{namespace}}",
          ],
        ],
        { x: 12, y: 24, w: 12, h: 8 },
      ),
      panel(
        "Memory",
        [
          [`sum by (pod) (process_resident_memory_bytes{${job}})`, "{{pod}} RSS"],
          [`sum by (pod) (nodejs_heap_size_used_bytes{${job}})`, "{{pod}} heap used"],
        ],
        { x: 0, y: 32, w: 8, h: 8 },
        "bytes",
      ),
      panel(
        "Event loop lag (p50, p99)",
        [
          [`max by (pod) (nodejs_eventloop_lag_p50_seconds{${job}})`, "{{pod}} p50"],
          [`max by (pod) (nodejs_eventloop_lag_p99_seconds{${job}})`, "{{pod}} p99"],
        ],
        { x: 8, y: 32, w: 8, h: 8 },
        "s",
        "How late timers and I/O callbacks run: a busy event loop delays every reconcile and probe.",
      ),
      panel(
        "CPU",
        [[rate("pod", "process_cpu_seconds_total"), "{{pod}}"]],
        { x: 16, y: 32, w: 8, h: 8 },
        "percentunit",
      ),
      panel(
        "Informer cache objects",
        [[`sum by (kind, namespace) (kubeloop_informer_objects{${job}})`, "{{kind}} {{namespace}}"]],
        { x: 0, y: 40, w: 8, h: 8 },
      ),
      panel(
        "Informer cache bytes (approximate)",
        [[`sum by (kind, namespace) (kubeloop_informer_bytes{${job}})`, "{{kind}} {{namespace}}"]],
        { x: 8, y: 40, w: 8, h: 8 },
        "bytes",
        "Count of cached objects times the mean JSON size of a sample of them: which informer holds the memory.",
      ),
      panel(
        "Reconciles deferred by the per-object cap",
        [[rate("controller", "kubeloop_reconcile_deferred_total"), "{{controller}}"]],
        { x: 16, y: 40, w: 8, h: 8 },
        "ops",
      ),
    ],
  };
}
