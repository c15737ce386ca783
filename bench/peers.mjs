// kubeloop against controller-runtime, kube-rs and the floor (no framework), on one workload:
// Widget → one ConfigMap per Widget (owned by it) + status.observedGeneration and Ready.
// Run: npm run bench:peers [-- --quick] [-- --rounds 3] [-- --only kubeloop,controller-runtime]
// Writes bench/RESULTS.md (and bench/results.jsonl with every sample). See bench/peers/README.md.

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { request } from "node:https";
import { stripTypeScriptTypes } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ControlPlane } from "kubeloop/testing";
import { kubeconfigCredentials, operatorRequests } from "./peers/api-requests.mjs";
import { Proc } from "./peers/proc.mjs";
import { report, variantName } from "./peers/report.mjs";
import { Widget } from "./peers/widget.ts";

const here = dirname(fileURLToPath(import.meta.url));
const peersDir = join(here, "peers");
const { values: opts } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    only: { type: "string" },
    concurrency: { type: "string", default: "4" },
    out: { type: "string" },
    "report-only": { type: "boolean", default: false },
    "converge-only": { type: "boolean", default: false },
    // Cold start and memory only, at these sizes (e.g. --memory-only --cold 10000 --memory 100,10000).
    "memory-only": { type: "boolean", default: false },
    cold: { type: "string" },
    memory: { type: "string" },
    // Converge sizes (e.g. --converge-only --converge 1000).
    converge: { type: "string" },
    // Extra kubeloop rows in cold start and memory: node run directly with these flags, "|"-separated
    // (default: none, i.e. plain node, the figure without the launcher's heap sizing). In a variant,
    // NAME=value sets an environment variable (e.g. MALLOC_ARENA_MAX=2) and `bundle` runs the
    // operator bundled as `kubeloop build`'s image holds it (its bundle and chunks).
    variants: { type: "string" },
    // Node flags for the kubeloop row itself (before the launcher, which keeps them), e.g. to
    // measure a flag's converge CPU: --kubeloop-flags="--optimize-for-size".
    "kubeloop-flags": { type: "string", default: "" },
  },
});
const quick = opts.quick;
const plan = quick
  ? {
      rounds: 1,
      converge: [100, 500],
      churnWidgets: 500,
      churnUpdates: 300,
      churnRate: 50,
      cold: 2000,
      memory: [2000, 4000],
      memoryRounds: 1,
    }
  : {
      rounds: 3,
      converge: [100, 1000, 5000],
      churnWidgets: 1000,
      churnUpdates: 2000,
      churnRate: 100,
      cold: 10000,
      memory: [10000, 50000],
      memoryRounds: 1,
    };
if (opts.rounds) plan.rounds = Number(opts.rounds);
if (opts.cold) plan.cold = Number(opts.cold);
if (opts.memory) plan.memory = opts.memory.split(",").map(Number);
if (opts.converge) plan.converge = opts.converge.split(",").map(Number);
const CONCURRENCY = Number(opts.concurrency);
const LOAD_CONCURRENCY = 16; // the load generator's parallel requests (creates, populate)
// The floor's workers: 16 was its best on this machine (1,000 Widgets: 4 → 7.4 s, 16 → 4.8 s, 64 → 5.5 s).
const WARMUP = 50;
const VARIANTS = (opts.variants ?? "").split("|");
// kubeloop runs as its image runs it: the bundle `kubeloop build` makes, through the launcher, which
// adds heap flags sized from the memory limit (none here unless the runner is in a memory cgroup:
// --max-semi-space-size=4 only), with the image's MALLOC_ARENA_MAX (cli/image/build.ts).
const IMAGE_ENV = ["MALLOC_ARENA_MAX=2"];
const FLOOR_CONCURRENCY = Number(process.env.FLOOR_CONCURRENCY ?? 16);
const outPath = opts.out ?? join(here, quick ? "RESULTS.quick.md" : "RESULTS.md");
const log = (...args) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...args);
let loadavgAtStart = readFileSync("/proc/loadavg", "utf8").trim();

// ---------------------------------------------------------------------------------------------
// Building the peers (cached by a hash of their sources and lockfiles)

function need(tool, hint) {
  const probe = spawnSync(tool, ["version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    console.error(`bench:peers needs \`${tool}\` on PATH (${hint}).`);
    process.exit(2);
  }
  return probe.stdout.trim();
}

function hashTree(dir, exts) {
  const hash = createHash("sha256");
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      if (name === "target") continue;
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (exts.some((e) => name.endsWith(e)))
        hash.update(path.slice(dir.length)).update(readFileSync(path));
    }
  };
  walk(dir);
  return hash.digest("hex").slice(0, 16);
}

