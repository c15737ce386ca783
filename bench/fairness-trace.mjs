// bench/fairness.mjs's two aids: where a quiet change's wait goes (the operator's TRACE lines
// joined with the bench's own times), and the frameworkless floor (the quiet Widgets made Ready by
// the bench itself, straight from a watch, with no operator, queue or worker in the way).

import { quantile } from "./stats.mjs";

/** Wall-clock milliseconds, comparable with the operator's TRACE times (same host). */
export const wall = () => performance.timeOrigin + performance.now();

/**
 * The operator's TRACE lines (bench/peers/kubeloop/widget-operator.ts with TRACE_PREFIX): when each
 * quiet change reached the operator's informer, and each reconcile's start, ConfigMap apply and
 * status write.
 */
export function parseTrace(lines) {
  const events = new Map(); // "ns/generation" → first time the operator's informer had it
  const reconciles = new Map(); // ns → [{ generation, start, applied, status }]
  const loop = []; // { at, p99, max }: the operator's event-loop delay, each second
  for (const line of lines) {
    const [tag, what, ns, generation, ...times] = line.split(" ");
    if (tag !== "TRACE") continue;
    if (what === "loop")
      loop.push({
        at: Number(ns),
        p99: Number(times[0]),
        max: Number(times[1]),
        gc: Number(times[2] ?? Number.NaN),
      });
    const key = `${ns}/${generation}`;
    if (what === "event" && !events.has(key)) events.set(key, Number(times[0]));
    if (what === "reconcile") {
      const [start, applied, status] = times.map((t) => (t === "-" ? undefined : Number(t)));
      const list = reconciles.get(ns) ?? [];
      list.push({ generation: Number(generation), start, applied, status });
      reconciles.set(ns, list);
    }
  }
  return { events, reconciles, loop };
}

/** The operator's event-loop delay (ms) over the seconds of `phases`: median of the per-second p99s, and the max. */
export function loopDelay(trace, samples, phases) {
  const chosen = samples.filter((s) => phases.includes(s.phase));
  if (chosen.length === 0 || trace.loop.length === 0) return undefined;
  const from = Math.min(...chosen.map((s) => s.at));
  const to = Math.max(...chosen.map((s) => s.at + s.ms));
  const seconds = trace.loop.filter((l) => l.at >= from && l.at <= to + 1000);
  if (seconds.length === 0) return undefined;
  return {
    p99: quantile(
      seconds.map((l) => l.p99),
      0.5,
    ),
    max: Math.max(...seconds.map((l) => l.max)),
    gc: Math.max(...seconds.map((l) => l.gc)),
  };
}

/**
 * One quiet change's wait split in segments (ms): the bench's PATCH, the watch to the operator,
 * the operator's queue (and workers), its ConfigMap apply, its status write, and the watch back to
 * the bench. The reconcile is the first that saw the change's generation and wrote the status.
 */
function segments(sample, trace) {
  const event = trace.events.get(`${sample.ns}/${sample.generation}`);
  const reconcile = (trace.reconciles.get(sample.ns) ?? []).find(
    (r) => r.generation >= sample.generation && r.status !== undefined && r.start >= (event ?? 0),
  );
  if (event === undefined || reconcile === undefined) return undefined;
  const applied = reconcile.applied ?? reconcile.start;
  return {
    patch: sample.written - sample.at,
    toOperator: event - sample.written,
    queue: reconcile.start - event,
    apply: applied - reconcile.start,
    status: reconcile.status - applied,
    toBench: sample.at + sample.ms - reconcile.status,
  };
}

const SEGMENTS = ["patch", "toOperator", "queue", "apply", "status", "toBench"];

/**
 * Per phase: p50 and p99 of each segment, and the mean split of the slowest tenth of the changes
 * (where the p99 comes from). Changes that collapsed into another's reconcile are left out.
 */
export function breakdown(samples, trace, phases) {
  const split = samples
    .filter((s) => phases.includes(s.phase))
    .map((s) => ({ ms: s.ms, parts: segments(s, trace) }))
    .filter((s) => s.parts !== undefined);
  const stats = Object.fromEntries(
    SEGMENTS.map((name) => {
      const values = split.map((s) => s.parts[name]);
      return [name, { p50: quantile(values, 0.5), p99: quantile(values, 0.99) }];
    }),
  );
  const slowest = [...split].sort((a, b) => b.ms - a.ms).slice(0, Math.max(1, Math.ceil(split.length / 10)));
  const tail = Object.fromEntries(
    SEGMENTS.map((name) => [name, slowest.reduce((sum, s) => sum + s.parts[name], 0) / slowest.length]),
  );
  return {
    n: split.length,
    stats,
    tail,
    tailMs: slowest.reduce((sum, s) => sum + s.ms, 0) / slowest.length,
    loop: loopDelay(trace, samples, phases),
  };
}

