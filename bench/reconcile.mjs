// The framework's own cost per reconcile, and how fast a change reaches the reconciler.
// Run: npm run bench:reconcile [-- --objects 10000 --rate 200 --seconds 15]
//  1. overhead: a no-op reconciler over N ConfigMaps; from manager start to every object reconciled
//     once: reconciles per second and CPU per reconcile (process.cpuUsage of this process).
//  2. latency: ConfigMaps updated at R per second for S seconds; each update carries the time it was
//     sent, and the reconciler records (now − sent) when it sees that version: p50/p99.
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { controller, done, Manager } from "kubeloop";
import { Client } from "kubeloop/client";
import { ConfigMap } from "kubeloop/k8s";
import { ControlPlane } from "kubeloop/testing";
import pino from "pino";
import { quantile } from "./stats.mjs";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "10000" },
    rate: { type: "string", default: "200" },
    seconds: { type: "string", default: "15" },
  },
});
const objects = Number(values.objects);
const rate = Number(values.rate);
const seconds = Number(values.seconds);

const plane = await new ControlPlane().start();
const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
try {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "bench" } });
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < objects) {
        await client.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `cm-${next++}`, namespace: "bench" },
          data: { sent: "0" },
        });
      }
    }),
  );

  const seen = new Set();
  const latencies = [];
  let allSeen;
  const finished = new Promise((resolve) => {
    allSeen = resolve;
  });
  const noop = controller(ConfigMap)
    .named("noop")
    .inNamespace("bench")
    .reconcile((cm) => {
      const sent = Number(cm.data?.sent ?? 0);
      if (sent > 0) latencies.push(Date.now() - sent);
      else if (!seen.has(cm.metadata.name)) {
        seen.add(cm.metadata.name);
        if (seen.size === objects) allSeen();
      }
      return done();
    });
  const manager = new Manager({
    client,
    logger: pino({ level: "warn" }),
    probes: false,
    metrics: false,
    handleSignals: false,
  });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const running = manager.add(noop).start();
  await finished;
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuMsPerReconcile = (cpu.user + cpu.system) / 1000 / objects;

  // Latency at a steady rate of updates.
  const interval = 1000 / rate;
  const total = rate * seconds;
  const start = performance.now();
  const writes = [];
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    writes.push(
      client.patch(
        ConfigMap,
        `cm-${i % objects}`,
        { data: { sent: String(Date.now()) } },
        { namespace: "bench" },
      ),
    );
  }
  await Promise.all(writes);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await manager.stop();
  await running;

  console.log(`# reconcile benchmark — ${new Date().toISOString()}`);
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}\n`,
  );
  console.log("| measure | value |\n|---|---|");
  console.log(
    `| no-op reconciles of ${objects} objects from start (cache sync included) | ${wall.toFixed(2)} s, ${(objects / wall).toFixed(0)}/s |`,
  );
  console.log(
    `| operator CPU per reconcile (list, watch, queue, reconcile) | ${cpuMsPerReconcile.toFixed(3)} ms |`,
  );
  console.log(
    `| updates sent | ${total} at ${rate}/s; reconciles that saw them: ${latencies.length} (updates of one key in flight together collapse) |`,
  );
  console.log(
    `| update-to-reconcile latency p50 / p99 | ${quantile(latencies, 0.5)} ms / ${quantile(latencies, 0.99)} ms |`,
  );
} finally {
  await client.close();
  await plane.stop();
}
