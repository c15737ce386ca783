// The Widget operator with kubeloop, written as the framework's docs suggest: a controller over
// Widget that owns ConfigMaps (both cached), a generation predicate, ctx.apply (server-side apply
// with the Widget as controller owner) when the cached ConfigMap differs, ctx.status for
// observedGeneration and the Ready condition. Run with Node 24 directly (types are stripped).
// Env: KUBECONFIG, CONCURRENCY (default 4), EXPECT (print PASS after that many reconciles),
// KEEP_MANAGED_FIELDS, FAIRNESS (off: FIFO within a priority), TRACE_PREFIX (print TRACE lines with
// wall-clock times for the Widgets of namespaces starting with it: bench/fairness.mjs's breakdown),
// SKIP_PREFIX (reconcile nothing in namespaces starting with it: bench/fairness.mjs's floor),
// SPARE_WORKERS (fairness's spare workers).
// Prints SYNCED, PASS and STATS lines for the runner (bench/peers.mjs).
import { readFileSync } from "node:fs";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
import { controller, done, generationChanged, Manager } from "kubeloop";
import { ConfigMap } from "kubeloop/k8s";
import { isTrue } from "kubeloop/resources";
import { Widget } from "../widget.ts";

const concurrency = Number(process.env.CONCURRENCY ?? 4);
const expect = Number(process.env.EXPECT ?? 0);
let reconciles = 0;
const tracePrefix = process.env.TRACE_PREFIX;
const skipPrefix = process.env.SKIP_PREFIX;
/** Wall-clock milliseconds, comparable with the bench process's (same host). */
const wall = () => (performance.timeOrigin + performance.now()).toFixed(1);
const traced = (namespace: string | undefined) =>
  tracePrefix !== undefined && namespace?.startsWith(tracePrefix) === true;

function sameData(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const keys = Object.keys(a ?? {});
  return keys.length === Object.keys(b).length && keys.every((key) => a?.[key] === b[key]);
}

const widgets = controller(Widget)
  .named("widget-operator")
  .withPredicates(generationChanged())
  .owns(ConfigMap)
  .concurrency(concurrency)
  // FAIRNESS=off: FIFO within a priority (bench/fairness.mjs compares); default: by namespace.
  // SPARE_WORKERS=n: n workers more than CONCURRENCY, kept for the namespaces other than a busy one.
  .fairness(process.env.FAIRNESS === "off" ? false : { spareWorkers: Number(process.env.SPARE_WORKERS ?? 0) })
  .reconcile(async (widget, ctx) => {
    try {
      if (ctx.deleted) return done();
      if (skipPrefix && ctx.namespace?.startsWith(skipPrefix)) return done();
      const trace = traced(ctx.namespace);
      const generation = widget.metadata?.generation;
      const started = trace ? wall() : "";
      let applied = "-";
      const data = widget.spec.data;
      const cached = ctx.cache.get({ type: ConfigMap, namespace: ctx.namespace, name: ctx.name });
      const owned = cached?.metadata?.ownerReferences?.some(
        (ref) => ref.uid === widget.metadata?.uid && ref.controller,
      );
      if (!cached || !owned || !sameData(cached.data, data)) {
        await ctx.apply({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: ctx.name, namespace: ctx.namespace ?? "" },
          data,
        });
        if (trace) applied = wall();
      }
      const status = widget.status;
      const readyNow =
        status?.observedGeneration === generation &&
        isTrue(status?.conditions, "Ready") &&
        status?.conditions?.find((c) => c.type === "Ready")?.observedGeneration === generation;
      if (!readyNow) await ctx.status({}, { ready: { status: true, reason: "Reconciled" } });
      // reconcile start, ConfigMap applied ("-": unchanged), status written ("-": already Ready)
      if (trace)
        console.log(
          `TRACE reconcile ${ctx.namespace} ${generation} ${started} ${applied} ${readyNow ? "-" : wall()}`,
        );
      return done();
    } finally {
      if (++reconciles === expect) console.log("PASS");
    }
  });

const manager = new Manager({
  kubeconfig: process.env.KUBECONFIG ?? "",
  metrics: false,
  probes: false,
  // KEEP_MANAGED_FIELDS=1: cache objects as served, managedFields included (what they cost).
  ...(process.env.KEEP_MANAGED_FIELDS ? { cacheTransform: null } : {}),
});
manager.add(widgets);
const running = manager.start();
await manager.ready;
if (tracePrefix !== undefined) {
  // How late the event loop runs its callbacks (a busy or CPU-starved process): every second.
  // And the longest garbage-collection pause in that second (a pause stops the loop too).
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let gcMax = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMax = Math.max(gcMax, entry.duration);
  }).observe({ entryTypes: ["gc"] });
  setInterval(() => {
    const ms = (ns: number) => (ns / 1e6).toFixed(1);
    console.log(
      `TRACE loop ${wall()} ${ms(loop.percentile(50))} ${ms(loop.percentile(99))} ${ms(loop.max)} ${gcMax.toFixed(1)}`,
    );
    loop.reset();
    gcMax = 0;
  }, 1000).unref();
  // The controller's own shared informer (same type and scope): when each traced change reached
  // this process, before it was queued.
  manager.registry.acquire(Widget).informer.on({
    updated: (_old, w) => {
      if (traced(w.metadata?.namespace))
        console.log(`TRACE event ${w.metadata?.namespace} ${w.metadata?.generation} ${wall()}`);
    },
  });
}
console.log("SYNCED");
console.log(`NODE ${process.execArgv.join(" ")}`); // the heap flags it runs with (the launcher's)
let tick = 0;
setInterval(() => {
  // Where the memory goes: V8's spaces (physical), memory outside the heap, and the heap in use.
  const { heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  let breakdown = "";
  // The RSS split costs the kernel a walk of every mapping, counted in the operator's CPU: every
  // fifth line only (the runner keeps the last figures it saw).
  if (tick++ % 5 === 0) {
    const spaces = getHeapSpaceStatistics().map((s) => `${s.space_name}=${s.physical_space_size}`);
    // Anonymous memory (V8's heap, malloc) against file pages (the node binary's code).
    const rollup = readFileSync("/proc/self/smaps_rollup", "utf8");
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(rollup)?.[1] ?? 0) * 1024;
    breakdown = ` anonymous=${kb("Anonymous")} file=${kb("Rss") - kb("Anonymous")} ${spaces.join(" ")}`;
  }
  console.log(
    `STATS reconciles=${reconciles} heap=${heapUsed} heapTotal=${heapTotal} external=${external} arrayBuffers=${arrayBuffers}${breakdown}`,
  );
}, 1000).unref();
await running;
