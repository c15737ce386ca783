// The soak: the Widget operator (2 replicas) for N minutes under churn (spec changes, and Widgets
// deleted and created anew) with a network or server fault every `--fault-every` seconds, cycling
// through the chaos scenarios that leave the processes running (a soak watches one process grow).
// Each replica's heap, RSS, open handles and sockets and informer store sizes are sampled to a JSONL
// file (every 5 s), with the live object counts beside them. At the end it reports the heap slope
// after warm-up (the first quarter of each replica's longest process life: leader election exits a
// replica that cannot renew its Lease in time, e.g. while the API server restarts, and its
// supervisor starts a fresh one), the most handles and sockets, and whether a store
// ever held more than the live objects, then checks that no update was lost. plot.mjs draws it.
//
// Run: npm run soak -- --minutes 60 [--widgets 300 --rate 10 --fault-every 120 --out soak.jsonl]
// On real pods: npm run soak -- --real-pods --minutes 10 [--nginxes 20 --fault-every 60]: pods and
// nodes faulted on a schedule instead (soak-real-pods.mjs); the same JSONL, drawn by plot.mjs.

import { createWriteStream } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { ConfigMap } from "kubeloop/k8s";
import { Widget } from "../peers/widget.ts";
import { startEnvironment } from "./harness.mjs";
import { heapTrend } from "./samples.mjs";
import { runScenario, SCENARIOS } from "./scenarios.mjs";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    widgets: { type: "string", default: "300" },
    rate: { type: "string", default: "10" },
    "fault-every": { type: "string", default: "120" },
    out: { type: "string", default: "soak.jsonl" },
    // Real pods (root; the `node` profile): the nginx operator on 2 real nodes (soak-real-pods.mjs).
    "real-pods": { type: "boolean", default: false },
    nginxes: { type: "string", default: "20" },
  },
});
const minutes = Number(values.minutes);
const faultEveryMs = Number(values["fault-every"]) * 1000;
if (!(minutes > 0)) throw new Error(`--minutes must be a positive number, got ${values.minutes}`);
const log = (line) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

if (values["real-pods"]) {
  const { runSoakRealPods } = await import("./soak-real-pods.mjs");
  const code = await runSoakRealPods({
    minutes,
    nginxes: Number(values.nginxes),
    // A real node's fault takes up to a minute and a half (node-stop): one a minute by default.
    faultEveryMs: process.argv.includes("--fault-every") ? faultEveryMs : 60_000,
    out: values.out,
    log,
  });
  process.exit(code);
}

const out = createWriteStream(values.out);
const write = (record) => out.write(`${JSON.stringify(record)}\n`);
const started = Date.now();
const lastSample = new Map();
const samples = [];
const onStats = (sample) => {
  // Every 5 s per replica is enough for a trend, and keeps an hour's file small.
  if (sample.t - (lastSample.get(sample.replica) ?? 0) < 5_000) return;
  lastSample.set(sample.replica, sample.t);
  const record = { type: "sample", minute: (sample.t - started) / 60_000, ...sample };
  samples.push(record);
  write(record);
};

const faults = SCENARIOS.filter((s) => !s.killsReplicas);
log(
  `soak: ${minutes} min, ${values.widgets} Widgets, ${values.rate} spec changes/s, a fault every ${faultEveryMs / 1000} s`,
);
const env = await startEnvironment({ widgets: Number(values.widgets), replicas: 2, log, onStats });
write({
  type: "start",
  at: new Date().toISOString(),
  minutes,
  widgets: Number(values.widgets),
  rate: Number(values.rate),
});
env.startWriter(Number(values.rate));
const end = started + minutes * 60_000;
let recreated = 0;
let live = { widgets: 0, configMaps: 0 };
const storeExcess = [];

