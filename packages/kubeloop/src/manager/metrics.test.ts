import { register as globalRegistry } from "prom-client";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../queue/clock.js";
import { LOW_PRIORITY, WorkQueue } from "../queue/queue.js";
import { RECONCILE_TIME_BUCKETS, WORKQUEUE_DURATION_BUCKETS } from "./metric-series.js";
import { Metrics } from "./metrics.js";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the exposition text into samples (comments skipped). */
function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key as string] = value as string;
    }
    out.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return out;
}

/** The value of the one sample of `name` whose labels include `labels`; undefined if none. */
function seriesValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(text).filter(
    (sample) =>
      sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

function quiet(): Metrics {
  return new Metrics({ defaultMetrics: false });
}

describe("Metrics: controller", () => {
  it("starts every series of a new controller at zero, as controller-runtime does", async () => {
    const metrics = quiet();
    metrics.controller("nginx").maxConcurrent(2);
    const text = await metrics.text();
    for (const result of ["success", "error", "requeue", "requeue_after"]) {
      expect(seriesValue(text, "controller_runtime_reconcile_total", { controller: "nginx", result })).toBe(
        0,
      );
    }
    for (const name of [
      "controller_runtime_reconcile_errors_total",
      "controller_runtime_terminal_reconcile_errors_total",
      "controller_runtime_reconcile_panics_total",
      "controller_runtime_reconcile_timeouts_total",
      "controller_runtime_active_workers",
    ]) {
      expect(seriesValue(text, name, { controller: "nginx" }), name).toBe(0);
    }
    expect(seriesValue(text, "controller_runtime_max_concurrent_reconciles", { controller: "nginx" })).toBe(
      2,
    );
  });

  it("counts each outcome under controller-runtime's result labels, errors and terminal errors apart", async () => {
    const metrics = quiet();
    const nginx = metrics.controller("nginx");
    nginx.reconciled("success", 0.01);
    nginx.reconciled("success", 0.02);
    nginx.reconciled("requeue", 0.01);
    nginx.reconciled("requeue_after", 0.01);
    nginx.reconciled("error", 0.5);
    nginx.reconciled("terminal_error", 0.5);
    nginx.panicked();
    nginx.timedOut();
    const text = await metrics.text();
    const total = (result: string) =>
      seriesValue(text, "controller_runtime_reconcile_total", { controller: "nginx", result });
    expect([total("success"), total("requeue"), total("requeue_after"), total("error")]).toEqual([
      2, 1, 1, 2,
    ]);
    expect(seriesValue(text, "controller_runtime_reconcile_errors_total", { controller: "nginx" })).toBe(2);
    expect(
      seriesValue(text, "controller_runtime_terminal_reconcile_errors_total", { controller: "nginx" }),
    ).toBe(1);
    expect(seriesValue(text, "controller_runtime_reconcile_panics_total", { controller: "nginx" })).toBe(1);
    expect(seriesValue(text, "controller_runtime_reconcile_timeouts_total", { controller: "nginx" })).toBe(1);
  });

  it("observes reconcile time in controller-runtime's buckets, 5 ms to 60 s", async () => {
    const metrics = quiet();
    const nginx = metrics.controller("nginx");
    nginx.reconciled("success", 0.004);
    nginx.reconciled("success", 0.3);
    nginx.reconciled("error", 61);
    const text = await metrics.text();
    const bucket = (le: string) =>
      seriesValue(text, "controller_runtime_reconcile_time_seconds_bucket", { controller: "nginx", le });
    expect(RECONCILE_TIME_BUCKETS).toHaveLength(40);
    expect([bucket("0.005"), bucket("0.3"), bucket("60"), bucket("+Inf")]).toEqual([1, 2, 2, 3]);
    expect(
      seriesValue(text, "controller_runtime_reconcile_time_seconds_count", { controller: "nginx" }),
    ).toBe(3);
    expect(
      seriesValue(text, "controller_runtime_reconcile_time_seconds_sum", { controller: "nginx" }),
    ).toBeCloseTo(61.304);
  });

  it("sets active and maximum workers, and keeps controllers apart", async () => {
    const metrics = quiet();
    metrics.controller("a").workers(3);
    metrics.controller("a").maxConcurrent(4);
    metrics.controller("b").workers(1);
    expect(metrics.controller("a")).toBe(metrics.controller("a"));
    const text = await metrics.text();
    expect(seriesValue(text, "controller_runtime_active_workers", { controller: "a" })).toBe(3);
    expect(seriesValue(text, "controller_runtime_max_concurrent_reconciles", { controller: "a" })).toBe(4);
    expect(seriesValue(text, "controller_runtime_active_workers", { controller: "b" })).toBe(1);
  });
});

describe("Metrics: workqueue", () => {
  it("shows a fresh queue like client-go: zero adds and retries, empty histograms, depth 0", async () => {
    const metrics = quiet();
    metrics.workqueue("nginx");
    const text = await metrics.text();
    const labels = { name: "nginx", controller: "nginx" };
    expect(seriesValue(text, "workqueue_adds_total", labels)).toBe(0);
    expect(seriesValue(text, "workqueue_retries_total", labels)).toBe(0);
    expect(seriesValue(text, "workqueue_depth", { ...labels, priority: "0" })).toBe(0);
    expect(seriesValue(text, "workqueue_queue_duration_seconds_count", labels)).toBe(0);
    expect(seriesValue(text, "workqueue_work_duration_seconds_count", labels)).toBe(0);
  });

  it("maps a real queue's hooks: adds, depth per priority, queue and work durations, retries", async () => {
    const metrics = quiet();
    const clock = new FakeClock();
    const hooks = metrics.workqueue("nginx");
    const queue = new WorkQueue<string>({ clock, metrics: hooks });
    queue.add("default/a");
    queue.add("default/a"); // collapses: not an add
    queue.add("default/b", LOW_PRIORITY);
    queue.addAfter("default/c", 1_000); // a retry; an add only when its delay ends
    let text = await metrics.text();
    const labels = { name: "nginx", controller: "nginx" };
    expect(seriesValue(text, "workqueue_adds_total", labels)).toBe(2);
    expect(seriesValue(text, "workqueue_retries_total", labels)).toBe(1);
    expect(seriesValue(text, "workqueue_depth", { ...labels, priority: "0" })).toBe(1);
    expect(seriesValue(text, "workqueue_depth", { ...labels, priority: "-100" })).toBe(1);

    clock.advance(2); // a waited 2 ms
    const key = await queue.get();
    clock.advance(300); // and took 300 ms
    queue.done(key as string);
    text = await metrics.text();
    expect(seriesValue(text, "workqueue_depth", { ...labels, priority: "0" })).toBe(0);
    expect(seriesValue(text, "workqueue_queue_duration_seconds_count", labels)).toBe(1);
    expect(seriesValue(text, "workqueue_queue_duration_seconds_sum", labels)).toBeCloseTo(0.002);
    expect(seriesValue(text, "workqueue_queue_duration_seconds_bucket", { ...labels, le: "0.001" })).toBe(0);
    expect(seriesValue(text, "workqueue_queue_duration_seconds_bucket", { ...labels, le: "0.01" })).toBe(1);
    expect(seriesValue(text, "workqueue_work_duration_seconds_sum", labels)).toBeCloseTo(0.3);
    expect(seriesValue(text, "workqueue_work_duration_seconds_bucket", { ...labels, le: "0.1" })).toBe(0);
    expect(seriesValue(text, "workqueue_work_duration_seconds_bucket", { ...labels, le: "1" })).toBe(1);

    clock.advance(1_000); // c's delay ends: now an add
    text = await metrics.text();
    expect(seriesValue(text, "workqueue_adds_total", labels)).toBe(3);
    queue.shutDown();
  });

  it("uses client-go's ExponentialBuckets(10e-9, 10, 12) for both durations", async () => {
    expect(WORKQUEUE_DURATION_BUCKETS).toHaveLength(12);
    expect(WORKQUEUE_DURATION_BUCKETS[0]).toBe(1e-8);
    expect(WORKQUEUE_DURATION_BUCKETS[11]).toBeCloseTo(1000);
    const metrics = quiet();
    metrics.workqueue("q");
    const text = await metrics.text();
    const les = samples(text)
      .filter((sample) => sample.name === "workqueue_work_duration_seconds_bucket")
      .map((sample) => (sample.labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(sample.labels.le)));
    expect(les).toEqual([...WORKQUEUE_DURATION_BUCKETS, Number.POSITIVE_INFINITY]);
  });

  it("reads the in-flight gauges from the observed queue when scraped, and drops them when it stops", async () => {
    const metrics = quiet();
    const clock = new FakeClock();
    const hooks = metrics.workqueue("nginx");
    const queue = new WorkQueue<string>({ clock, metrics: hooks });
    const stop = hooks.observe(queue);
    queue.add("a");
    queue.add("b");
    await queue.get();
    clock.advance(2_000);
    await queue.get();
    clock.advance(500);
    const labels = { name: "nginx", controller: "nginx" };
    let text = await metrics.text();
    expect(seriesValue(text, "workqueue_unfinished_work_seconds", labels)).toBeCloseTo(3); // 2.5 + 0.5
    expect(seriesValue(text, "workqueue_longest_running_processor_seconds", labels)).toBeCloseTo(2.5);
    clock.advance(1_000);
    text = await metrics.text();
    expect(seriesValue(text, "workqueue_longest_running_processor_seconds", labels)).toBeCloseTo(3.5);
    stop();
    text = await metrics.text();
    expect(seriesValue(text, "workqueue_unfinished_work_seconds", labels)).toBeUndefined();
    expect(seriesValue(text, "workqueue_longest_running_processor_seconds", labels)).toBeUndefined();
    queue.shutDown();
  });
});

describe("Metrics: REST client and leader election", () => {
  it("counts requests by code, method and host; watches as GET, as client-go reports them", async () => {
    const metrics = quiet();
    const onResponse = metrics.restClient("https://10.0.0.1:6443");
    onResponse({ method: "GET", code: 200, durationMs: 3 });
    onResponse({ method: "GET", code: 200, durationMs: 4 });
    onResponse({ method: "PUT", code: 409, durationMs: 5 });
    onResponse({ method: "WATCH", code: 200, durationMs: 0 });
    onResponse({ method: "PATCH", code: 429, durationMs: 1 });
    const text = await metrics.text();
    const count = (code: string, method: string) =>
      seriesValue(text, "rest_client_requests_total", { code, method, host: "10.0.0.1:6443" });
    expect([count("200", "GET"), count("409", "PUT"), count("429", "PATCH")]).toEqual([3, 1, 1]);
    expect(seriesValue(text, "rest_client_requests_total", { method: "WATCH" })).toBeUndefined();
    metrics.restClient("api.example.com:443")({ method: "GET", code: 404, durationMs: 1 });
    expect(
      seriesValue(await metrics.text(), "rest_client_requests_total", {
        code: "404",
        host: "api.example.com:443",
      }),
    ).toBe(1);
  });

  it("reports leader_election_master_status 1 while leading and 0 otherwise, per lease name", async () => {
    const metrics = quiet();
    const election = metrics.leaderElection("nginx-operator");
    expect(
      seriesValue(await metrics.text(), "leader_election_master_status", { name: "nginx-operator" }),
    ).toBe(0);
    election.set(true);
    election.slowpath();
    let text = await metrics.text();
    expect(seriesValue(text, "leader_election_master_status", { name: "nginx-operator" })).toBe(1);
    expect(seriesValue(text, "leader_election_slowpath_total", { name: "nginx-operator" })).toBe(1);
    election.set(false);
    text = await metrics.text();
    expect(seriesValue(text, "leader_election_master_status", { name: "nginx-operator" })).toBe(0);
  });
});

describe("Metrics: registry", () => {
  it("serves the Prometheus text format with HELP and TYPE lines", async () => {
    const metrics = quiet();
    metrics.controller("nginx");
    expect(metrics.contentType).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await metrics.text();
    expect(text).toContain(
      "# HELP controller_runtime_reconcile_total Total number of reconciliations per controller",
    );
    expect(text).toContain("# TYPE controller_runtime_reconcile_total counter");
    expect(text).toContain("# TYPE controller_runtime_reconcile_time_seconds histogram");
    expect(text).toContain("# TYPE workqueue_depth gauge");
  });

  it("includes prom-client's process and Node.js metrics by default", async () => {
    const metrics = new Metrics();
    // prom-client counts CPU from when the collector was made: spend some before reading it.
    const until = performance.now() + 30;
    while (performance.now() < until) JSON.stringify({ burn: Math.random() });
    const text = await metrics.text();
    expect(seriesValue(text, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(seriesValue(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(text).toContain("nodejs_heap_size_used_bytes");
    expect(await quiet().text()).not.toContain("process_cpu_user_seconds_total");
  });

  it("keeps a registry of its own: two instances never clash, and the global registry stays untouched", async () => {
    const before = await globalRegistry.metrics();
    const a = quiet();
    const b = quiet();
    a.controller("same").reconciled("success", 0.1);
    b.controller("same").reconciled("error", 0.1);
    expect(seriesValue(await a.text(), "controller_runtime_reconcile_total", { result: "success" })).toBe(1);
    expect(seriesValue(await b.text(), "controller_runtime_reconcile_total", { result: "success" })).toBe(0);
    expect(await globalRegistry.metrics()).toBe(before);
  });
});
