import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import type { KubeObject } from "../client/types.js";
import { controller } from "../controller/builder.js";
import { ConfigMap } from "../k8s/index.js";
import { Manager } from "../manager/manager.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { PrometheusServer, promtool } from "../testing/servers/prometheus.js";
import { alertRules } from "./alerts.js";
import { dashboard } from "./dashboard.js";
import { metricsReaderRole, metricsRoles } from "./manifests.js";

// The alerts `kubeloop generate` writes, checked by Prometheus itself: promtool's checks, unit tests
// that make each alert fire and not fire, and a real Prometheus scraping a running manager.
const OPERATOR = "op";
const job = { job: `${OPERATOR}-metrics` };

interface AlertCase {
  alert: string;
  /**
   * The input series (promtool's expanding notation): each one's values that make the alert fire
   * at `at`, and values that look alike but must not make it fire (none: the series is absent then).
   */
  series: [series: string, firing: string, quiet?: string][];
  at: string;
  labels: Record<string, string>;
  summary: string;
}

const series = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries({ ...job, ...labels })
    .map(([k, v]) => `${k}="${v}"`)
    .join(",")}}`;

const CASES: AlertCase[] = [
  {
    alert: "KubeloopOperatorDown",
    series: [[series("up", { instance: "a" }), "0x20", "1x20"]],
    at: "10m",
    labels: { severity: "critical" }, // absent() of a comparison keeps no labels
    summary: "op: no replica of the operator can be scraped",
  },
  {
    alert: "KubeloopReconcileErrorsHigh",
    series: [
      [series("controller_runtime_reconcile_errors_total", { controller: "c" }), "0+1x30", "0+0x30"],
      [series("controller_runtime_reconcile_total", { controller: "c", result: "error" }), "0+1x30"],
      [
        series("controller_runtime_reconcile_total", { controller: "c", result: "success" }),
        "0+3x30",
        "0+3x30",
      ],
    ],
    at: "20m",
    labels: { controller: "c", severity: "warning" },
    summary: "op: controller c fails 25% of its reconciles",
  },
  {
    alert: "KubeloopWorkqueueDepthGrowing",
    series: [[series("workqueue_depth", { name: "c", controller: "c", priority: "0" }), "0+1x40", "50x40"]],
    at: "30m",
    labels: { name: "c", severity: "warning" },
    summary: "op: the work queue of c keeps growing (30 keys waiting)",
  },
  {
    alert: "KubeloopWorkqueueLatencyHigh",
    series: [
      [series("workqueue_queue_duration_seconds_bucket", { name: "c", le: "60" }), "0x40", "0+10x40"],
      [series("workqueue_queue_duration_seconds_bucket", { name: "c", le: "120" }), "0+10x40", "0+10x40"],
      [series("workqueue_queue_duration_seconds_bucket", { name: "c", le: "+Inf" }), "0+10x40", "0+10x40"],
    ],
    at: "30m",
    labels: { name: "c", severity: "warning" },
    summary: "op: keys wait 1m 59s in the queue of c (p99)",
  },
  {
    alert: "KubeloopNoLeader",
    series: [
      [series("leader_election_master_status", { name: "op", pod: "a" }), "0x20", "0x20"],
      [series("leader_election_master_status", { name: "op", pod: "b" }), "0x20", "1x20"],
    ],
    at: "10m",
    labels: { name: "op", severity: "critical" },
    summary: "op: no replica leads the Lease op",
  },
  {
    alert: "KubeloopWatchUnhealthy",
    series: [
      [series("kubeloop_informer_watch_healthy", { kind: "ConfigMap", namespace: "team-a" }), "0x20", "1x20"],
    ],
    at: "10m",
    labels: { ...job, kind: "ConfigMap", namespace: "team-a", severity: "warning" },
    summary: "op: the watch of ConfigMap in team-a fails",
  },
  {
    alert: "KubeloopWebhookFailures",
    series: [
      [
        series("controller_runtime_webhook_requests_total", { webhook: "/validate", code: "500" }),
        "0+1x20",
        "0x20",
      ],
      [
        series("controller_runtime_webhook_requests_total", { webhook: "/validate", code: "200" }),
        "0+3x20",
        "0+3x20",
      ],
    ],
    at: "15m",
    labels: { webhook: "/validate", severity: "critical" },
    summary: "op: webhook /validate fails 25% of its reviews",
  },
  {
    alert: "KubeloopCertificateExpiring",
    // promtool's clock starts at the epoch: a day after it, seen at 2 h, is 22 h away.
    series: [
      [
        series("kubeloop_certificate_expiration_timestamp_seconds", { server: "metrics" }),
        "86400x200",
        "10000000x200",
      ],
    ],
    at: "2h",
    labels: { ...job, server: "metrics", severity: "warning" },
    summary: "op: the metrics certificate expires in 22h 0m 0s",
  },
];

describe("generated alerts", () => {
  const rules = alertRules(OPERATOR);
  const all = rules.flatMap((group) => group.rules);
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "kubeloop-alerts-"));
    writeFileSync(join(dir, "rules.yml"), stringify({ groups: rules }));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("pass promtool's checks, and each has a runbook section", () => {
    const check = promtool(["check", "rules", join(dir, "rules.yml")]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain(`SUCCESS: ${all.length} rules found`);
    // Each alert's runbook is a section of docs/observability.md that its description names…
    const guide = readFileSync(join(import.meta.dirname, "../../../../docs/observability.md"), "utf8");
    for (const rule of all) {
      expect(rule.annotations.runbook_url).toBeUndefined();
      expect(rule.annotations.description).toContain(`docs/observability.md, section ${rule.alert}.`);
      expect(guide).toContain(`\n### ${rule.alert}\n`);
    }
    // …and, where the project says where its runbooks are published, its runbook_url.
    const linked = alertRules(OPERATOR, "https://runbooks.example.com/op").flatMap((group) => group.rules);
    for (const rule of linked)
      expect(rule.annotations.runbook_url).toBe(
        `https://runbooks.example.com/op#${rule.alert.toLowerCase()}`,
      );
    expect(CASES.map((c) => c.alert).sort()).toEqual(all.map((rule) => rule.alert).sort());
  });

  it("fire on the series that should fire them, and stay quiet on those that should not (promtool test rules)", () => {
    const tests = CASES.flatMap((c) => {
      const rule = all.find((r) => r.alert === c.alert);
      return [
        {
          name: `${c.alert} fires`,
          interval: "1m",
          input_series: c.series.map(([s, firing]) => ({ series: s, values: firing })),
          alert_rule_test: [
            {
              eval_time: c.at,
              alertname: c.alert,
              exp_alerts: [
                {
                  exp_labels: c.labels,
                  exp_annotations: { ...rule?.annotations, summary: c.summary },
                },
              ],
            },
          ],
        },
        {
          name: `${c.alert} stays quiet`,
          interval: "1m",
          input_series: c.series.flatMap(([s, , quiet]) => (quiet ? [{ series: s, values: quiet }] : [])),
          alert_rule_test: [{ eval_time: c.at, alertname: c.alert, exp_alerts: [] }],
        },
      ];
    });
    writeFileSync(
      join(dir, "tests.yml"),
      stringify({ rule_files: ["rules.yml"], evaluation_interval: "1m", tests }),
    );
    const run = promtool(["test", "rules", "tests.yml"], { cwd: dir });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("SUCCESS");
  });
});

