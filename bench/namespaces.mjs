// What watching some namespaces costs: the same ConfigMaps cached by one cluster-wide informer, or
// by one informer per namespace behind a MultiNamespaceInformer (what a Manager with `namespaces`
// does). Time to sync (start → every informer listed) and the watch connections held.
// Run: node bench/namespaces.mjs [--namespaces 1,10,50] [--per-namespace 200] [--runs 3]
import { parseArgs } from "node:util";
import { InformerRegistry } from "kubeloop/cache";
import { Client } from "kubeloop/client";
import { ConfigMap } from "kubeloop/k8s";
import { ControlPlane } from "kubeloop/testing";
import { median } from "./stats.mjs";

const { values } = parseArgs({
  options: {
    namespaces: { type: "string", default: "1,10,50" },
    "per-namespace": { type: "string", default: "200" },
    runs: { type: "string", default: "3" },
  },
});
const counts = values.namespaces.split(",").map(Number);
const perNamespace = Number(values["per-namespace"]);
const runs = Number(values.runs);
const most = Math.max(...counts);

const plane = await new ControlPlane().start();
try {
  const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  const names = Array.from({ length: most }, (_, i) => `bench-${i}`);
  for (const ns of names) {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    await Promise.all(
      Array.from({ length: 8 }, async (_, worker) => {
        for (let i = worker; i < perNamespace; i += 8) {
          await client.create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: `cm-${i}`, namespace: ns },
            data: { payload: "x".repeat(1024) },
          });
        }
      }),
    );
  }
  console.log(`${most} namespaces × ${perNamespace} ConfigMaps (1 KiB) on Kubernetes ${plane.version}`);
  console.log("| namespaces watched | objects | informers (watch connections) | sync, median of", runs, "|");
  console.log("|---|---|---|---|");
  for (const count of counts) {
    const watched = names.slice(0, count);
    const times = [];
    let informers = 0;
    let objects = 0;
    for (let run = 0; run < runs; run++) {
      const registry = new InformerRegistry(client);
      const started = performance.now();
      const shared = registry.acquireNamespaces(ConfigMap, watched);
      await shared.view.synced;
      times.push(performance.now() - started);
      informers = shared.view.informers.length;
      objects = shared.view.list().length;
      await shared.release();
    }
    console.log(`| ${count} | ${objects} | ${informers} | ${median(times).toFixed(0)} ms |`);
  }
  // The cluster-wide informer over all of them, for comparison.
  const times = [];
  let objects = 0;
  for (let run = 0; run < runs; run++) {
    const registry = new InformerRegistry(client);
    const started = performance.now();
    const shared = registry.acquire(ConfigMap);
    await shared.informer.synced;
    times.push(performance.now() - started);
    objects = shared.informer.size;
    await shared.release();
  }
  console.log(`| all (cluster-wide) | ${objects} | 1 | ${median(times).toFixed(0)} ms |`);
  await client.close();
} finally {
  await plane.stop();
}
