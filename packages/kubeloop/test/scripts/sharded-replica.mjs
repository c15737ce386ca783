// One replica of a sharded operator, for the sharding tests and bench: it reconciles ConfigMaps
// in $NAMESPACE and records every reconcile in a journal shared by all replicas (one line per
// start and end, appended: the file's order is the order the writes happened), and writes its
// cache size to $STATUS_DIR/<id>.json twice a second.
import { appendFileSync, renameSync, writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { controller, done, Manager } from "../../dist/index.js";
import { ConfigMap } from "../../dist/k8s/index.js";

const id = process.env.SHARD_ID;
const namespace = process.env.NAMESPACE;
const journal = process.env.JOURNAL;
const reconcileMs = Number(process.env.RECONCILE_MS ?? "5");
const fast = process.env.FAST_LEASES !== "false";

const replica = controller(ConfigMap)
  .named("sharded")
  .inNamespace(namespace)
  .concurrency(Number(process.env.WORKERS ?? "8"))
  .reconcile(async (cm, ctx) => {
    if (ctx.deleted) return done();
    const key = `${cm.metadata.namespace}/${cm.metadata.name}`;
    const v = cm.data?.v ?? "";
    if (journal) appendFileSync(journal, `start ${id} ${key} ${v}\n`);
    if (reconcileMs > 0) await sleep(reconcileMs);
    if (journal) appendFileSync(journal, `end ${id} ${key} ${v}\n`);
    return done();
  });

const manager = new Manager({
  kubeconfig: process.env.KUBECONFIG,
  probes: false,
  metrics: false,
  gracefulShutdownMs: 10_000,
  sharding: {
    ring: process.env.RING ?? "test-ring",
    id,
    namespace,
    // Shorter Leases than the defaults so that a killed replica's objects move within seconds in
    // tests; not shorter still, or renewals on a busy 2-core machine miss their deadline.
    ...(fast ? { leaseDurationMs: 10_000, renewDeadlineMs: 8_000, retryPeriodMs: 1_000 } : {}),
  },
});
manager.add(replica);
const running = manager.start();
await manager.ready;
const status = process.env.STATUS_DIR;
const loop = monitorEventLoopDelay({ resolution: 20 });
loop.enable();
let informer;
const report = () => {
  informer ??= manager.registry.acquire(ConfigMap, {
    namespace,
    labelSelector: manager.sharding.member.labelSelector,
  }).informer;
  const memory = process.memoryUsage();
  // Written aside and renamed: the test never reads a half-written file.
  writeFileSync(
    `${status}/${id}.json.tmp`,
    JSON.stringify({
      id,
      cache: informer.size,
      sharder: Boolean(manager.sharding.sharder),
      heapUsed: memory.heapUsed,
      rss: memory.rss,
      loopMaxMs: Math.round(loop.max / 1e6),
    }),
  );
  renameSync(`${status}/${id}.json.tmp`, `${status}/${id}.json`);
};
const timer = status ? setInterval(report, 500) : undefined;
if (status) report();
await running;
clearInterval(timer);
process.stderr.write(`replica ${id} stopped\n`);
