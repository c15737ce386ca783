import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "kubeloop";
import { Deployment } from "kubeloop/k8s";
import { ControlPlane } from "kubeloop/testing";
import { installPrometheusAdapter, PrometheusServer } from "kubeloop/testing/servers";
import { afterAll, beforeAll, expect } from "vitest";
import { parse } from "yaml";
import { Nginx } from "../src/resources.ts";
import { SpanJournal } from "./autopilot.ts";
import { buildImage, type Cluster, cli, cluster, NS } from "./cluster.ts";
import { root } from "./operator.ts";

// What the autopilot tests share: the nginx operator's project, sharded and autoscaled as its user
// would set it, built by `kubeloop build`, installed by `kubeloop deploy` (so the HPA and the
// prometheus-adapter rule are the generated ones) on a node-profile plane; Prometheus scraping the
// replicas; prometheus-adapter serving the rule; churn on Nginx objects and the lost-update check.

export interface PipelineOptions {
  /** The image `kubeloop build` writes and the plane runs. */
  image: string;
  nodes: number;
  /** The project's `"sharding"` is `1-max`. */
  max: number;
  /** The project's `"autoscale"`, e.g. `reconciles=3`. */
  autoscale: string;
  /** The HPA's scale-down: one pod per this many seconds, no stabilization window (generated: 300 s, 1 pod/60 s). */
  downPeriodSeconds: number;
  /** The readiness probe's period and initial delay (generated: 10 s and 5 s), for a new replica to count sooner. */
  readinessPeriodSeconds?: number;
  /** The generated rule's rate window (`[1m]`) replaced by this one, e.g. `20s`, to follow the load sooner. */
  rateWindow?: string;
}

/** The operator, scraped and autoscaled: {@link AutopilotPipeline.start}, then {@link AutopilotPipeline.deploy}. */
export class AutopilotPipeline {
  plane!: ControlPlane;
  c!: Cluster;
  client!: Client;
  prometheus!: PrometheusServer;
  journal!: SpanJournal;
  /** The scratch folder: the project copy, the image tarball, Prometheus's targets. */
  readonly work = mkdtempSync(join(root, ".autopilot-"));
  readonly project = join(this.work, "project");
  private stopping = false;
  private discovery: Promise<void> | undefined;

  constructor(readonly options: PipelineOptions) {}

  /** Writes the project, builds its image while the plane starts, and loads it. */
  async start(): Promise<this> {
    const { image, nodes, max, autoscale } = this.options;
    const tarball = join(this.work, "operator.tar");
    cpSync(join(root, "src"), join(this.project, "src"), { recursive: true });
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    pkg.kubeloop = { ...pkg.kubeloop, sharding: `1-${max}`, autoscale };
    writeFileSync(join(this.project, "package.json"), JSON.stringify(pkg, null, 2));
    [this.plane] = await Promise.all([
      new ControlPlane({ profile: "node", nodes }).start(),
      buildImage(root, tarball, image),
    ]);
    this.c = cluster(this.plane);
    expect(await this.plane.loadImage(tarball)).toContain(image);
    return this;
  }

  /** The host's address on the plane's bridge, where pods reach processes of this machine. */
  get hostAddress(): string {
    return this.plane.registry.split(":")[0] ?? "";
  }

