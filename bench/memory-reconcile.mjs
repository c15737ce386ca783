// Reconciler unit tests per second on kubeloop's in-memory API server (the built package, as a
// user imports it). One test case = what a unit test does: create a custom resource, reconcile
// until idle (the controller applies a Deployment it owns and writes status), then read back and
// check the Deployment and the Ready condition. Two ways to run cases:
// - fresh: a new MemoryApiServer and ReconcileHarness per case (full isolation);
// - shared: one harness, each case in its own namespace (what a test file with beforeAll does).
// Median of --runs runs after a warm-up. Run: npm run bench:memory, or npm run build && node bench/memory-reconcile.mjs [--runs 5] [--cases 2000]
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { controller, defineResource, done } from "kubeloop";
import { Deployment } from "kubeloop/k8s";
import { Conditions } from "kubeloop/resources";
import { ReconcileHarness } from "kubeloop/testing";
import Type from "typebox";
import { median } from "./stats.mjs";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, cases: { type: "string", default: "2000" } },
});
const runs = Number(values.runs);
const CASES = Number(values.cases);

const Web = defineResource({
  group: "bench.kubeloop.dev",
  version: "v1",
  kind: "Web",
  spec: Type.Object({ replicas: Type.Integer({ minimum: 0, maximum: 100, default: 1 }) }),
  status: Type.Object({ replicas: Type.Optional(Type.Integer()), conditions: Type.Optional(Conditions()) }),
});

const webController = controller(Web)
  .owns(Deployment)
  .reconcile(async (web, ctx) => {
    if (ctx.gone) return done();
    const labels = { app: web.metadata.name };
    await ctx.apply({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: web.metadata.name, namespace: web.metadata.namespace, labels },
      spec: {
        replicas: web.spec.replicas,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: "web", image: "nginx:1.27" }] } },
      },
    });
    await ctx.status({ replicas: web.spec.replicas }, { ready: true });
    return done();
  });

async function testCase(h, namespace, i) {
  const name = `web-${i}`;
  await h.client.create({
    apiVersion: Web.apiVersion,
    kind: "Web",
    metadata: { name, namespace },
    spec: { replicas: (i % 5) + 1 },
  });
  const steps = await h.reconcileUntilIdle();
  if (steps.length === 0) throw new Error("no reconcile ran");
  const deployment = await h.client.get(Deployment, name, { namespace });
  if (deployment.spec.replicas !== (i % 5) + 1) throw new Error("wrong replicas");
  const web = await h.client.get(Web, name, { namespace });
  if (web.status?.conditions?.find((c) => c.type === "Ready")?.status !== "True")
    throw new Error("not Ready");
}

async function fresh(n) {
  for (let i = 0; i < n; i++) {
    const h = await ReconcileHarness.start(webController, { resources: [Web] });
    await testCase(h, "default", i);
    await h.stop();
  }
}

async function shared(n) {
  const namespaces = Array.from({ length: n }, (_, i) => `case-${i}`);
  const h = await ReconcileHarness.start(webController, { resources: [Web], namespaces });
  for (let i = 0; i < n; i++) await testCase(h, namespaces[i], i);
  await h.stop();
}

async function measure(label, body, n) {
  await body(Math.min(n, 200)); // warm-up
  const rates = [];
  const cpuRates = [];
  for (let r = 0; r < runs; r++) {
    const started = performance.now();
    const cpu = process.cpuUsage();
    await body(n);
    rates.push(n / ((performance.now() - started) / 1000));
    const used = process.cpuUsage(cpu);
    cpuRates.push(n / ((used.user + used.system) / 1e6));
  }
  const rate = median(rates);
  // Per CPU-second too: on a shared machine the wall-clock rate depends on what else runs.
  console.log(
    `${label.padEnd(40)} ${Math.round(rate).toString().padStart(6)} cases/s wall, ${Math.round(median(cpuRates)).toString().padStart(6)} per CPU-second  (median of ${runs}, ${n} cases each)`,
  );
  return rate;
}

console.log(`node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}`);
await measure("fresh server + harness per case", fresh, CASES);
await measure("shared harness, one namespace per case", shared, CASES);