function run(cmd, args, cwd, env = {}) {
  const started = performance.now();
  const result = spawnSync(cmd, args, { cwd, stdio: "inherit", env: { ...process.env, ...env } });
  if (result.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed in ${cwd}`);
  return (performance.now() - started) / 1000;
}

/**
 * The kubeloop operator as JavaScript, as it would ship (tsc output): Node can run the .ts source
 * directly, but its type stripper (a wasm module) then costs ~18 MiB of RSS and start-up time that a
 * production operator does not pay. Bare imports are resolved here, so the files can live outside
 * the workspace (and out of Biome's way).
 */
function buildKubeloop(cache) {
  const out = join(cache, "kubeloop");
  mkdirSync(out, { recursive: true });
  const files = [
    [join(peersDir, "widget.ts"), "widget.js"],
    [join(peersDir, "kubeloop", "widget-operator.ts"), "widget-operator.js"],
  ];
  for (const [source, name] of files) {
    const js = stripTypeScriptTypes(readFileSync(source, "utf8"))
      .replace('from "../widget.ts"', 'from "./widget.js"')
      .replace(/from "((?:kubeloop|typebox)[^"]*)"/g, (_, bare) => `from "${import.meta.resolve(bare)}"`);
    writeFileSync(join(out, name), js);
  }
  return join(out, "widget-operator.js");
}

/**
 * The operator as `kubeloop build`'s image holds it (cli/image/app.ts: the bundle, its chunks and
 * the launcher), written to <cache>/kubeloop/app.
 */
async function bundleKubeloop(cache) {
  const { buildApp } = await import(new URL("./cli/image/app.js", import.meta.resolve("kubeloop")).href);
  const root = dirname(here);
  const app = await buildApp(root, join(peersDir, "kubeloop", "widget-operator.ts"), root);
  const out = join(cache, "kubeloop", "app");
  rmSync(out, { recursive: true, force: true });
  for (const file of app.files) {
    const path = join(out, file.path.replace(/^\/app\/?/, ""));
    mkdirSync(file.type === "dir" ? path : dirname(path), { recursive: true });
    if (file.type !== "dir") writeFileSync(path, file.data);
  }
}

/** A variant's command: `env NAME=value… node flags… operator` (env execs node: the pid is node's). */
function variantCommand(cache, variant) {
  const tokens = variant.split(" ").filter(Boolean);
  const envs = tokens.filter((t) => /^[A-Z_][A-Z0-9_]*=/.test(t));
  const bundle = tokens.includes("bundle");
  const flags = tokens.filter((t) => t !== "bundle" && !envs.includes(t));
  const main = join(cache, "kubeloop", bundle ? "app/main.mjs" : "widget-operator.js");
  return [...(envs.length ? ["env", ...envs] : []), process.execPath, ...flags, main];
}

function buildPeers(selected) {
  const cache = join(homedir(), ".cache", "kubeloop", "peers");
  const goVersion = need("go", "Go ≥ 1.24 builds the controller-runtime operator and the load generator");
  const cargoVersion = spawnSync("cargo", ["--version"], { encoding: "utf8" });
  if (cargoVersion.error || cargoVersion.status !== 0) {
    console.error("bench:peers needs `cargo` on PATH (Rust builds the kube-rs operator; https://rustup.rs).");
    process.exit(2);
  }
  const goDir = join(peersDir, "go");
  const goOut = join(cache, `go-${hashTree(goDir, [".go", "go.mod", "go.sum"])}`);
  const builds = {};
  if (!existsSync(join(goOut, "loadgen"))) {
    log(`building the Go peers into ${goOut}`);
    mkdirSync(goOut, { recursive: true });
    builds.go = run("go", ["build", "-o", join(goOut, "controller-runtime"), "./controller-runtime"], goDir);
    builds.go += run("go", ["build", "-o", join(goOut, "loadgen"), "./loadgen"], goDir);
  }
  const rsDir = join(peersDir, "kube-rs");
  const rsOut = join(cache, `kube-rs-${hashTree(rsDir, [".rs", "Cargo.toml", "Cargo.lock"])}`);
  if (selected.includes("kube-rs") && !existsSync(join(rsOut, "kube-rs"))) {
    log(`building the kube-rs peer (cargo build --release; several minutes on 2 cores) into ${rsOut}`);
    const target = join(cache, "cargo-target");
    builds.rust = run("cargo", ["build", "--release", "--locked", "--target-dir", target], rsDir);
    mkdirSync(rsOut, { recursive: true });
    copyFileSync(join(target, "release", "widget-operator"), join(rsOut, "kube-rs"));
    spawnSync("chmod", ["+x", join(rsOut, "kube-rs")]);
  }
  buildKubeloop(cache); // the workspace's files, for the variants
  return {
    loadgen: join(goOut, "loadgen"),
    commands: {
      // As the image runs it: its environment, its launcher and its bundle (written by bundleKubeloop).
      kubeloop: [
        "env",
        ...IMAGE_ENV,
        process.execPath,
        ...opts["kubeloop-flags"].split(" ").filter(Boolean),
        join(cache, "kubeloop", "app", "launcher.mjs"),
        join(cache, "kubeloop", "app", "main.mjs"),
      ],
      // The same operator with other Node flags (see NOTES.md): cold start and memory only.
      ...Object.fromEntries(
        VARIANTS.map((variant) => [variantName(variant), variantCommand(cache, variant)]),
      ),
      "controller-runtime": [join(goOut, "controller-runtime")],
      "kube-rs": [join(rsOut, "kube-rs")],
      floor: [join(goOut, "loadgen"), "reconcile"],
    },
    versions: {
      go: goVersion.replace(/^go version /, ""),
      rust: cargoVersion.stdout.trim(),
      node: process.version,
      controllerRuntime: /sigs\.k8s\.io\/controller-runtime (\S+)/.exec(
        readFileSync(join(goDir, "go.mod"), "utf8"),
      )?.[1],
      kube: /name = "kube"\nversion = "([^"]+)"/.exec(readFileSync(join(rsDir, "Cargo.lock"), "utf8"))?.[1],
      k8sOpenapi: /name = "k8s-openapi"\nversion = "([^"]+)"/.exec(
        readFileSync(join(rsDir, "Cargo.lock"), "utf8"),
      )?.[1],
    },
    builds,
  };
}

// ---------------------------------------------------------------------------------------------
// Scenarios

async function freshPlane() {
  const plane = await new ControlPlane({ profile: "apiserver" }).start();
  await plane.installCrdObjects([Widget.crd()]);
  return {
    plane,
    creds: kubeconfigCredentials(plane.kubeconfigPath),
    env: { KUBECONFIG: plane.kubeconfigPath },
  };
}

async function loadgen(peers, env, args, concurrency = LOAD_CONCURRENCY) {
  const proc = new Proc("loadgen", [peers.loadgen, ...args], { ...env, CONCURRENCY: String(concurrency) });
  const code = await proc.exited;
  clearInterval(proc.sampler);
  if (code !== 0) throw new Error(`loadgen ${args.join(" ")} failed: ${proc.stderr}`);
}

async function createNamespace(creds, name) {
  // The API server creates namespaces on POST; a small JSON body through https.
  await new Promise((resolve, reject) => {
    const req = request(
      new URL("/api/v1/namespaces", creds.server),
      {
        method: "POST",
        ca: creds.ca,
        cert: creds.cert,
        key: creds.key,
        headers: { "content-type": "application/json" },
      },
      (res) => {
        res.resume();
        res.on("end", () =>
          res.statusCode === 201 || res.statusCode === 409
            ? resolve()
            : reject(new Error(`namespace ${name}: ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name } }));
  });
}

