import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "kubeloop";
import { Deployment } from "kubeloop/k8s";
import { ControlPlane, installPrometheusAdapter, PrometheusServer } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Nginx } from "../src/resources.ts";
import { type Sample, SpanJournal } from "./autopilot.ts";
import { buildImage, type Cluster, cli, cluster, NS } from "./cluster.ts";
import { root } from "./operator.ts";

// The operator scaling itself: the nginx operator, sharded (`"sharding": "1-3"` in its project),
// runs as pods; Prometheus (a process here) scrapes their /metrics; prometheus-adapter (a pod)
// serves the custom-metrics API from it with the rule `kubeloop generate --autoscale reconciles`
// writes; the generated HorizontalPodAutoscaler scales the operator on its own work rate. Under
// churn it must scale up, after it down, and through both handovers lose no update and never
// reconcile an object in two replicas at once (checked on the replicas' reconcile spans).
//
// `npm run chaos -- --real-pods --autopilot` runs it: AUTOPILOT_SAMPLES (the JSON file for
// bench/chaos/plot-autopilot.mjs; without it the file is skipped), AUTOPILOT_OBJECTS,
// AUTOPILOT_RATE (spec changes a second), AUTOPILOT_HOLD_S (load held after the scale-up) and
// AUTOPILOT_TARGET (the HPA's reconciles a second per pod).

const IMAGE = "kubeloop.local/nginx-operator:autopilot";
const OBJECTS = Number(process.env.AUTOPILOT_OBJECTS ?? "100");
const RATE = Number(process.env.AUTOPILOT_RATE ?? "6");
const HOLD_S = Number(process.env.AUTOPILOT_HOLD_S ?? "30");
/** Reconciles a second per pod the HPA aims at: below what one replica manages on a busy machine. */
const TARGET = Number(process.env.AUTOPILOT_TARGET ?? "3");
const MAX = 3;
const WRITERS = 5;

let plane: ControlPlane;
let c: Cluster;
let work: string;
let project: string;
let prometheus: PrometheusServer;
let journal: SpanJournal;
let client: Client;
let ready = false;
const samples: Sample[] = [];

const k = (args: string[], input?: string) => c.k(args, input);
const jsonpath = (args: string[], path: string) => c.jsonpath(args, path);

