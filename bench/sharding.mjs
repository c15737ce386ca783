// Sharding: 10,000 objects converged by 1, 2 and 4 sharded replicas (separate processes).
// Run: npm run bench:sharding [-- --objects 10000 --replicas 1,2,4 --reconcile-ms 25 --workers 4 --churn 10000]
//  1. assign: the objects exist, unlabelled; N replicas start; until every object is labelled and
//     reconciled once (the sharder's labelling is part of it).
//  2. churn: `churn` objects (default all) are updated (64 writers, as fast as the API server takes
//     it); from the first write until every new version has been reconciled. When the writes take
//     as long as the reconciles, the API server's write rate is what is measured, not the replicas.
// Each reconcile waits `reconcile-ms` (standing in for API calls), with `workers` per replica: one
// replica's capacity is workers / reconcile-ms; sharding multiplies it, CPU permitting. Memory is
// each replica's heap and RSS at the end (the sharder's apart: it also caches all objects' metadata).
// Caveat: all replicas, the API server and etcd share this machine's cores.
import { spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Client } from "kubeloop/client";
import { ConfigMap } from "kubeloop/k8s";
import { ControlPlane, pollUntil } from "kubeloop/testing";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "10000" },
    replicas: { type: "string", default: "1,2,4" },
    "reconcile-ms": { type: "string", default: "25" },
    workers: { type: "string", default: "4" },
    churn: { type: "string" },
  },
});
const objects = Number(values.objects);
const churned = Number(values.churn ?? values.objects);
const counts = values.replicas.split(",").map(Number);
const script = new URL("../packages/kubeloop/test/scripts/sharded-replica.mjs", import.meta.url).pathname;

const plane = await new ControlPlane().start();
const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
const results = [];

async function pool(total, limit, run) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < total) await run(next++);
    }),
  );
}

/** Follows the journal: for each object, the `v` of its last finished reconcile. */
function follower(path) {
  const fd = openSync(path, "r");
  let offset = 0;
  let rest = "";
  const seen = new Map();
  return () => {
    const size = statSync(path).size;
    if (size > offset) {
      const buffer = Buffer.alloc(size - offset);
      readSync(fd, buffer, 0, buffer.length, offset);
      offset = size;
      const lines = (rest + buffer.toString()).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        const [event, , key, v] = line.split(" ");
        if (event === "end") seen.set(key, Number(v));
      }
    }
    return seen;
  };
}

/** Polls `check` every 250 ms until it holds (15 minutes at most). */
const waitFor = (check, what) => pollUntil(check, { timeoutMs: 900_000, intervalMs: 250, message: what });

try {
  for (const replicas of counts) {
    const namespace = `bench-${replicas}`;
    const dir = mkdtempSync(join(tmpdir(), "kubeloop-bench-sharding-"));
    const journal = join(dir, "journal");
    writeFileSync(journal, "");
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    await pool(objects, 64, (i) =>
      client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `cm-${i}`, namespace },
        data: { v: "0" },
      }),
    );
    const seen = follower(journal);
    const started = performance.now();
    const children = Array.from({ length: replicas }, (_, i) =>
      spawn(process.execPath, [script], {
        env: {
          ...process.env,
          KUBECONFIG: plane.kubeconfigPath,
          SHARD_ID: `replica-${i}`,
          NAMESPACE: namespace,
          RING: namespace,
          JOURNAL: journal,
          STATUS_DIR: dir,
          RECONCILE_MS: values["reconcile-ms"],
          WORKERS: values.workers,
          LOG_LEVEL: "warn",
        },
        stdio: ["ignore", "ignore", "inherit"],
      }),
    );
    await waitFor(() => seen().size === objects, "every object reconciled once");
    const assignSeconds = (performance.now() - started) / 1000;

    const churnStarted = performance.now();
    await pool(churned, 64, (i) => client.patch(ConfigMap, `cm-${i}`, { data: { v: "1" } }, { namespace }));
    const writeSeconds = (performance.now() - churnStarted) / 1000;
    await waitFor(() => {
      const map = seen();
      for (let i = 0; i < churned; i++) if (map.get(`${namespace}/cm-${i}`) !== 1) return false;
      return true;
    }, "every update reconciled");
    const churnSeconds = (performance.now() - churnStarted) / 1000;

    const status = Array.from({ length: replicas }, (_, i) =>
      JSON.parse(readFileSync(join(dir, `replica-${i}.json`), "utf8")),
    );
    for (const child of children) child.kill("SIGTERM");
    await Promise.all(children.map((child) => new Promise((resolve) => child.on("exit", resolve))));
    rmSync(dir, { recursive: true, force: true });
    const mib = (bytes) => Math.round(bytes / 2 ** 20);
    const shards = status.filter((s) => !s.sharder);
    const sharder = status.find((s) => s.sharder);
    const result = {
      scenario: `sharding-${objects}`,
      replicas,
      assignSeconds: Number(assignSeconds.toFixed(1)),
      churnSeconds: Number(churnSeconds.toFixed(1)),
      writeSeconds: Number(writeSeconds.toFixed(1)),
      churned,
      churnPerSecond: Math.round(churned / churnSeconds),
      cache: status.map((s) => s.cache),
      sharderHeapMiB: sharder ? mib(sharder.heapUsed) : null,
      sharderRssMiB: sharder ? mib(sharder.rss) : null,
      shardHeapMiB: shards.length ? Math.max(...shards.map((s) => mib(s.heapUsed))) : null,
      shardRssMiB: shards.length ? Math.max(...shards.map((s) => mib(s.rss))) : null,
      reconcileMs: Number(values["reconcile-ms"]),
      workers: Number(values.workers),
      cores: cpus().length,
    };
    results.push(result);
    console.log(JSON.stringify(result));
  }
} finally {
  await client.close();
  await plane.stop();
}

console.log(
  "\n| replicas | assign (label + first reconcile) | churn: all updates reconciled | updates/s | writes took | caches | sharder heap / RSS | other replicas' max heap / RSS |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const r of results)
  console.log(
    `| ${r.replicas} | ${r.assignSeconds} s | ${r.churnSeconds} s | ${r.churnPerSecond} | ${r.writeSeconds} s | ${r.cache.join(" / ")} | ${r.sharderHeapMiB} / ${r.sharderRssMiB} MiB | ${r.shardHeapMiB ?? "–"} / ${r.shardRssMiB ?? "–"} MiB |`,
  );