async function measure(op, creds, body) {
  const before = {
    stats: op.sample(),
    requests: await operatorRequests(creds),
    reconciles: op.stats?.reconciles ?? 0,
  };
  op.resetPeak();
  const t0 = performance.now();
  const extra = await body();
  const wall = (extra?.end ?? performance.now()) - t0;
  const after = { stats: op.sample(), requests: await operatorRequests(creds) };
  await sleep(1100); // one more STATS line
  return {
    wall: wall / 1000,
    cpu: (after.stats?.cpu ?? Number.NaN) - (before.stats?.cpu ?? Number.NaN),
    peakRss: op.peakRss,
    requests: after.requests - before.requests - (extra?.loadRequests ?? 0),
    reconciles: (op.stats?.reconciles ?? 0) - before.reconciles,
    ...extra,
  };
}

/** converge ×N and churn, on one fresh plane with one operator process. */
async function convergeAndChurn(peers, impl) {
  const { plane, creds, env } = await freshPlane();
  const workers = impl === "floor" ? FLOOR_CONCURRENCY : CONCURRENCY;
  const op = new Proc(impl, peers.commands[impl], { ...env, CONCURRENCY: String(workers) });
  const results = {};
  try {
    await op.waitFor("SYNCED", 60_000);
    // A fresh API server takes a few seconds to reach its pace (the first server-side applies
    // build its type models): an unmeasured round of WARMUP Widgets first, so that converge-100
    // does not favour the implementation that is slowest to start.
    for (const n of [WARMUP, ...plan.converge]) {
      const ns = n === WARMUP ? "warmup" : `converge-${n}`;
      await createNamespace(creds, ns);
      const watcher = new Proc("watcher", [peers.loadgen, "watch", ns, String(n)], env);
      await watcher.waitFor("WATCHING", 30_000);
      results[`converge-${n}`] = await measure(op, creds, async () => {
        const ready = watcher.waitFor("READY", 600_000);
        await loadgen(peers, env, ["create", ns, String(n)]);
        const { at } = await ready;
        return { end: at, loadRequests: 1 };
      });
      await watcher.stop();
      if (n === WARMUP) delete results[`converge-${n}`];
      else log(`  ${impl} converge ${n}: ${results[`converge-${n}`].wall.toFixed(2)} s`);
    }
    const ns = `converge-${plan.churnWidgets}`;
    if (!plan.converge.includes(plan.churnWidgets)) {
      await createNamespace(creds, ns);
      await loadgen(peers, env, ["populate", ns, String(plan.churnWidgets)]);
    }
    const watcher = new Proc("watcher", [peers.loadgen, "watch", ns, String(plan.churnWidgets)], env);
    await watcher.waitFor("WATCHING", 30_000);
    results.churn = await measure(op, creds, async () => {
      const start = watcher.lines.length;
      await loadgen(peers, env, [
        "churn",
        ns,
        String(plan.churnWidgets),
        String(plan.churnUpdates),
        String(plan.churnRate),
      ]);
      const latencies = () => watcher.lines.slice(start).filter((l) => l.text.startsWith("LATENCY "));
      for (let quiet = 0, last = -1; latencies().length < plan.churnUpdates && quiet < 100; ) {
        await sleep(100);
        quiet = latencies().length === last ? quiet + 1 : 0;
        last = latencies().length;
      }
      const seen = latencies();
      const ms = seen.map((l) => Number(l.text.slice(8))).sort((a, b) => a - b);
      const q = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? Number.NaN;
      return { end: seen.at(-1)?.at, loadRequests: 1, p50: q(0.5), p99: q(0.99), seen: ms.length };
    });
    await watcher.stop();
    log(`  ${impl} churn: p50 ${results.churn.p50} ms, p99 ${results.churn.p99} ms`);
  } finally {
    await op.stop();
    await plane.stop();
  }
  const node = op.lines.find((l) => l.text.startsWith("NODE "))?.text.slice(5); // kubeloop's node flags
  for (const r of Object.values(results)) r.node = node;
  return results;
}

