// The cache's figures: heap per cached object and time to sync, for ConfigMaps (1 KiB of data)
// and realistic Pods (~4.5 KB as the server returns them, managedFields included), full and
// metadata-only; and watch events processed per second.
// Run: npm run bench:cache [-- --counts 10000,50000] (or npm run bench for all data-path benchmarks)
// Heap per object = (heap after sync − heap before) / objects, after full GCs, each in a fresh process.
// Sync is compared with `kubectl get --raw` reading the same list (the floor: bytes only, no parsing).
import { spawn, spawnSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { Informer } from "kubeloop/cache";
import { Client } from "kubeloop/client";
import { ConfigMap } from "kubeloop/k8s";
import { ControlPlane } from "kubeloop/testing";
import { median } from "./stats.mjs";

const { values } = parseArgs({ options: { counts: { type: "string", default: "10000,50000" } } });
const counts = values.counts.split(",").map(Number);
const measureScript = new URL("./cache-measure.mjs", import.meta.url).pathname;

function configMap(ns, i) {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: `cm-${i}`, namespace: ns, labels: { app: "bench" } },
    data: { payload: "x".repeat(1024) },
  };
}

/** A Pod shaped like a real workload's: labels, annotations, two containers, probes, env, volumes. */
function pod(ns, i) {
  const container = (name, port) => ({
    name,
    image: `registry.example.com/team/${name}:v1.42.${i % 10}`,
    args: ["--port", String(port), "--log-level=info", "--metrics-bind-address=:9090"],
    ports: [
      { name: "http", containerPort: port, protocol: "TCP" },
      { name: "metrics", containerPort: 9090, protocol: "TCP" },
    ],
    env: [
      { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
      { name: "GOMAXPROCS", valueFrom: { resourceFieldRef: { resource: "limits.cpu", divisor: "1" } } },
      { name: "FEATURE_FLAGS", value: "alpha=false,beta=true,gamma=true" },
    ],
    resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
    readinessProbe: { httpGet: { path: "/readyz", port }, periodSeconds: 10, failureThreshold: 3 },
    livenessProbe: { httpGet: { path: "/healthz", port }, initialDelaySeconds: 15, periodSeconds: 20 },
    volumeMounts: [
      { name: "config", mountPath: "/etc/app" },
      { name: "cache", mountPath: "/var/cache/app" },
    ],
    securityContext: {
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    },
  });
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `web-7d876db474-${i.toString(36).padStart(5, "0")}`,
      namespace: ns,
      labels: {
        app: "web",
        "app.kubernetes.io/name": "web",
        "app.kubernetes.io/part-of": "shop",
        "pod-template-hash": "7d876db474",
        tier: "frontend",
      },
      annotations: {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9090",
        "kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z",
      },
    },
    spec: {
      serviceAccountName: "default",
      containers: [container("web", 8080), container("sidecar", 8081)],
      volumes: [
        { name: "config", configMap: { name: "web-config" } },
        { name: "cache", emptyDir: { sizeLimit: "1Gi" } },
      ],
      tolerations: [
        {
          key: "node.kubernetes.io/not-ready",
          operator: "Exists",
          effect: "NoExecute",
          tolerationSeconds: 300,
        },
      ],
      affinity: {
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: {
                topologyKey: "kubernetes.io/hostname",
                labelSelector: { matchLabels: { app: "web" } },
              },
            },
          ],
        },
      },
    },
  };
}

async function fill(client, count, make) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < count) await client.create(make(next++));
    }),
  );
}

/**
 * Runs one measurement in a child process, asynchronously: a blocked event loop would let the
 * client's idle keep-alive connections go stale unnoticed.
 */
function measure(kubeconfig, kind, ns, mode, strategy) {
  return new Promise((resolve, reject) => {
    const args = ["--expose-gc", measureScript, kubeconfig, kind, ns, mode, strategy];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.on("exit", (code) => {
      if (code === 0) resolve(JSON.parse(out));
      else reject(new Error(`measurement failed: ${kind} ${mode} ${strategy}`));
    });
  });
}

