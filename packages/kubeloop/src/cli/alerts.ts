// The alerting rules `kubeloop generate --image` writes to config/prometheus/alerts.yaml (see
// monitoring.ts), each with a runbook in docs/observability.md.
import { metricsServiceName } from "./metrics-names.js";

/** An alerting rule, as Prometheus and the PrometheusRule CRD take it. */
export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: "warning" | "critical" };
  annotations: { summary: string; description: string; runbook_url?: string };
}

/** What an alert says, before its runbook is attached. */
type Alert = [
  alert: string,
  expr: string,
  forDuration: string,
  severity: "warning" | "critical",
  summary: string,
  description: string,
];

/**
 * The alerts of one operator, scoped to its metrics (`job="<name>-metrics"`: the Service a
 * ServiceMonitor scrapes names the job). Thresholds are the defaults of controller-runtime
 * operators' common rules; edit a copy if yours differ.
 */
export function alertRules(name: string, runbooks?: string): { name: string; rules: AlertRule[] }[] {
  const job = `job="${metricsServiceName(name)}"`;
  const alerts = [...reconcileAlerts(name, job), ...partAlerts(name, job)];
  return [{ name: `${name}.rules`, rules: alerts.map((alert) => withRunbook(alert, runbooks)) }];
}

function withRunbook(
  [alert, expr, forDuration, severity, summary, description]: Alert,
  runbooks: string | undefined,
): AlertRule {
  return {
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
  };
}

/** Is the operator up, and does it keep up with its work? */
function reconcileAlerts(name: string, job: string): Alert[] {
  return [
    [
      "KubeloopOperatorDown",
      `absent(up{${job}} == 1)`,
      "5m",
      "critical",
      `${name}: no replica of the operator can be scraped`,
      "No replica of the operator has answered a scrape for 5 minutes: nothing reconciles.",
    ],
    [
      "KubeloopReconcileErrorsHigh",
      `sum by (controller) (rate(controller_runtime_reconcile_errors_total{${job}}[5m]))\n` +
        `  / sum by (controller) (rate(controller_runtime_reconcile_total{${job}}[5m])) > 0.1`,
      "10m",
      "warning",
      `${name}: controller {{ $labels.controller }} fails {{ $value | humanizePercentage }} of its reconciles`,
      "More than 10% of the controller's reconciles have ended in an error for 10 minutes.",
    ],
    [
      "KubeloopWorkqueueDepthGrowing",
      `sum by (name) (workqueue_depth{${job}}) > 10\n` +
        `  and sum by (name) (delta(workqueue_depth{${job}}[15m])) > 0`,
      "15m",
      "warning",
      `${name}: the work queue of {{ $labels.name }} keeps growing ({{ $value }} keys waiting)`,
      "The queue holds more than 10 keys and has grown over 15 minutes: the controller falls behind.",
    ],
    [
      "KubeloopWorkqueueLatencyHigh",
      `histogram_quantile(0.99, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket{${job}}[10m]))) > 60`,
      "15m",
      "warning",
      `${name}: keys wait {{ $value | humanizeDuration }} in the queue of {{ $labels.name }} (p99)`,
      "The 99th percentile of the time a key waits before a worker takes it has been above a minute for 15 minutes.",
    ],
  ];
}

/** Do the parts it relies on work: the Lease, the watches, the webhooks, the certificates? */
function partAlerts(name: string, job: string): Alert[] {
  return [
    [
      "KubeloopNoLeader",
      `max by (name) (leader_election_master_status{${job}}) < 1`,
      "5m",
      "critical",
      `${name}: no replica leads the Lease {{ $labels.name }}`,
      "Replicas run but none has held the Lease for 5 minutes: nothing reconciles.",
    ],
    [
      "KubeloopWatchUnhealthy",
      `kubeloop_informer_watch_healthy{${job}} == 0`,
      "5m",
      "warning",
      `${name}: the watch of {{ $labels.kind }} {{ with $labels.namespace }}in {{ . }}{{ end }} fails`,
      "An informer has failed to list or watch (e.g. Forbidden: a missing Role) for 5 minutes; its cache is stale and the pod is not ready.",
    ],
    [
      "KubeloopWebhookFailures",
      `sum by (webhook) (rate(controller_runtime_webhook_requests_total{${job}, code=~"5.."}[5m]))\n` +
        `  / sum by (webhook) (rate(controller_runtime_webhook_requests_total{${job}}[5m])) > 0.05`,
      "5m",
      "critical",
      `${name}: webhook {{ $labels.webhook }} fails {{ $value | humanizePercentage }} of its reviews`,
      "More than 5% of the webhook's reviews failed for 5 minutes: users' writes of the kind are refused.",
    ],
    [
      "KubeloopCertificateExpiring",
      `kubeloop_certificate_expiration_timestamp_seconds{${job}} - time() < 7 * 86400`,
      "1h",
      "warning",
      `${name}: the {{ $labels.server }} certificate expires in {{ $value | humanizeDuration }}`,
      "A serving certificate in use expires within 7 days and has not been renewed.",
    ],
  ];
}
