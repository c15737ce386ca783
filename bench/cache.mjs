// Memory per cached object and time to sync, for ConfigMaps with 1 KiB of data.
// Run: npm run bench:cache [-- --counts 10000,50000]
// Heap per object = (heap after the informer synced − heap before) / objects, both after a full GC.
// Sync is compared with `kubectl get --raw` reading the same list (the floor: one JSON response).
import { spawnSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { Informer } from "kubeloop/cache";
import { Client } from "kubeloop/client";
import { ConfigMap } from "kubeloop/k8s";
import { ControlPlane } from "kubeloop/testing";

const { values } = parseArgs({ options: { counts: { type: "string", default: "10000,50000" } } });
const counts = values.counts.split(",").map(Number);
if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc");

const heap = () => {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
};

async function fill(client, ns, count) {
  const data = { payload: "x".repeat(1024) };
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < count) {
        const i = next++;
        await client.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `cm-${i}`, namespace: ns, labels: { app: "bench" } },
          data,
        });
      }
    }),
  );
}

async function measure(client, ns, count, metadataOnly) {
  const before = heap();
  const t0 = performance.now();
  const informer = new Informer(client, ConfigMap, { namespace: ns, metadataOnly });
  informer.start();
  await informer.synced;
  const syncSeconds = (performance.now() - t0) / 1000;
  const after = heap();
  if (informer.size !== count) throw new Error(`synced ${informer.size}, expected ${count}`);
  await informer.stop();
  return { syncSeconds, bytesPerObject: (after - before) / count };
}

const plane = await new ControlPlane().start();
const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
const rows = [];
try {
  for (const count of counts) {
    const ns = `bench-${count}`;
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    const t0 = performance.now();
    await fill(client, ns, count);
    const fillSeconds = (performance.now() - t0) / 1000;
    const r0 = performance.now();
    const raw = spawnSync("kubectl", ["get", "--raw", `/api/v1/namespaces/${ns}/configmaps`], {
      env: { ...process.env, KUBECONFIG: plane.kubeconfigPath },
      maxBuffer: 1 << 30,
      stdio: ["ignore", "ignore", "inherit"],
    });
    if (raw.status !== 0) throw new Error("kubectl get --raw failed");
    const rawSeconds = (performance.now() - r0) / 1000;
    const full = await measure(client, ns, count, false);
    const meta = await measure(client, ns, count, true);
    rows.push({ count, fillSeconds, rawSeconds, full, meta });
    await client.delete({ apiVersion: "v1", kind: "Namespace" }, ns);
  }
} finally {
  await client.close();
  await plane.stop();
}

console.log(`# cache benchmark — ${new Date().toISOString()}`);
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}\n`,
);
console.log(
  "| ConfigMaps (1 KiB data) | created at (obj/s) | kubectl get --raw (s) | informer sync (s) | sync ÷ raw | heap per object, full (bytes) | heap per object, metadata-only (bytes) |",
);
console.log("|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(
    `| ${r.count} | ${(r.count / r.fillSeconds).toFixed(0)} | ${r.rawSeconds.toFixed(2)} | ${r.full.syncSeconds.toFixed(2)} | ${(r.full.syncSeconds / r.rawSeconds).toFixed(2)} | ${r.full.bytesPerObject.toFixed(0)} | ${r.meta.bytesPerObject.toFixed(0)} |`,
  );
}
