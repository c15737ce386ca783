// Throughput of kubeloop's workqueue (the built package, as a user imports it): add/get/done cycles
// per second, one key at a time and in batches, with concurrent workers, and addAfter (heap + one
// timer). Median of --runs runs after a warm-up. Run: npm run build && node bench/queue.mjs [--runs 5]
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { FakeClock, WorkQueue } from "kubeloop/queue";
import { median } from "./stats.mjs";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, n: { type: "string", default: "1000000" } },
});
const runs = Number(values.runs);
const N = Number(values.n);
const KEYS = Array.from({ length: 10_000 }, (_, i) => `default/object-${i}`);

/** Every hook, doing what a Prometheus layer's cheapest counters would: a number update. */
function countingMetrics() {
  const m = { adds: 0, depth: 0, queued: 0, work: 0, retries: 0 };
  return {
    add: () => m.adds++,
    depth: (_priority, delta) => {
      m.depth += delta;
    },
    queueDuration: (s) => {
      m.queued += s;
    },
    workDuration: (s) => {
      m.work += s;
    },
    retry: () => m.retries++,
  };
}

/** add one key, await get, done; the queue holds at most one key. */
async function single(n, options) {
  const queue = new WorkQueue(options);
  for (let i = 0; i < n; i++) {
    queue.add(KEYS[i % KEYS.length]);
    const key = await queue.get();
    queue.done(key);
  }
  return n;
}

/** add 1000 distinct keys, then 1000 × (await get, done). */
async function batched(n, batch = 1000) {
  const queue = new WorkQueue();
  for (let i = 0; i < n; i += batch) {
    for (let j = 0; j < batch; j++) queue.add(KEYS[(i + j) % KEYS.length]);
    for (let j = 0; j < batch; j++) queue.done(await queue.get());
  }
  return n;
}

/** 8 workers blocked in get(); a producer adds 1000 distinct keys per turn and yields. */
async function workers(n, count = 8, batch = 1000) {
  const queue = new WorkQueue();
  let processed = 0;
  const worker = async () => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      processed++;
      queue.done(key);
    }
  };
  const running = Array.from({ length: count }, worker);
  for (let i = 0; i < n; i += batch) {
    for (let j = 0; j < batch; j++) queue.add(KEYS[(i + j) % KEYS.length]);
    while (queue.length > 0) await new Promise((resolve) => setImmediate(resolve));
  }
  await queue.shutDownWithDrain();
  await Promise.all(running);
  if (processed !== n) throw new Error(`processed ${processed} of ${n}`);
  return n;
}

/** addAfter of distinct keys with random delays (1 ms – 10 min): heap pushes under one real timer. */
function addAfter(n) {
  const queue = new WorkQueue();
  const keys = Array.from({ length: n }, (_, i) => `default/delayed-${i}`);
  const delays = Array.from({ length: n }, () => 1 + Math.floor(Math.random() * 600_000));
  const t0 = performance.now();
  for (let i = 0; i < n; i++) queue.addAfter(keys[i], delays[i]);
  const seconds = (performance.now() - t0) / 1000;
  queue.shutDown(); // clears the timer
  return { n, seconds };
}

/** addAfter, then the fake clock fires them all (heap pops), then get/done each. */
async function addAfterFire(n) {
  const clock = new FakeClock();
  const queue = new WorkQueue({ clock });
  const keys = Array.from({ length: n }, (_, i) => `default/delayed-${i}`);
  const delays = Array.from({ length: n }, () => 1 + Math.floor(Math.random() * 600_000));
  const t0 = performance.now();
  for (let i = 0; i < n; i++) queue.addAfter(keys[i], delays[i]);
  clock.advance(600_001);
  for (let i = 0; i < n; i++) queue.done(await queue.get());
  return { n, seconds: (performance.now() - t0) / 1000 };
}

async function timed(fn, n) {
  const t0 = performance.now();
  const done = await fn(n);
  if (typeof done === "object") return done;
  return { n: done, seconds: (performance.now() - t0) / 1000 };
}

const scenarios = [
  ["add → await get → done, one key at a time", (n) => timed(single, n), N],
  [
    "the same, with every metrics hook set",
    (n) => timed((m) => single(m, { metrics: countingMetrics() }), n),
    N,
  ],
  ["add ×1000, then 1000 × (await get → done)", (n) => timed(batched, n), N],
  ["8 workers awaiting get, producer adds 1000 per turn", (n) => timed(workers, n), N],
  ["addAfter, distinct keys, random delays ≤ 10 min", async (n) => addAfter(n), N / 5],
  ["addAfter → fire (FakeClock) → get → done", (n) => addAfterFire(n), N / 5],
];

const machine = `${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}/${process.arch}`;
console.log(
  `# workqueue benchmark — ${new Date().toISOString()}\nmachine: ${machine}\nruns: ${runs} (median)\n`,
);
console.log("| scenario | operations per run | median ops/s | min – max ops/s |");
console.log("|---|---|---|---|");
for (const [name, run, n] of scenarios) {
  await run(Math.min(n, 100_000)); // warm-up: let the JIT settle
  const rates = [];
  for (let r = 0; r < runs; r++) {
    const { n: ops, seconds } = await run(n);
    rates.push(ops / seconds);
  }
  const fmt = (x) => Math.round(x).toLocaleString("en-US");
  console.log(
    `| ${name} | ${n.toLocaleString("en-US")} | ${fmt(median(rates))} | ${fmt(Math.min(...rates))} – ${fmt(Math.max(...rates))} |`,
  );
}