function kubectlRaw(kubeconfig, path) {
  const times = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const r = spawnSync("kubectl", ["get", "--raw", path], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
      maxBuffer: 2 ** 31,
      stdio: ["ignore", "ignore", "inherit"],
    });
    if (r.status !== 0) throw new Error("kubectl get --raw failed");
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

/** Watch throughput: N updates of 500 objects written with 64 in flight; the informer must see every one. */
async function watchThroughput(client, ns, updates) {
  for (let i = 0; i < 500; i++) await client.create(configMap(ns, i));
  const informer = new Informer(client, ConfigMap, { namespace: ns });
  let seen = 0;
  informer.on({ updated: () => seen++ });
  informer.start();
  await informer.synced;
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < updates) {
        const i = next++;
        await client.patch(ConfigMap, `cm-${i % 500}`, { data: { i: String(i) } }, { namespace: ns });
      }
    }),
  );
  const written = (performance.now() - t0) / 1000;
  while (seen < updates) await new Promise((resolve) => setTimeout(resolve, 5));
  const total = (performance.now() - t0) / 1000;
  await informer.stop();
  return {
    eventsPerSecond: updates / total,
    writesPerSecond: updates / written,
    lagAfterLastWriteMs: (total - written) * 1000,
  };
}

const plane = await new ControlPlane().start();
const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
const rows = [];
let watch;
try {
  for (const kind of ["ConfigMap", "Pod"]) {
    for (const count of counts) {
      const ns = `${kind.toLowerCase()}-${count}`;
      await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
      const t0 = performance.now();
      await fill(client, count, (i) => (kind === "Pod" ? pod(ns, i) : configMap(ns, i)));
      const createdPerSecond = count / ((performance.now() - t0) / 1000);
      const plural = kind === "Pod" ? "pods" : "configmaps";
      const raw = kubectlRaw(plane.kubeconfigPath, `/api/v1/namespaces/${ns}/${plural}`);
      const row = { kind, count, createdPerSecond, raw };
      for (const [key, mode, strategy] of [
        ["list", "full", "list"],
        ["pages", "full", "pages"],
        ["watchlist", "full", "watchlist"],
        ["meta", "metadata", "list"],
      ]) {
        const runs = [];
        for (let i = 0; i < 3; i++) runs.push(await measure(plane.kubeconfigPath, kind, ns, mode, strategy));
        row[key] = {
          syncSeconds: median(runs.map((r) => r.syncSeconds)),
          bytesPerObject: median(runs.map((r) => r.bytesPerObject)),
        };
      }
      rows.push(row);
      console.error(JSON.stringify(row)); // progress, in case a later step fails
    }
  }
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "watch-bench" } });
  watch = await watchThroughput(client, "watch-bench", 5_000);
} finally {
  await client.close();
  await plane.stop();
}

console.log(`# cache benchmark — ${new Date().toISOString()}`);
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; medians of 3 runs, each in a fresh process\n`,
);
console.log(
  "| objects | count | kubectl get --raw (s) | sync: streamed LIST (s) | ÷ raw | sync: pages of 500 (s) | sync: WatchList (s) | heap/object, full (B) | heap/object, metadata-only (B) |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(
    `| ${r.kind} | ${r.count} | ${r.raw.toFixed(2)} | ${r.list.syncSeconds.toFixed(2)} | ${(r.list.syncSeconds / r.raw).toFixed(2)} | ${r.pages.syncSeconds.toFixed(2)} | ${r.watchlist.syncSeconds.toFixed(2)} | ${r.list.bytesPerObject.toFixed(0)} | ${r.meta.bytesPerObject.toFixed(0)} |`,
  );
}
console.log(
  `\nwatch: ${watch.eventsPerSecond.toFixed(0)} events/s processed end to end (server accepted ${watch.writesPerSecond.toFixed(0)} writes/s; the last event arrived ${watch.lagAfterLastWriteMs.toFixed(0)} ms after the last write returned)`,
);
