// One busy tenant against ten quiet ones: does the busy one starve the rest?
// Run: npm run bench:fairness [-- --quick] [-- --only kubeloop-fair,floor-busy] [-- --repeat 3]
// Rows (--only): kubeloop-fair, kubeloop-spare, kubeloop-fifo, controller-runtime, floor, floor-busy;
// --repeat runs the chosen rows that many times, back to back, in turn.
//
// The Widget operator of bench/peers (kubeloop, and controller-runtime with its priority queue, on
// by default since v0.23), 4 workers each, on a fresh API server per row. Ten quiet namespaces
// hold one Widget each and change it once a second; the update-to-Ready latency of every quiet
// change is measured (from just before the PATCH to the watch event that shows Ready at that
// generation or a later one: changes that collapse into one reconcile each count their own wait).
// First without load (the baseline), then while one namespace creates 5,000 Widgets as fast as the
// API server takes them (bench/peers' Go load generator, 32 at a time), until all 5,000 are Ready.
// The floors: the same quiet changes made Ready by the bench itself, straight from its own watch
// (the two writes the operator makes, no queue, no workers), with no operator during the creates
// (floor) or with kubeloop reconciling the noisy namespace only (floor-busy: the API server as busy
// as in the kubeloop rows). Operator rows print TRACE lines that split each quiet change's wait.
// Writes bench/RESULTS.fairness.md. See docs/performance.md for figures.

import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { cpus, homedir, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Informer } from "kubeloop/cache";
import { Client } from "kubeloop/client";
import { ControlPlane } from "kubeloop/testing";
import {
  BREAKDOWN_HEADER,
  breakdown,
  breakdownRows,
  Frameworkless,
  parseTrace,
  wall,
} from "./fairness-trace.mjs";
import { Widget } from "./peers/widget.ts";
import { quantile } from "./stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    out: { type: "string" },
    repeat: { type: "string", default: "1" },
  },
});
const QUIET = 10;
const NOISY = opts.quick ? 1_000 : 5_000;
const BASELINE_S = opts.quick ? 8 : 20;
const FLOOD_MAX_S = 300; // the flood phase ends when every noisy Widget is Ready, or after this
const CONCURRENCY = 4;
const LOAD_CONCURRENCY = 32;
const loadAverage = () => loadavg()[0].toFixed(1);
const log = (...args) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...args);

// --- builds ------------------------------------------------------------------------------------

function hashTree(dir, exts) {
  const hash = createHash("sha256");
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (exts.some((ext) => name.endsWith(ext)))
        hash.update(path.slice(dir.length)).update(readFileSync(path));
    }
  };
  walk(dir);
  return hash.digest("hex").slice(0, 16);
}

/** bench/peers' Go programs, built once into the peers' cache (the same folder bench:peers uses). */
function buildGo() {
  const goDir = join(here, "peers", "go");
  const cache = process.env.KUBELOOP_PEERS_CACHE ?? join(homedir(), ".cache", "kubeloop", "peers");
  const out = join(cache, `go-${hashTree(goDir, [".go", "go.mod", "go.sum"])}`);
  if (!existsSync(join(out, "loadgen")) || !existsSync(join(out, "controller-runtime"))) {
    log(`building bench/peers/go into ${out} (a few minutes the first time)`);
    mkdirSync(out, { recursive: true });
    for (const program of ["controller-runtime", "loadgen"]) {
      const built = spawnSync("go", ["build", "-o", join(out, program), `./${program}`], {
        cwd: goDir,
        stdio: "inherit",
      });
      if (built.status !== 0) throw new Error(`go build ./${program} failed (Go ≥ 1.24 must be on PATH)`);
    }
  }
  return out;
}

// --- processes ---------------------------------------------------------------------------------