  /**
   * `kubeloop deploy` with the test's settings, Prometheus on the replicas and prometheus-adapter
   * serving the generated rule; resolves once the HPA reads the metric.
   */
  async deploy(): Promise<void> {
    const { c, options } = this;
    this.journal = await new SpanJournal(this.hostAddress).start();
    // deploy regenerates config/ from the project's package.json: the HPA and the adapter rule.
    const deployed = spawnSync(process.execPath, [cli, "deploy", "--image", options.image], {
      cwd: this.project,
      env: { ...process.env, KUBECONFIG: this.plane.kubeconfigPath },
      encoding: "utf8",
      timeout: 240_000,
    });
    expect(deployed.status, deployed.stdout + deployed.stderr).toBe(0);
    const adapterConfig = this.adapterConfig();
    await this.tuneForTest();
    this.prometheus = await this.startPrometheus();
    const [rolled] = await Promise.all([
      c.k(["-n", NS, "rollout", "status", "deployment/nginx-operator", "--timeout=180s"]),
      installPrometheusAdapter(this.plane, {
        prometheusUrl: this.prometheus.url,
        rules: adapterConfig.rules,
      }),
    ]);
    expect(rolled.code, rolled.stderr).toBe(0);
    await c
      .wait(
        async () => (await this.prometheus.targets()).some((t) => t.health === "up"),
        60_000,
        "Prometheus to scrape an operator pod",
      )
      .catch(async (error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(await this.prometheus.targets())}`);
      });
    await c.wait(
      async () =>
        (await c.jsonpath(
          ["-n", NS, "get", "hpa", "nginx-operator"],
          "{.status.currentMetrics[0].pods.current.averageValue}",
        )) !== "",
      180_000,
      "the HPA to read its metric through the custom-metrics API",
    );
    this.client = await Client.connect({ kubeconfig: this.plane.kubeconfigPath });
  }

  /** The generated prometheus-adapter rules, with the test's rate window when it sets one. */
  private adapterConfig(): { rules: object[] } {
    let rulesText = readFileSync(join(this.project, "config/prometheus/adapter-rules.yaml"), "utf8");
    if (this.options.rateWindow)
      rulesText = rulesText.replace(/\[(1m|2m)\]/g, `[${this.options.rateWindow}]`);
    const rules = parse(rulesText.replace(/^#.*\n/, ""));
    return parse(rules.data["config.yaml"]) as { rules: object[] };
  }

  private async tuneForTest(): Promise<void> {
    const { c, options } = this;
    // For the test: traces to the journal, pods named in them; probes that allow 5 s (the
    // default 1 s fails on this shared machine under a load average of 30, and the kubelet then
    // restarts a busy replica); and the HPA's scale-down window at 0 so the run fits in minutes.
    const probe = { timeoutSeconds: 5, failureThreshold: 6 };
    const manager = {
      name: "manager",
      env: [
        { name: "OTEL_EXPORTER_OTLP_ENDPOINT", value: this.journal.endpoint },
        { name: "OTEL_BSP_SCHEDULE_DELAY", value: "500" },
        // Its own copy of the pod's name: the patch puts these before the Deployment's POD_NAME,
        // and $(…) only sees variables defined earlier in the list.
        { name: "OTEL_POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "OTEL_RESOURCE_ATTRIBUTES", value: "k8s.pod.name=$(OTEL_POD_NAME)" },
      ],
      livenessProbe: probe,
      readinessProbe: options.readinessPeriodSeconds
        ? {
            ...probe,
            periodSeconds: options.readinessPeriodSeconds,
            initialDelaySeconds: options.readinessPeriodSeconds,
          }
        : probe,
    };
    const patch = async (kind: string, body: object, type = "strategic") => {
      const patched = await c.k([
        "-n",
        NS,
        "patch",
        kind,
        "nginx-operator",
        `--type=${type}`,
        "-p",
        JSON.stringify(body),
      ]);
      expect(patched.code, patched.stderr).toBe(0);
    };
    await patch("deployment", { spec: { template: { spec: { containers: [manager] } } } });
    const scaleDown = {
      stabilizationWindowSeconds: 0,
      policies: [{ type: "Pods", value: 1, periodSeconds: options.downPeriodSeconds }],
    };
    await patch("hpa", { spec: { behavior: { scaleDown } } }, "merge");
  }

  /** Prometheus, scraping the operator's pods (found by the test: see discoverOperatorPods). */
  private async startPrometheus(): Promise<PrometheusServer> {
    const { c } = this;
    // Prometheus scrapes the operator's pods over HTTPS with a token bound to the metrics reader
    // role; it and the adapter start while the operator rolls out.
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
    expect((await c.k(["apply", "-f", "-"], reader)).code).toBe(0);
    const token = join(this.work, "token");
    writeFileSync(
      token,
      (await c.k(["-n", NS, "create", "token", "prometheus", "--duration=2h"])).stdout.trim(),
    );
    const targets = join(this.work, "targets.json");
    await this.discoverOperatorPods(targets);
    this.discovery = (async () => {
      while (!this.stopping) {
        await this.discoverOperatorPods(targets).catch(() => {});
        await sleep(2000);
      }
    })();
    return new PrometheusServer({
      host: this.hostAddress,
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
  }

  /** The HPA's decision (the Deployment's replicas). */
  async scaledTo(): Promise<number> {
    return Number(
      (await this.c.jsonpath(["-n", NS, "get", "deployment", "nginx-operator"], "{.spec.replicas}")) || 0,
    );
  }

  /**
   * The replicas both wanted and Ready: a replica that restarts (see docs/reliability.md) is not
   * Ready for a while, which is not the HPA scaling down.
   */
  async replicas(): Promise<number> {
    const [wanted, ready] = (
      await this.c.jsonpath(
        ["-n", NS, "get", "deployment", "nginx-operator"],
        "{.spec.replicas} {.status.readyReplicas}",
      )
    ).split(" ");
    return Math.min(Number(wanted || 0), Number(ready || 0));
  }

  /** Stops discovery, the client, Prometheus, the journal and the plane; removes the scratch folder. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.discovery;
    await this.client?.close();
    await this.prometheus?.stop();
    await this.journal?.stop();
    await this.plane?.stop();
    rmSync(this.work, { recursive: true, force: true });
  }

  /** The operator's pods as Prometheus file-discovery targets: their metrics port, namespace and name. */
  private async discoverOperatorPods(file: string): Promise<void> {
    const pods = await this.c.jsonpath(
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
}

/** A pipeline started and deployed before the enclosing suite's tests, stopped after them. */
export function pipelineFor(options: PipelineOptions): AutopilotPipeline {
  const run = new AutopilotPipeline(options);
  beforeAll(async () => {
    await run.start();
    await run.deploy();
  }, 420_000);
  afterAll(() => run.stop());
  return run;
}

/**
 * `objects` Nginx (0 replicas) in namespace `load`, then churn: `rate` spec changes a second by
 * `writers` writers, each over its own share (so the last image written to each is well
 * defined), until `stop()`; `lagging()` lists the Nginx whose Deployment lacks its last image.
 */
export async function churn(pipeline: AutopilotPipeline, objects: number, rate: number, writers: number) {
  const { c, client } = pipeline;
  expect((await c.k(["create", "namespace", "load"])).code).toBe(0);
  const names = Array.from({ length: objects }, (_, i) => `web-${i}`);
  const items = names.map((name) => ({
    apiVersion: "proxy.example.com/v1",
    kind: "Nginx",
    metadata: { name, namespace: "load" },
    spec: { replicas: 0, image: "docker.io/library/nginx:1.0" },
  }));
  const created = await c.k(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
  expect(created.code, created.stderr).toBe(0);
  const written = new Map<string, string>();
  let churning = true;
  let version = 1;
  const write = async (name: string) => {
    const image = `docker.io/library/nginx:1.${version++}`;
    // A webhook call to a pod that is going away can fail a write: it is then not stored, and
    // written again, as a user's client would; while every replica restarts, for a while.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.patch(Nginx, name, { spec: { image } }, { namespace: "load" });
        break;
      } catch (error) {
        if (attempt >= 180) throw error;
        await sleep(500);
      }
    }
    written.set(name, image);
  };
  // A write waits for the API server and the webhooks, so one writer alone would fall behind.
  const running = Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      const mine = names.filter((_, i) => i % writers === writer);
      for (let i = 0; churning; i++) {
        const tick = Date.now();
        await write(mine[i % mine.length] ?? "");
        await sleep(Math.max(0, (1000 * writers) / rate - (Date.now() - tick)));
      }
    }),
  );
  const lagging = async () => {
    const deployments = await client.list(Deployment, { namespace: "load" });
    const image = new Map(
      deployments.items.map((d) => [d.metadata?.name ?? "", d.spec?.template.spec?.containers[0]?.image]),
    );
    return names.filter((name) => image.get(name) !== (written.get(name) ?? "docker.io/library/nginx:1.0"));
  };
  return {
    names,
    async stop() {
      churning = false;
      await running;
    },
    /** Waits up to `ms` for every Deployment to catch up; the Nginx still lagging then. */
    async lost(ms: number) {
      await c
        .wait(
          async () => (await lagging()).length === 0,
          ms,
          "every Deployment to carry its Nginx's last image",
        )
        .catch(() => {});
      return lagging();
    },
  };
}
