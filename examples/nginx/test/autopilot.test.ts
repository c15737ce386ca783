import { existsSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sample } from "./autopilot.ts";
import { AutopilotPipeline, churn } from "./autopilot-pipeline.ts";
import { NS } from "./cluster.ts";

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

const OBJECTS = Number(process.env.AUTOPILOT_OBJECTS ?? "100");
const RATE = Number(process.env.AUTOPILOT_RATE ?? "6");
const HOLD_S = Number(process.env.AUTOPILOT_HOLD_S ?? "30");
/** Reconciles a second per pod the HPA aims at: below what one replica manages on a busy machine. */
const TARGET = Number(process.env.AUTOPILOT_TARGET ?? "3");
const MAX = 3;
const WRITERS = 5;

// One pod per 15 s on the way down (generated: 1 a minute after a 300 s window); two nodes.
const run = new AutopilotPipeline({
  image: "kubeloop.local/nginx-operator:autopilot",
  nodes: 2,
  max: MAX,
  autoscale: `reconciles=${TARGET}`,
  downPeriodSeconds: 15,
});
let ready = false;
const samples: Sample[] = [];
let stopSampling = false;

// Several minutes, and on a busy 2-core machine the operator's own starvation shows (see
// docs/reliability.md): run by `npm run chaos -- --real-pods --autopilot` through its own vitest
// config; npm test's config leaves this file out (autopilot-short.test.ts is its short form).
describe("the nginx operator autoscaled on its own series", () => {
  beforeAll(async () => {
    await run.start();
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
    await run.stop();
  });

  it("deploys sharded, with Prometheus scraping its pods and prometheus-adapter serving the metric", async () => {
    await run.deploy();
    ready = true;
  }, 420_000);

  it("scales up under churn and down after it, losing no update and never reconciling an object twice at once", async () => {
    expect(ready, "the pipeline above is not up").toBe(true);
    const { c, journal } = run;
    const load = await churn(run, OBJECTS, RATE, WRITERS);
    const began = Date.now();
    const sinceBegan = (ns: bigint) => Number(ns / 1_000_000n) - began;
    let phase = "churn";
    const sampler = sample(began, () => phase);
    await c.wait(async () => (await run.replicas()) >= 2, 240_000, "the HPA to scale the operator up");
    const upAfterMs = Date.now() - began;
    await c
      .wait(async () => (await run.replicas()) === MAX, 120_000, `the operator at ${MAX} replicas`)
      .catch(() => {});
    await sleep(HOLD_S * 1000);
    const peak = await run.scaledTo();
    await load.stop();
    phase = "quiet";
    const quietAt = Date.now();
    await c.wait(
      async () => (await run.scaledTo()) === 1 && (await run.replicas()) === 1,
      // The backlog drains first: on a busy machine a replica reconciles a few objects a second.
      480_000,
      "the HPA to scale the operator back to 1",
    );
    const downAfterMs = Date.now() - quietAt;
    phase = "done";

    // No lost update: every Nginx's Deployment runs the last image written to it.
    const lost = await load.lost(60_000);
    await sleep(3000); // the last spans' batch
    stopSampling = true;
    await sampler;
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

/** Samples the run every 2 s until `stopSampling`: replicas, the HPA's reading, queue and latency. */
async function sample(began: number, phase: () => string): Promise<void> {
  const scalar = async (expr: string) => {
    const [first] = await run.prometheus.query(expr).catch(() => []);
    const value = first ? Number(first.value[1]) : Number.NaN;
    return Number.isFinite(value) ? value : null;
  };
  const job = `namespace="${NS}"`;
  while (!stopSampling) {
    const hpa = await run.c.jsonpath(
      ["-n", NS, "get", "hpa", "nginx-operator"],
      "{.status.currentReplicas} {.status.desiredReplicas} {.status.currentMetrics[0].pods.current.averageValue}",
    );
    const [current, desired, metric] = hpa.split(" ");
    const ready = await run.c.jsonpath(
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