/** A child process; `waitFor(prefix)` resolves on its first stdout line starting with it. */
function start(argv, env) {
  const child = spawn(argv[0], argv.slice(1), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-3000);
  });
  const lines = [];
  let partial = ""; // a line split across two chunks is one line
  child.stdout.setEncoding("utf8").on("data", (chunk) => {
    const split = (partial + chunk).split("\n");
    partial = split.pop() ?? "";
    lines.push(...split);
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  return {
    child,
    exited,
    lines,
    stderr: () => stderr,
    async waitFor(prefix, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      while (!lines.some((line) => line.startsWith(prefix))) {
        if (child.exitCode !== null || performance.now() > deadline)
          throw new Error(`${argv[0]}: no ${prefix} line; stderr: ${stderr}`);
        await sleep(50);
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
}

// --- the quiet tenants -------------------------------------------------------------------------

const ready = (w) =>
  w.status?.observedGeneration === w.metadata?.generation &&
  w.status?.conditions?.some(
    (c) => c.type === "Ready" && c.status === "True" && c.observedGeneration === w.metadata?.generation,
  );

/**
 * Ten Widgets, one per quiet namespace, each changed once a second; every change's wait until a
 * watch event shows the Widget Ready at its generation or later.
 */
class QuietTenants {
  constructor(client, namespaces) {
    this.client = client;
    this.namespaces = namespaces;
    this.pending = new Map(namespaces.map((ns) => [ns, []])); // sends not seen Ready yet
    this.readyGeneration = new Map();
    this.samples = [];
    this.events = new Map(); // "ns/generation" → when this process's watch first had it
    this.informer = new Informer(client, Widget, { labelSelector: "fairness-bench=quiet" });
    const observe = (w) => {
      const key = `${w.metadata.namespace}/${w.metadata.generation}`;
      if (!this.events.has(key)) this.events.set(key, wall());
      if (!ready(w)) return;
      const ns = w.metadata.namespace;
      const generation = w.metadata.generation;
      this.readyGeneration.set(ns, Math.max(this.readyGeneration.get(ns) ?? 0, generation));
      const now = performance.now();
      const left = [];
      for (const send of this.pending.get(ns) ?? []) {
        if (send.generation !== undefined && send.generation <= generation) this.record(send, now);
        else left.push(send);
      }
      this.pending.set(ns, left);
    };
    this.informer.on({ added: observe, updated: (_old, w) => observe(w), deleted: () => {} });
  }

  record(send, now) {
    if (send.phase)
      this.samples.push({
        phase: send.phase,
        ms: now - send.at,
        ns: send.ns,
        generation: send.generation,
        at: send.wallAt,
        written: send.written,
      });
  }

  async create() {
    for (const ns of this.namespaces) {
      await this.client.create({
        apiVersion: Widget.apiVersion,
        kind: Widget.kind,
        metadata: { name: "w", namespace: ns, labels: { "fairness-bench": "quiet" } },
        spec: { replicas: 1, data: { v: "0" } },
      });
    }
    this.informer.start();
    await this.informer.synced;
  }

  /**
   * Each namespace's Widget changed once a second (staggered across the second) while `running()`;
   * `phase()` names the phase each change is counted in.
   */
  async churn(phase, running) {
    this.phase = phase();
    let v = 0;
    const tick = async (ns) => {
      this.phase = phase();
      const send = { at: performance.now(), wallAt: wall(), ns, phase: this.phase, generation: undefined };
      this.pending.get(ns).push(send);
      const written = await this.client.patch(
        Widget,
        "w",
        { spec: { data: { v: String(++v) } } },
        { namespace: ns },
      );
      send.generation = written.metadata.generation;
      send.written = wall();
      // Ready may have been seen before the PATCH's response came back.
      if ((this.readyGeneration.get(ns) ?? 0) >= send.generation) {
        this.pending.set(
          ns,
          this.pending.get(ns).filter((s) => s !== send),
        );
        this.record(send, performance.now());
      }
    };
    const loops = this.namespaces.map(async (ns, i) => {
      await sleep((1000 * i) / this.namespaces.length);
      while (running()) {
        const next = performance.now() + 1000;
        await tick(ns);
        await sleep(Math.max(0, next - performance.now()));
      }
    });
    await Promise.all(loops);
  }

  /** Waits until every change sent has been seen Ready. */
  async settle(timeoutMs) {
    const deadline = performance.now() + timeoutMs;
    while ([...this.pending.values()].some((sends) => sends.length > 0)) {
      if (performance.now() > deadline) throw new Error("quiet Widgets did not become Ready");
      await sleep(100);
    }
  }

  stats(...phases) {
    const chosen = this.samples.filter((s) => phases.includes(s.phase));
    const ms = chosen.map((s) => s.ms);
    // One hop: from just before the PATCH to this process's watch event of that generation.
    const hop = chosen
      .map((s) => (this.events.get(`${s.ns}/${s.generation}`) ?? Number.NaN) - s.at)
      .filter(Number.isFinite);
    return {
      n: ms.length,
      p50: quantile(ms, 0.5),
      p99: quantile(ms, 0.99),
      max: Math.max(...ms),
      hop: { p50: quantile(hop, 0.5), p99: quantile(hop, 0.99) },
    };
  }
}

// --- one row -----------------------------------------------------------------------------------

/**
 * The flood: `loadgen` creates NOISY Widgets in one namespace; resolves when every one is Ready
 * (read from a watch: a list of 5,000 every second would load the API server and this process
 * more than what is measured), or as soon as they are created when nothing reconciles them.
 */
function flood(client, loadgen, kube, reconciled) {
  const floodStart = performance.now();
  const creator = start([loadgen, "create", "noisy", String(NOISY)], {
    ...kube,
    CONCURRENCY: String(LOAD_CONCURRENCY),
  });
  const state = { flooding: true, creating: true, created: Number.NaN };
  const noisy = new Informer(client, Widget, { namespace: "noisy" });
  const readyNoisy = new Set();
  const track = (w) => (ready(w) ? readyNoisy.add(w.metadata.name) : readyNoisy.delete(w.metadata.name));
  noisy.on({ added: track, updated: (_old, w) => track(w), deleted: () => {} });
  noisy.start();
  state.done = (async () => {
    const code = await creator.exited;
    if (code !== 0) throw new Error(`loadgen create failed: ${creator.stderr()}`);
    state.created = (performance.now() - floodStart) / 1000;
    state.creating = false;
    while (reconciled && performance.now() - floodStart < FLOOD_MAX_S * 1000 && readyNoisy.size < NOISY)
      await sleep(200);
    state.flooding = false;
    await noisy.stop();
    state.drained = (performance.now() - floodStart) / 1000;
  })();
  return state;
}

/**
 * One row on a fresh API server. `argv`: the operator (none for the floor); `floor`: the bench
 * reconciles the quiet Widgets itself (frameworkless), and the operator, if any, only the noisy ones.
 */
async function row({ name, argv, env = {}, floor = false }, loadgen) {
  log(`${name}: starting a control plane`);
  const plane = await new ControlPlane({ profile: "apiserver" }).start();
  const operator = { stop: async () => {}, lines: [] };
  try {
    await plane.installCrdObjects([Widget.crd()]);
    const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
    const quietNs = Array.from({ length: QUIET }, (_, i) => `quiet-${i}`);
    for (const ns of ["noisy", ...quietNs])
      await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    const tenants = new QuietTenants(client, quietNs);
    const direct = floor
      ? new Frameworkless(client, tenants.informer, Widget, ready, () => tenants.phase)
      : undefined;
    await tenants.create();
    const kube = { KUBECONFIG: plane.kubeconfigPath, CONCURRENCY: String(CONCURRENCY) };
    if (argv) {
      const traceEnv = floor ? { SKIP_PREFIX: "quiet-" } : { TRACE_PREFIX: "quiet-" };
      Object.assign(operator, start(argv, { ...kube, ...traceEnv, ...env }));
      await operator.waitFor("SYNCED", 60_000);
    }
    await tenants.settle(30_000); // the initial reconciles

    log(`${name}: baseline, ${BASELINE_S} s of quiet changes`);
    const baselineEnd = performance.now() + BASELINE_S * 1000;
    await tenants.churn(
      () => "baseline",
      () => performance.now() < baselineEnd,
    );
    await tenants.settle(30_000);

    log(`${name}: flood, ${NOISY} Widgets created in one namespace`);
    const state = flood(client, loadgen, kube, argv !== undefined);
    await tenants.churn(
      () => (state.creating ? "creating" : "draining"),
      () => state.flooding,
    );
    await state.done;
    await tenants.settle(120_000);
    await tenants.informer.stop();
    await client.close();
    const trace = parseTrace(operator.lines);
    const split = (...phases) => breakdown(tenants.samples, trace, phases);
    return {
      name,
      baseline: tenants.stats("baseline"),
      flood: tenants.stats("creating", "draining"),
      creating: tenants.stats("creating"),
      draining: tenants.stats("draining"),
      created: state.created,
      drained: state.drained,
      load: loadAverage(),
      ...(direct
        ? {
            writes: {
              baseline: direct.writeStats("baseline"),
              creating: direct.writeStats("creating"),
              draining: direct.writeStats("draining"),
            },
          }
        : {}),
      ...(trace.events.size > 0
        ? {
            breakdown: {
              baseline: split("baseline"),
              creating: split("creating"),
              draining: split("draining"),
            },
          }
        : {}),
    };
  } finally {
    await operator.stop();
    await plane.stop();
  }
}

// --- main --------------------------------------------------------------------------------------

const goOut = buildGo();
const operatorTs = join(here, "peers", "kubeloop", "widget-operator.ts");
const kubeloop = [process.execPath, operatorTs];
const rows = [
  { id: "kubeloop-fair", name: "kubeloop, fairness on (default)", argv: kubeloop },
  {
    id: "kubeloop-spare",
    name: "kubeloop, fairness on + 1 spare worker",
    argv: kubeloop,
    env: { SPARE_WORKERS: "1" },
  },
  { id: "kubeloop-fifo", name: "kubeloop, fairness off (FIFO)", argv: kubeloop, env: { FAIRNESS: "off" } },
  {
    id: "controller-runtime",
    name: "controller-runtime priority queue",
    argv: [join(goOut, "controller-runtime")],
  },
  // The floors: the quiet Widgets reconciled by the bench itself, straight from its watch.
  { id: "floor", name: "floor: no operator (flood = the creates only)", floor: true },
  {
    id: "floor-busy",
    name: "floor: kubeloop reconciles the noisy namespace only",
    argv: kubeloop,
    floor: true,
  },
];
const only = opts.only?.split(",");
for (const id of only ?? []) {
  if (!rows.some((r) => r.id === id))
    throw new Error(`--only ${id}: no such row (rows: ${rows.map((r) => r.id).join(", ")})`);
}
const results = [];
for (let round = 0; round < Number(opts.repeat); round++) {
  for (const r of rows) {
    if (only && !only.includes(r.id)) continue;
    const load = loadAverage();
    results.push({ ...(await row(r, join(goOut, "loadgen"))), loadBefore: load });
    log(JSON.stringify(results.at(-1)));
  }
}

const ms = (x) => (Number.isFinite(x) ? `${Math.round(x)}` : "–");
const crVersion = /sigs\.k8s\.io\/controller-runtime (\S+)/.exec(
  readFileSync(join(here, "peers", "go", "go.mod"), "utf8"),
)?.[1];
const hop = (h) => `${ms(h.p50)} / ${ms(h.p99)}`;
const lines = [
  "# Fairness: one busy namespace against ten quiet ones",
  "",
  `\`node bench/fairness.mjs ${process.argv
    .slice(2)
    .join(" ")
    .replace(
      /\s*--out[= ]\S+/,
      "",
    )}\`, ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}, controller-runtime ${crVersion}; ${CONCURRENCY} workers per operator.`,
  `Quiet: ${QUIET} namespaces, one Widget each, changed once a second. Flood: ${NOISY} Widgets created in one namespace, ${LOAD_CONCURRENCY} at a time, until all are Ready.`,
  "Update-to-Ready of the quiet namespaces' changes, in ms (rows in the order they ran; load average = the 1-minute figure before and after the row):",
  "",
  "| operator | baseline p50 | baseline p99 | flood p50 | flood p99 | flood max | flood p99 / baseline p99 | samples (baseline / flood) | flood created in / all Ready in | load average |",
  "|---|---|---|---|---|---|---|---|---|---|",
  ...results.map(
    (r) =>
      `| ${r.name} | ${ms(r.baseline.p50)} | ${ms(r.baseline.p99)} | ${ms(r.flood.p50)} | ${ms(r.flood.p99)} | ${ms(r.flood.max)} | ${(r.flood.p99 / r.baseline.p99).toFixed(1)}× | ${r.baseline.n} / ${r.flood.n} | ${r.created.toFixed(1)} s / ${r.drained.toFixed(1)} s | ${r.loadBefore} → ${r.load} |`,
  ),
  "",
  "The flood split: changes sent while the creates were still arriving (the API server busy with them), and after (the operators working off their backlog); and one hop, from just before the PATCH to the bench's watch event of that generation (the API server's write and watch, no operator in it):",
  "",
  "| operator | while creating p50 / p99 | after, draining p50 / p99 | samples | update → watch event, baseline p50 / p99 | while creating | draining |",
  "|---|---|---|---|---|---|---|",
  ...results.map(
    (r) =>
      `| ${r.name} | ${ms(r.creating.p50)} / ${ms(r.creating.p99)} | ${ms(r.draining.p50)} / ${ms(r.draining.p99)} | ${r.creating.n} / ${r.draining.n} | ${hop(r.baseline.hop)} | ${hop(r.creating.hop)} | ${hop(r.draining.hop)} |`,
  ),
  "",
  "Where a quiet change's wait goes in kubeloop (the operator's TRACE lines: wall-clock times of its informer event, reconcile start, ConfigMap apply and status write, joined with the bench's): each segment p50 / p99 (mean over the slowest tenth of the changes), ms:",
  "",
  ...BREAKDOWN_HEADER,
  ...results.flatMap((r) => (r.breakdown ? breakdownRows(r.name, r.breakdown) : [])),
  "",
  "The floors' own writes (the bench's ConfigMap apply and status patch, straight from its client), p50 / p99, ms:",
  "",
  "| floor | phase | reconciles | ConfigMap apply | status write |",
  "|---|---|---|---|---|",
  ...results.flatMap((r) =>
    Object.entries(r.writes ?? {})
      .filter(([, w]) => w.n > 0)
      .map(([phase, w]) => `| ${r.name} | ${phase} | ${w.n} | ${hop(w.apply)} | ${hop(w.status)} |`),
  ),
  "",
];
const out = opts.out ?? join(here, opts.quick ? "RESULTS.fairness.quick.md" : "RESULTS.fairness.md");
writeFileSync(out, lines.join("\n"));
console.log(lines.join("\n"));
process.exit(0); // a failed row's watches would otherwise keep retrying a stopped API server
