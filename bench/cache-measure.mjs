// One measurement in a fresh process (so heaps do not mix): sync an informer and report its time
// and heap per cached object. Run by bench/cache.mjs with node --expose-gc.
import { Informer } from "kubeloop/cache";
import { Client } from "kubeloop/client";
import { ConfigMap, Pod } from "kubeloop/k8s";

const [kubeconfig, kind, namespace, mode, strategy] = process.argv.slice(2);
const type = kind === "Pod" ? Pod : ConfigMap;
const heap = () => {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
};
const client = await Client.connect({ kubeconfig });
await client.resolve(type); // discovery outside the measurement
const before = heap();
const t0 = performance.now();
const informer = new Informer(client, type, {
  namespace,
  metadataOnly: mode === "metadata",
  watchList: strategy === "watchlist",
  ...(strategy === "pages" ? { pageSize: 500 } : {}),
});
informer.start();
await informer.synced;
const syncSeconds = (performance.now() - t0) / 1000;
const after = heap();
process.stdout.write(
  `${JSON.stringify({ syncSeconds, bytesPerObject: (after - before) / informer.size, size: informer.size, rss: process.memoryUsage().rss })}\n`,
);
await informer.stop();
await client.close();