/**
 * Cold start over `plan.cold` converged Widgets (every round), then steady-state memory at each
 * size in `plan.memory` (the largest only in `plan.memoryRounds` rounds): one control plane for the
 * whole group, populated once, since populating 50,000 Widgets takes minutes. Implementations take
 * turns (order reversed every other round); each starts as a fresh process.
 */
async function coldAndMemory(peers, impls, record) {
  const { plane, creds, env } = await freshPlane();
  const start = async (impl, size, round, scenarios) => {
    const before = await operatorRequests(creds);
    const op = new Proc(impl, peers.commands[impl], {
      ...env,
      CONCURRENCY: String(CONCURRENCY),
      EXPECT: String(size),
    });
    try {
      const pass = await op.waitFor("PASS", 600_000, true);
      const cpu = op.sample()?.cpu ?? Number.NaN;
      const requests = (await operatorRequests(creds)) - before;
      await sleep(5000); // steady state
      const steady = op.sample();
      await op.waitFor("STATS", 5000);
      const r = {
        wall: (pass.at - op.startedAt) / 1000,
        cpu,
        peakRss: op.peakRss,
        requests,
        rss: steady?.rss ?? Number.NaN,
        heap: op.stats?.heap || Number.NaN,
        stats: op.stats, // kubeloop's breakdown (heap spaces, external, array buffers), when printed
        node: op.lines.find((l) => l.text.startsWith("NODE "))?.text.slice(5), // kubeloop's node flags
      };
      for (const scenario of scenarios) record({ round, impl, scenario, ...r });
      log(`  round ${round} ${impl} at ${size}: start→pass ${r.wall.toFixed(2)} s, RSS ${mib(r.rss)} MiB`);
    } finally {
      await op.stop();
    }
  };
  const frameworks = [...impls.filter((impl) => impl !== "floor"), ...VARIANTS.map(variantName)]; // the floor keeps no cache
  try {
    let populated = 0;
    const populate = async (size) => {
      const ns = `populated-${size}`;
      await createNamespace(creds, ns);
      log(`populating ${size - populated} more converged Widgets (total ${size})`);
      await loadgen(peers, env, ["populate", ns, String(size - populated)]);
      populated = size;
    };
    const sizes = [...new Set([plan.cold, ...plan.memory])].sort((a, b) => a - b);
    for (const size of sizes) {
      await populate(size);
      const rounds =
        size === plan.cold ? plan.rounds : size === Math.max(...sizes) ? plan.memoryRounds : plan.rounds;
      for (let round = 1; round <= rounds; round++) {
        const order = round % 2 ? frameworks : [...frameworks].reverse();
        for (const impl of order) {
          const scenarios = [];
          if (size === plan.cold) scenarios.push("cold");
          if (plan.memory.includes(size)) scenarios.push(`memory-${size}`);
          await start(impl, size, round, scenarios);
        }
      }
    }
  } finally {
    await plane.stop();
  }
}