/** The breakdown as table rows: one per phase, each segment as p50 / p99 and the tail's mean. */
export function breakdownRows(name, results) {
  const ms = (x) => (Number.isFinite(x) ? `${Math.round(x)}` : "–");
  return Object.entries(results).map(
    ([phase, b]) =>
      `| ${name} | ${phase} | ${b.n} | ${SEGMENTS.map((s) => `${ms(b.stats[s].p50)} / ${ms(b.stats[s].p99)} (${ms(b.tail[s])})`).join(" | ")} | ${ms(b.tailMs)} | ${b.loop ? `${ms(b.loop.p99)} / ${ms(b.loop.max)} / ${ms(b.loop.gc)}` : "–"} |`,
  );
}

export const BREAKDOWN_HEADER = [
  "| operator | phase | changes | PATCH | watch → operator | queue | ConfigMap apply | status write | watch → bench | slowest tenth, mean | operator's event-loop delay: p99 (median second) / max, longest GC pause |",
  "|---|---|---|---|---|---|---|---|---|---|---|",
];

/**
 * The floor: what the quiet Widgets' update-to-Ready costs with no framework. The bench reconciles
 * them itself, straight from its own (label-filtered) watch: on a change not yet Ready, the same two
 * writes the Widget operator makes (apply the ConfigMap, patch the status), one reconcile at a time
 * per Widget, no queue and no worker limit. What is left is the API server's (and the machine's).
 */
export class Frameworkless {
  constructor(client, informer, type, ready, phase) {
    this.client = client;
    this.phase = phase; // the phase the bench is in now, to split the write times by
    this.writes = []; // { phase, apply, status }: each reconcile's two writes, ms
    this.informer = informer;
    this.type = type;
    this.ready = ready;
    this.running = new Map(); // ns → a change arrived during its reconcile (run again)
    const changed = (w) => {
      if (!ready(w)) this.kick(w.metadata.namespace);
    };
    informer.on({ added: changed, updated: (_old, w) => changed(w) });
  }

  kick(ns) {
    if (this.running.has(ns)) {
      this.running.set(ns, true);
      return;
    }
    this.running.set(ns, false);
    this.reconcile(ns)
      .catch((error) => console.error(`frameworkless reconcile of ${ns}: ${error.message}`))
      .finally(() => {
        const again = this.running.get(ns);
        this.running.delete(ns);
        if (again) this.kick(ns);
      });
  }

  async reconcile(ns) {
    const widget = this.informer.get("w", ns);
    if (widget === undefined || this.ready(widget)) return;
    const generation = widget.metadata.generation;
    const started = performance.now();
    await this.client.apply(
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: "w",
          namespace: ns,
          ownerReferences: [
            {
              apiVersion: this.type.apiVersion,
              kind: this.type.kind,
              name: "w",
              uid: widget.metadata.uid,
              controller: true,
            },
          ],
        },
        data: widget.spec.data,
      },
      { fieldManager: "fairness-floor", force: true },
    );
    const applied = performance.now();
    const condition = { type: "Ready", status: "True", reason: "Reconciled", message: "" };
    await this.client.patch(
      this.type,
      "w",
      {
        status: {
          observedGeneration: generation,
          conditions: [
            { ...condition, observedGeneration: generation, lastTransitionTime: new Date().toISOString() },
          ],
        },
      },
      { namespace: ns, subresource: "status" },
    );
    this.writes.push({ phase: this.phase(), apply: applied - started, status: performance.now() - applied });
  }

  /** The two writes' p50 / p99 over the reconciles of `phases`. */
  writeStats(...phases) {
    const chosen = this.writes.filter((w) => phases.includes(w.phase));
    const stat = (values) => ({ p50: quantile(values, 0.5), p99: quantile(values, 0.99) });
    return {
      n: chosen.length,
      apply: stat(chosen.map((w) => w.apply)),
      status: stat(chosen.map((w) => w.status)),
    };
  }
}