// Widgets deleted and created under new names, so stores must let go of the dead (the apiserver
// profile has no garbage collector: the churn deletes the owned ConfigMap itself).
const recreating = (async () => {
  while (Date.now() < end) {
    await sleep(5_000);
    const index = Math.floor(Math.random() * env.names.length);
    const old = env.names[index];
    const name = `w-s${++recreated}`;
    try {
      env.names[index] = name;
      env.written.delete(old);
      await env.admin.delete(Widget, old, { namespace: env.namespace });
      await env.admin.delete(ConfigMap, old, { namespace: env.namespace }).catch(() => {});
      const created = await env.admin.create({
        apiVersion: Widget.apiVersion,
        kind: Widget.kind,
        metadata: { name, namespace: env.namespace },
        spec: { replicas: 1, data: { v: "0" } },
      });
      env.written.set(name, created.metadata.generation);
    } catch (error) {
      log(`churn: ${error.message}`);
    }
  }
})();

// Live objects, beside the samples: what the stores may hold at most.
const counting = (async () => {
  while (Date.now() < end) {
    try {
      const widgets = (await env.admin.list(Widget)).items.length;
      const configMaps = (await env.admin.list(ConfigMap)).items.length;
      live = { widgets, configMaps };
      write({ type: "live", minute: (Date.now() - started) / 60_000, ...live });
      for (const sample of samples.slice(-4)) {
        const sizes = Object.values(sample.stores ?? {});
        const most = Math.max(...sizes, 0);
        // Slack: objects created or deleted between the sample and the count.
        if (most > Math.max(widgets, configMaps) + 20) storeExcess.push({ sample, live });
      }
      env.pruneIntervals();
    } catch {
      // The API server may be restarting: count again next time.
    }
    await sleep(30_000);
  }
})();

let faultIndex = 0;
while (Date.now() + faultEveryMs < end) {
  await sleep(faultEveryMs / 2);
  const scenario = faults[faultIndex++ % faults.length];
  const at = (Date.now() - started) / 60_000;
  try {
    const { recoveries } = await runScenario(env, scenario, { repetitions: 1, gapMs: 0 });
    write({ type: "fault", minute: at, scenario: scenario.name, recoveryMs: Math.round(recoveries[0]) });
    log(`${scenario.name}: recovered in ${(recoveries[0] / 1000).toFixed(1)} s`);
  } catch (error) {
    write({ type: "fault", minute: at, scenario: scenario.name, error: error.message });
    log(`${scenario.name}: ${error.message}`);
  }
  await sleep(Math.max(0, faultEveryMs / 2 - (Date.now() - started - at * 60_000)));
}
await sleep(Math.max(0, end - Date.now()));
await Promise.all([recreating, counting]);
await env.stopWriter();
const unconverged = await env.converged(180_000);
const doubles = env.doubleReconciles();
const exits = env.replicas.flatMap((r) => r.unexpectedExits);

const summary = { type: "summary", replicas: {} };
for (const replica of env.replicas) {
  const own = samples.filter((s) => s.replica === replica.name);
  summary.replicas[replica.name] = {
    samples: own.length,
    ...heapTrend(own),
    mostHandles: Math.max(...own.map((s) => s.handles)),
    mostSockets: Math.max(...own.map((s) => s.sockets)),
    lists: own.at(-1)?.lists,
    relists: own.at(-1)?.relists,
    poolReplacements: own.at(-1)?.poolReplacements,
  };
}
Object.assign(summary, {
  minutes,
  writes: env.writes,
  recreated,
  lostUpdates: unconverged.length,
  doubleReconciles: doubles,
  unexpectedExits: exits.length,
  leadershipLosses: env.replicas.reduce((sum, r) => sum + r.leadershipLosses.length, 0),
  storeAboveLiveObjects: storeExcess.length,
  live,
});
write(summary);
out.end();
console.log(JSON.stringify(summary, null, 2));
await env.stop();
const ok = unconverged.length === 0 && doubles === 0 && exits.length === 0 && storeExcess.length === 0;
if (!ok) console.log("SOAK FAILED: see the summary above");
process.exit(ok ? 0 : 1);