// ---------------------------------------------------------------------------------------------

let startedAt = new Date();
let finishedAt;
// JSON Lines: a header ({plan, peers, loadavgAtStart, startedAt, finishedAt}), then one sample a line.
const rawPath = opts.out
  ? `${opts.out.replace(/\.md$/, "")}.jsonl`
  : join(here, quick ? "results.quick.jsonl" : "results.jsonl");
const notesPath = join(here, "peers", "NOTES.md");
const impls = ["kubeloop", "controller-runtime", "kube-rs", "floor"].filter(
  (i) => !opts.only || opts.only.split(",").includes(i) || i === "kubeloop",
);
const samples = [];
let peers;
const write = (final) => {
  if (!opts["report-only"]) {
    const head = { plan, peers: peers.versions, loadavgAtStart, startedAt, finishedAt };
    writeFileSync(rawPath, [head, ...samples].map((line) => `${JSON.stringify(line)}\n`).join(""));
  }
  const table = report({
    samples,
    peers,
    impls,
    plan,
    startedAt,
    finishedAt: finishedAt ?? new Date(),
    loadavgAtStart,
    quick,
    concurrency: CONCURRENCY,
    floorConcurrency: FLOOR_CONCURRENCY,
    imageEnv: IMAGE_ENV,
    variants: VARIANTS,
  });
  const notes = !quick && existsSync(notesPath) ? `\n${readFileSync(notesPath, "utf8")}` : "";
  writeFileSync(outPath, `${final ? "" : "**Partial: the run is still going.**\n\n"}${table}${notes}`);
  return table;
};
if (opts["report-only"]) {
  // Rewrites the report (e.g. after editing bench/peers/NOTES.md) from the last run's samples.
  const [head, ...lines] = readFileSync(rawPath, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  const saved = { ...head, samples: lines };
  Object.assign(plan, saved.plan);
  ({ loadavgAtStart } = saved);
  startedAt = new Date(saved.startedAt);
  finishedAt = new Date(saved.finishedAt);
  samples.push(...saved.samples);
  peers = { versions: saved.peers };
  write(true);
  process.exit(0);
}
peers = buildPeers(impls);
await bundleKubeloop(dirname(dirname(peers.loadgen)));
log(`plan: ${JSON.stringify(plan)}; load average ${loadavgAtStart}`);
for (let round = 1; round <= (opts["memory-only"] ? 0 : plan.rounds); round++) {
  const order = round % 2 ? impls : [...impls].reverse();
  for (const impl of order) {
    log(`round ${round}: ${impl} — converge and churn`);
    const results = await convergeAndChurn(peers, impl);
    for (const [scenario, r] of Object.entries(results)) samples.push({ round, impl, scenario, ...r });
    write(false);
  }
}
if (!opts["converge-only"]) {
  log("cold start and memory");
  await coldAndMemory(peers, impls, (sample) => {
    samples.push(sample);
    write(false);
  });
}
finishedAt = new Date();
const table = write(true);
console.log(table);
log(`wrote ${outPath} and ${rawPath} in ${((Date.now() - startedAt) / 60000).toFixed(1)} min`);