describe("a real Prometheus scraping a running manager", () => {
  let plane: ControlPlane;
  let client: Client;
  beforeAll(async () => ({ plane, client } = await startPlane()));
  afterAll(() => stopPlane(plane, client));

  it("scrapes /metrics over HTTPS with its bearer token, and a failing reconciler makes the error alert go pending", async () => {
    const namespace = "monitoring";
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    for (const role of metricsRoles(OPERATOR))
      await client.apply(role as KubeObject, { fieldManager: "test" });
    await client.create({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "prometheus", namespace },
    });
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "prometheus-metrics-reader" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: metricsReaderRole(OPERATOR),
      },
      subjects: [{ kind: "ServiceAccount", name: "prometheus", namespace }],
    });
    const { body } = await client.transport.request({
      method: "POST",
      path: `/api/v1/namespaces/${namespace}/serviceaccounts/prometheus/token`,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: 3600 },
      },
    });
    const token = (body as { status: { token: string } }).status.token;

    let failing = false;
    const manager = new Manager({
      client,
      logger: pino({ level: "silent" }),
      probes: false,
      metrics: { port: 0, host: "127.0.0.1", secure: true },
      handleSignals: false,
    });
    manager.add(
      controller(ConfigMap)
        .named("configs")
        .inNamespace(namespace)
        .reconcile(() => {
          if (failing) throw new Error("the backend is down");
        }),
    );
    const running = manager.start();
    let prometheus: PrometheusServer | undefined;
    try {
      await manager.ready;
      prometheus = await new PrometheusServer({
        scrapeConfigs: [
          {
            job_name: job.job,
            scheme: "https",
            tls_config: { insecure_skip_verify: true }, // the manager's self-signed certificate
            authorization: { type: "Bearer", credentials: token },
            static_configs: [{ targets: [`127.0.0.1:${manager.ports.metrics}`] }],
          },
        ],
        ruleGroups: alertRules(OPERATOR),
      }).start();
      const server = prometheus;
      await until(
        async () => (await server.query(`up{job="${job.job}"} == 1`)).length === 1,
        30_000,
        "a successful scrape",
      );
      await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "fine", namespace } });
      await until(
        async () =>
          (
            await server.query(
              `controller_runtime_reconcile_total{controller="configs",result="success"} > 0`,
            )
          ).length === 1,
        30_000,
        "a successful reconcile to be scraped",
      );
      expect(await server.alerts()).toEqual([]);

      failing = true;
      await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "broken", namespace } });
      await until(
        async () =>
          (await server.alerts()).some(
            (a) => a.labels.alertname === "KubeloopReconcileErrorsHigh" && a.labels.controller === "configs",
          ),
        60_000,
        "KubeloopReconcileErrorsHigh to go pending",
      );
      const alert = (await server.alerts()).find((a) => a.labels.alertname === "KubeloopReconcileErrorsHigh");
      expect(alert?.state).toBe("pending"); // `for: 10m` has not passed
      expect(alert?.annotations.summary).toMatch(
        /^op: controller configs fails \d+(\.\d+)?% of its reconciles$/,
      );

      // Every query of the dashboard is valid PromQL, and its panels have data from this manager
      // (except the leader panel: no election here; and API requests: they are counted by the
      // client a manager makes itself, and this one was given the test's).
      const panels = (dashboard(OPERATOR) as { panels: { title: string; targets: { expr: string }[] }[] })
        .panels;
      for (const panel of panels) {
        const results = await Promise.all(
          panel.targets.map((target) => server.query(target.expr.replaceAll("$__rate_interval", "1m"))),
        );
        if (!["Leader and watches", "API requests per second"].includes(panel.title))
          expect(results.flat().length, `panel "${panel.title}" has data`).toBeGreaterThan(0);
      }
    } finally {
      await prometheus?.stop();
      await manager.stop();
      await running;
    }
  });
});
