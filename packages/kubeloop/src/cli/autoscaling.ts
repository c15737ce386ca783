import { stringify } from "yaml";

/**
 * What the generated HorizontalPodAutoscaler of a sharded operator scales on. `cpu` needs only the
 * metrics-server; the others are the operator's own series, served per pod by the custom-metrics
 * API (prometheus-adapter with the rule {@link adapterRules} writes):
 * - `reconcile-errors`: seed 003's rule, reconcile errors a minute per pod over 2 minutes
 *   (default target 5), scaling up only once that has held for 2 minutes;
 * - `reconciles`: the work rate, reconciles a second per pod over 1 minute (default target 20).
 *   Unlike queue depth, which falls to 0 as soon as replicas are added and so makes the HPA
 *   oscillate (divviup/janus#3871), the total work rate does not depend on the replica count, so
 *   `ceil(total / target)` replicas is a stable answer.
 */
export type AutoscaleMetric = "cpu" | "reconcile-errors" | "reconciles";

export const AUTOSCALE_METRICS: readonly AutoscaleMetric[] = ["cpu", "reconcile-errors", "reconciles"];

/** The metric and its target (per pod; `cpu`: percent of the request). */
export interface Autoscale {
  metric: AutoscaleMetric;
  /** Default: 70 (% CPU), 5 (errors a minute), 20 (reconciles a second). */
  target?: number;
}

interface CustomMetric {
  /** The name the adapter serves it under, and the HPA asks for. */
  name: string;
  /** The operator's series it is computed from. */
  series: string;
  /** `<<.Series>>`, `<<.LabelMatchers>>`, `<<.GroupBy>>` are the adapter's template fields. */
  query: string;
  target: number;
  /** How long a higher recommendation must hold before scaling up (the HPA's scaleUp window). */
  upWindowSeconds: number;
}

const CUSTOM: Record<Exclude<AutoscaleMetric, "cpu">, (target?: number) => CustomMetric> = {
  "reconcile-errors": (target = 5) => ({
    name: "reconcile_errors_per_minute",
    series: "controller_runtime_reconcile_errors_total",
    query: "60 * sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
    target,
    upWindowSeconds: 120,
  }),
  reconciles: (target = 20) => ({
    name: "reconciles_per_second",
    series: "controller_runtime_reconcile_total",
    query: "sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)",
    target,
    upWindowSeconds: 0,
  }),
};

function customMetric({ metric, target }: Autoscale): CustomMetric | undefined {
  return metric === "cpu" ? undefined : CUSTOM[metric](target);
}

/** Parses `--autoscale METRIC[=TARGET]` (e.g. `reconcile-errors`, `reconciles=50`); throws naming the value. */
export function parseAutoscale(value: string): Autoscale {
  const [metric, target, ...rest] = value.split("=");
  const known = AUTOSCALE_METRICS.find((m) => m === metric);
  const number = target === undefined ? undefined : Number(target);
  if (!known || rest.length > 0 || (number !== undefined && !(number > 0)))
    throw new RangeError(
      `--autoscale "${value}": give METRIC[=TARGET] with METRIC one of ${AUTOSCALE_METRICS.join(", ")} and a positive TARGET, e.g. reconcile-errors=5`,
    );
  return { metric: known, ...(number !== undefined ? { target: number } : {}) };
}

/** The HPA's `spec.metrics` entry. */
export function hpaMetric(autoscale: Autoscale): object {
  const custom = customMetric(autoscale);
  if (!custom)
    return {
      type: "Resource",
      resource: { name: "cpu", target: { type: "Utilization", averageUtilization: autoscale.target ?? 70 } },
    };
  return {
    type: "Pods",
    pods: {
      metric: { name: custom.name },
      target: { type: "AverageValue", averageValue: quantity(custom.target) },
    },
  };
}

/** The HPA's `behavior.scaleUp` for a metric that must hold a while (seed 003's "for 2 minutes"). */
export function scaleUpBehavior(autoscale: Autoscale): object | undefined {
  const custom = customMetric(autoscale);
  return custom?.upWindowSeconds ? { stabilizationWindowSeconds: custom.upWindowSeconds } : undefined;
}

/**
 * The prometheus-adapter rule that serves a custom metric per pod, as a ConfigMap holding an
 * adapter `config.yaml` (merge its `rules` into your adapter's, or mount it as `--config`); none
 * for `cpu`. The series must carry `namespace` and `pod` labels, as a ServiceMonitor or pod
 * discovery adds them.
 */
export function adapterRules(name: string, namespace: string, autoscale: Autoscale): object | undefined {
  const custom = customMetric(autoscale);
  if (!custom) return undefined;
  const rule = {
    seriesQuery: `${custom.series}{namespace!="",pod!=""}`,
    resources: { overrides: { namespace: { resource: "namespace" }, pod: { resource: "pod" } } },
    name: { matches: `^${custom.series}$`, as: custom.name },
    metricsQuery: custom.query,
  };
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: `${name}-adapter-rules`, namespace },
    data: { "config.yaml": stringify({ rules: [rule] }) },
  };
}

/** `5` → `"5"`, `0.5` → `"500m"`: a Kubernetes quantity without floating-point noise. */
function quantity(value: number): string {
  return Number.isInteger(value) ? String(value) : `${Math.round(value * 1000)}m`;
}