// Several minutes, and on a busy 2-core machine the operator's own starvation shows (see
// docs/reliability.md): run by `npm run chaos -- --real-pods --autopilot` through its own vitest
// config; npm test's config leaves this file out.
describe("the nginx operator autoscaled on its own series", () => {
  beforeAll(async () => {
    work = mkdtempSync(join(root, ".autopilot-"));
    const tarball = join(work, "operator.tar");
    // The project as its user would set it: sharded, autoscaled on its work rate.
    project = join(work, "project");
    cpSync(join(root, "src"), join(project, "src"), { recursive: true });
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    pkg.kubeloop = { ...pkg.kubeloop, sharding: `1-${MAX}`, autoscale: `reconciles=${TARGET}` };
    writeFileSync(join(project, "package.json"), JSON.stringify(pkg, null, 2));
    [plane] = await Promise.all([
      new ControlPlane({ profile: "node", nodes: 2 }).start(),
      buildImage(root, tarball, IMAGE),
    ]);
    c = cluster(plane);
    expect(await plane.loadImage(tarball)).toContain(IMAGE);
  }, 600_000);
  afterAll(async () => {
    // A failed run's samples are kept too, to see where it went wrong.
    const file = process.env.AUTOPILOT_SAMPLES;
    if (file && samples.length && !existsSync(file))
      writeFileSync(
        file,
        JSON.stringify({ objects: OBJECTS, rate: RATE, target: TARGET, failed: true, samples }),
      );
    stopSampling = true;
    await discovery;
    await client?.close();
    await prometheus?.stop();
    await journal?.stop();
    await plane?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The host's address on the plane's bridge, where pods reach processes of this machine. */
  const hostAddress = () => plane.registry.split(":")[0] ?? "";

  it("deploys sharded, with Prometheus scraping its pods and prometheus-adapter serving the metric", async () => {
    journal = await new SpanJournal(hostAddress()).start();
    // deploy regenerates config/ from the project's package.json: the HPA and the adapter rule.
    const deployed = spawnSync(process.execPath, [cli, "deploy", "--image", IMAGE], {
      cwd: project,
      env: { ...process.env, KUBECONFIG: plane.kubeconfigPath },
      encoding: "utf8",
      timeout: 240_000,
    });
    expect(deployed.status, deployed.stdout + deployed.stderr).toBe(0);
    const rules = parse(
      readFileSync(join(project, "config/prometheus/adapter-rules.yaml"), "utf8").replace(/^#.*\n/, ""),
    );
    const adapterConfig = parse(rules.data["config.yaml"]) as { rules: object[] };
    // For the test: traces to the journal, pods named in them; probes that allow 5 s (the
    // default 1 s fails on this shared machine under a load average of 30, and the kubelet then
    // restarts a busy replica); and the HPA's scale-down window at 0 (default 300 s; one pod per
    // 15 s, not the generated 60 s) so the run fits in minutes.
    const probe = { timeoutSeconds: 5, failureThreshold: 6 };
    const manager = {
      name: "manager",
      env: [
        { name: "OTEL_EXPORTER_OTLP_ENDPOINT", value: journal.endpoint },
        { name: "OTEL_BSP_SCHEDULE_DELAY", value: "500" },
        // Its own copy of the pod's name: the patch puts these before the Deployment's POD_NAME,
        // and $(…) only sees variables defined earlier in the list.
        { name: "OTEL_POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "OTEL_RESOURCE_ATTRIBUTES", value: "k8s.pod.name=$(OTEL_POD_NAME)" },
      ],
      livenessProbe: probe,
      readinessProbe: probe,
    };
    const env = await k([
      "-n",
      NS,
      "patch",
      "deployment",
      "nginx-operator",
      "-p",
      JSON.stringify({ spec: { template: { spec: { containers: [manager] } } } }),
    ]);
    expect(env.code, env.stderr).toBe(0);
    const behavior = await k([
      "-n",
      NS,
      "patch",
      "hpa",
      "nginx-operator",
      "--type=merge",
      "-p",
      JSON.stringify({
        spec: {
          behavior: {
            scaleDown: {
              stabilizationWindowSeconds: 0,
              policies: [{ type: "Pods", value: 1, periodSeconds: 15 }],
            },
          },
        },
      }),
    ]);
    expect(behavior.code, behavior.stderr).toBe(0);
    const rolled = await k(["-n", NS, "rollout", "status", "deployment/nginx-operator", "--timeout=180s"]);
    expect(rolled.code, rolled.stderr).toBe(0);

    // Prometheus scrapes the operator's pods over HTTPS with a token bound to the metrics reader role.
    const reader = `apiVersion: v1
kind: ServiceAccount
metadata: { name: prometheus, namespace: ${NS} }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: prometheus-nginx-operator-metrics }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nginx-operator-metrics-reader }
subjects: [{ kind: ServiceAccount, name: prometheus, namespace: ${NS} }]
`;
    expect((await k(["apply", "-f", "-"], reader)).code).toBe(0);
    const token = join(work, "token");
    writeFileSync(
      token,
      (await k(["-n", NS, "create", "token", "prometheus", "--duration=2h"])).stdout.trim(),
    );
    const targets = join(work, "targets.json");
    await discoverOperatorPods(targets);
    discovery = (async () => {
      while (!stopSampling) {
        await discoverOperatorPods(targets).catch(() => {});
        await sleep(2000);
      }
    })();
    prometheus = await new PrometheusServer({
      host: hostAddress(),
      scrapeInterval: "2s",
      scrapeConfigs: [
        {
          job_name: "nginx-operator",
          scheme: "https",
          tls_config: { insecure_skip_verify: true }, // the manager's self-signed metrics certificate
          authorization: { credentials_file: token },
          // Debian's Prometheus is built without Kubernetes discovery: the test discovers the
          // operator's pods itself and writes them where file discovery reads them.
          file_sd_configs: [{ files: [targets], refresh_interval: "2s" }],
        },
      ],
    }).start();
    await c
      .wait(
        async () => (await prometheus.targets()).some((t) => t.health === "up"),
        60_000,
        "Prometheus to scrape an operator pod",
      )
      .catch(async (error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(await prometheus.targets())}`);
      });
    await installPrometheusAdapter(plane, { prometheusUrl: prometheus.url, rules: adapterConfig.rules });
    await c.wait(
      async () =>
        (await jsonpath(
          ["-n", NS, "get", "hpa", "nginx-operator"],
          "{.status.currentMetrics[0].pods.current.averageValue}",
        )) !== "",
      180_000,
      "the HPA to read reconciles_per_second through the custom-metrics API",
    );
    client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
    ready = true;
  }, 420_000);

  it("scales up under churn and down after it, losing no update and never reconciling an object twice at once", async () => {
    expect(ready, "the pipeline above is not up").toBe(true);
    expect((await k(["create", "namespace", "load"])).code).toBe(0);
    const names = Array.from({ length: OBJECTS }, (_, i) => `web-${i}`);
    const items = names.map((name) => ({
      apiVersion: "proxy.example.com/v1",
      kind: "Nginx",
      metadata: { name, namespace: "load" },
      spec: { replicas: 0, image: "docker.io/library/nginx:1.0" },
    }));
    expect(
      (await k(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }))).code,
    ).toBe(0);
    const began = Date.now();
    const sinceBegan = (ns: bigint) => Number(ns / 1_000_000n) - began;
    let phase = "created";
    const sampler = sample(began, () => phase);

    // Churn: RATE spec changes a second by WRITERS writers, each over its own share of the
    // objects (so the last image written to each is well defined); a write waits for the API
    // server and the webhooks, so one writer alone would fall behind the rate.
    const written = new Map<string, string>();
    let churning = true;
    let version = 1;
    const write = async (name: string) => {
      const image = `docker.io/library/nginx:1.${version++}`;
      // A webhook call to a pod that is going away (or restarting) can fail a write: it is then not stored, and
      // written again, as a user's client would.
      for (let attempt = 0; ; attempt++) {
        try {
          await client.patch(Nginx, name, { spec: { image } }, { namespace: "load" });
          break;
        } catch (error) {
          // While every replica restarts, the webhooks have no endpoint for a while.
          if (attempt >= 180) throw error;
          await sleep(500);
        }
      }
      written.set(name, image);
    };
    const churn = Promise.all(
      Array.from({ length: WRITERS }, async (_, writer) => {
        const mine = names.filter((_, i) => i % WRITERS === writer);
        for (let i = 0; churning; i++) {
          const tick = Date.now();
          await write(mine[i % mine.length] ?? "");
          await sleep(Math.max(0, (1000 * WRITERS) / RATE - (Date.now() - tick)));
        }
      }),
    );
    phase = "churn";
    // The HPA's decision (the Deployment's replicas) and the pods Ready: a replica that restarts
    // (see docs/reliability.md) is not Ready for a while, which is not the HPA scaling down.
    const replicas = async () => {
      const [wanted, ready] = (
        await jsonpath(
          ["-n", NS, "get", "deployment", "nginx-operator"],
          "{.spec.replicas} {.status.readyReplicas}",
        )
      ).split(" ");
      return Math.min(Number(wanted || 0), Number(ready || 0));
    };
    const scaledTo = async () =>
      Number((await jsonpath(["-n", NS, "get", "deployment", "nginx-operator"], "{.spec.replicas}")) || 0);
    await c.wait(async () => (await replicas()) >= 2, 240_000, "the HPA to scale the operator up");
    const upAfterMs = Date.now() - began;
    await c
      .wait(async () => (await replicas()) === MAX, 120_000, `the operator at ${MAX} replicas`)
      .catch(() => {});
    await sleep(HOLD_S * 1000);
    const peak = await scaledTo();
    churning = false;
    await churn;
    phase = "quiet";
    const quietAt = Date.now();
    await c.wait(
      async () => (await scaledTo()) === 1 && (await replicas()) === 1,
      // The backlog drains first: on a busy machine a replica reconciles a few objects a second.
      480_000,
      "the HPA to scale the operator back to 1",
    );
    const downAfterMs = Date.now() - quietAt;
    phase = "done";

    // No lost update: every Nginx's Deployment runs the last image written to it.
    const lagging = async () => {
      const deployments = await client.list(Deployment, { namespace: "load" });
      const image = new Map(
        deployments.items.map((d) => [d.metadata?.name ?? "", d.spec?.template.spec?.containers[0]?.image]),
      );
      return names.filter((name) => image.get(name) !== (written.get(name) ?? "docker.io/library/nginx:1.0"));
    };
    await c
      .wait(
        async () => (await lagging()).length === 0,
        60_000,
        "every Deployment to carry its Nginx's last image",
      )
      .catch(() => {});
    await sleep(3000); // the last spans' batch
    stopSampling = true;
    await sampler;
    const lost = await lagging();
    const overlaps = journal.overlaps();
    const pods = journal.podsThatReconciled();
    const file = process.env.AUTOPILOT_SAMPLES;
    if (file)
      writeFileSync(
        file,
        JSON.stringify(
          {
            objects: OBJECTS,
            rate: RATE,
            target: TARGET,
            upAfterMs,
            downAfterMs,
            peak,
            lost: lost.length,
            overlaps: overlaps.length,
            // Each overlap: the object, both reconciles' pods, and their times in ms since the churn began.
            overlapping: overlaps.map(([a, b]) => ({
              controller: a.controller,
              key: a.key,
              first: { pod: a.pod, fromMs: sinceBegan(a.start), toMs: sinceBegan(a.end) },
              second: { pod: b.pod, fromMs: sinceBegan(b.start), toMs: sinceBegan(b.end) },
            })),
            reconciles: journal.reconciles.length,
            pods: Object.fromEntries(pods),
            samples,
          },
          null,
          1,
        ),
      );
    console.log(
      `autopilot: ${OBJECTS} Nginx, ${RATE} changes/s; ≥2 replicas ${(upAfterMs / 1000).toFixed(0)} s after the churn began, peak ${peak}, back to 1 ${(downAfterMs / 1000).toFixed(0)} s after it ended; ${journal.reconciles.length} reconciles by ${pods.size} pods, ${overlaps.length} overlapping, ${lost.length} lost updates`,
    );
    expect(lost, "Nginx whose last change never reached its Deployment").toEqual([]);
    expect(overlaps.map(([a, b]) => `${a.key} by ${a.pod} and ${b.pod}`)).toEqual([]);
    expect(pods.size, "pods that reconciled").toBeGreaterThanOrEqual(2);
  }, 1_200_000);
});

let stopSampling = false;
let discovery: Promise<void> | undefined;

/** The operator's pods as Prometheus file-discovery targets: their metrics port, namespace and name. */
async function discoverOperatorPods(file: string): Promise<void> {
  const pods = await jsonpath(
    ["-n", NS, "get", "pods", "-l", "app.kubernetes.io/name=nginx-operator"],
    '{range .items[*]}{.metadata.name} {.status.podIP}{"\\n"}{end}',
  );
  const groups = pods
    .trim()
    .split("\n")
    .map((line) => line.split(" "))
    .filter(([, ip]) => ip)
    .map(([pod, ip]) => ({ targets: [`${ip}:8443`], labels: { namespace: NS, pod } }));
  writeFileSync(`${file}.tmp`, JSON.stringify(groups));
  renameSync(`${file}.tmp`, file);
}

/** Samples the run every 2 s until `stopSampling`: replicas, the HPA's reading, queue and latency. */
async function sample(began: number, phase: () => string): Promise<void> {
  const scalar = async (expr: string) => {
    const [first] = await prometheus.query(expr).catch(() => []);
    const value = first ? Number(first.value[1]) : Number.NaN;
    return Number.isFinite(value) ? value : null;
  };
  const job = `namespace="${NS}"`;
  while (!stopSampling) {
    const hpa = await jsonpath(
      ["-n", NS, "get", "hpa", "nginx-operator"],
      "{.status.currentReplicas} {.status.desiredReplicas} {.status.currentMetrics[0].pods.current.averageValue}",
    );
    const [current, desired, metric] = hpa.split(" ");
    const ready = await jsonpath(
      ["-n", NS, "get", "deployment", "nginx-operator"],
      "{.status.readyReplicas}",
    );
    samples.push({
      t: Math.round((Date.now() - began) / 100) / 10,
      phase: phase(),
      replicas: Number(ready || current || 0),
      desired: Number(desired || 0),
      metric: metric ? quantity(metric) : null,
      queueDepth: await scalar(`sum(workqueue_depth{${job}})`),
      reconcileP90Ms: await scalar(
        `1000 * histogram_quantile(0.9, sum(rate(controller_runtime_reconcile_time_seconds_bucket{${job}}[15s])) by (le))`,
      ),
      queueWaitP90Ms: await scalar(
        `1000 * histogram_quantile(0.9, sum(rate(workqueue_queue_duration_seconds_bucket{${job}}[15s])) by (le))`,
      ),
      reconcileRate: await scalar(`sum(rate(controller_runtime_reconcile_total{${job}}[15s]))`),
    });
    await sleep(2000);
  }
}

/** `"12500m"` → 12.5. */
function quantity(text: string): number {
  return text.endsWith("m") ? Number(text.slice(0, -1)) / 1000 : Number(text);
}
