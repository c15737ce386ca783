// The chaos suite's real-pod mode (`npm run chaos -- --real-pods`): seed 003's experiment on the
// `node` profile. The nginx operator (a host process, as `npm start` runs it) owns `nginxes`
// Nginx resources on 2 real nodes: half are probes (1 pod each, whose recovery is measured), the
// other half are changed by a writer all along (replicas 1 ↔ 2, one write a second), so a fault
// meets an operator at work without the writer's own churn counting as recovery time.
// Faults, each repeated: `pod-delete` (half the probes' pods deleted at once) and
// `node-stop` (a node's kubelet stopped; once it is NotReady its pods are force-deleted, as when
// the machine is gone and its Node removed). Recovery: from the pods' deletion until every Nginx
// probe is Ready at its generation with none of the deleted pods in its status, and the operator's
// part of it (from every probe's new pod Ready to its Nginx's status Ready). Per worker setting
// (3, 10, adaptive): recovery median and worst, operator CPU (mean and peak 1 s over the run) and
// lost updates (an Nginx whose Deployment does not have its last replicas at the end), and
// double reconciles: two reconciles of one key that overlapped in time, from the operator's
// reconcile spans (spans.mjs); the run fails on any.
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ControlPlane, kubectl, readCrds, startOperator } from "kubeloop/testing";
import { deletePod, stopNode } from "kubeloop/testing/faults";
import { median, procStats } from "../stats.mjs";
import { startReconcileJournal } from "./spans.mjs";

const NGINX = join(import.meta.dirname, "../../examples/nginx");

export async function runRealPods({
  nginxes = 20,
  repetitions = 5,
  settings = ["3", "10", "adaptive:3-10"],
  log,
}) {
  const results = [];
  for (const workers of settings) {
    log(`workers ${workers}: starting a 2-node plane, ${nginxes} Nginx`);
    const plane = await new ControlPlane({ profile: "node", nodes: 2 }).start();
    try {
      results.push({ workers, ...(await runSetting(plane, { workers, nginxes, repetitions, log })) });
    } finally {
      await plane.stop();
    }
  }
  return results;
}

/** kubectl on the plane; throws with its stderr when it fails. */
export function kubectlOn(plane) {
  return async (args, input) => {
    const result = await kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
    if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  };
}

/** The nginx image loaded, the CRD installed, the `chaos` namespace made; resolves with the image. */
export async function prepareNginx(plane, k) {
  const image = await plane.loadBaseImage("nginx");
  await plane.installCrdObjects(readCrds([join(NGINX, "config/crd/nginxes.proxy.example.com.yaml")]));
  await k(["create", "namespace", "chaos"]);
  return image;
}

/** The nginx operator as a host process, as `npm start` runs it, with `env` on top. */
export function startNginxOperator(plane, env) {
  return startOperator("src/main.ts", {
    cwd: NGINX,
    env: {
      KUBECONFIG: plane.kubeconfigPath,
      ENABLE_WEBHOOKS: "false",
      METRICS_PORT: "0",
      PROBE_PORT: "0",
      ...env,
    },
  });
}

/**
 * `count` Nginx of 1 replica in `chaos`, half probes (even indexes), half written; resolves once
 * every probe is Ready. `want` holds each Nginx's last written replicas; `state()` the probes'.
 */
export async function createNginxes(k, image, count) {
  const names = Array.from({ length: count }, (_, i) => `web-${i}`);
  const want = new Map(names.map((name) => [name, 1]));
  const items = names.map((name) => ({
    apiVersion: "proxy.example.com/v1",
    kind: "Nginx",
    metadata: { name, namespace: "chaos" },
    spec: { replicas: 1, image },
  }));
  await k(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
  const probes = new Set(names.filter((_, i) => i % 2 === 0));
  const written = names.filter((name) => !probes.has(name));
  const state = async () => (await readState(k)).filter((n) => probes.has(n.name));
  await waitWhole(state, new Set(), 300_000);
  return { names, want, probes, written, state };
}

/** The writer: every second, one written Nginx's replicas flips between 1 and 2. */
export function startWriter(k, written, want) {
  let writing = true;
  let writes = 0;
  const loop = (async () => {
    for (let i = 0; writing; i++) {
      const name = written[i % written.length];
      const replicas = want.get(name) === 1 ? 2 : 1;
      const patch = JSON.stringify({ spec: { replicas } });
      await k(["-n", "chaos", "patch", "nginx", name, "--type=merge", "-p", patch]);
      want.set(name, replicas);
      writes++;
      await sleep(1_000);
    }
  })();
  return {
    /** Stops writing; resolves with the count of writes. */
    async stop() {
      writing = false;
      await loop;
      return writes;
    },
  };
}

/** Lost updates: the Nginx whose Deployment does not hold its last written replicas, once settled. */
export async function lostUpdates(k, names, want) {
  await waitFor(
    async () => (await readState(k)).every((n) => n.ready && n.current),
    300_000,
    "every Nginx Ready",
  ).catch(() => {});
  const deployments = JSON.parse(await k(["-n", "chaos", "get", "deployments", "-o", "json"])).items;
  return names.filter(
    (name) => deployments.find((d) => d.metadata.name === name)?.spec.replicas !== want.get(name),
  );
}

async function runSetting(plane, { workers, nginxes, repetitions, log }) {
  const k = kubectlOn(plane);
  const image = await prepareNginx(plane, k);
  const journal = await startReconcileJournal();
  const operator = startNginxOperator(plane, { WORKERS: workers, ...journal.env("operator") });
  const cpu = cpuMeter(operator.process.pid);
  try {
    const { names, want, probes, written, state } = await createNginxes(k, image, nginxes);
    log("  all Ready");
    const writer = startWriter(k, written, want);

    const recoveries = { "pod-delete": [], "node-stop": [] };
    const lags = { "pod-delete": [], "node-stop": [] };
    cpu.start();
    for (let rep = 0; rep < repetitions; rep++) {
      // pod-delete: half the probes' pods at once.
      const pods = (await podsOn(k)).filter((p) => probes.has(p.instance)).filter((_, i) => i % 2 === 0);
      const faults = await Promise.all(
        pods.map((p) => deletePod(plane, { namespace: "chaos", pod: p.name, gracePeriodSeconds: 0 })),
      );
      const gone = new Set(pods.map((p) => p.name));
      const deleted = await measure(faults[0], k, probes, gone, state);
      recoveries["pod-delete"].push(deleted.ms);
      lags["pod-delete"].push(deleted.lagMs);
      log(`  pod-delete ${rep + 1}: ${deleted.ms} ms (the operator's part: ${deleted.lagMs} ms)`);

      // node-stop: the node is lost; once NotReady its pods are force-deleted.
      const node = plane.nodeNames[rep % 2 === 0 ? 1 : 0];
      const stopped = await stopNode(plane, node);
      await waitFor(async () => !(await nodeReady(k, node)), 90_000, `${node} NotReady`);
      const lost = (await podsOn(k)).filter((p) => p.node === node);
      const deletedAt = Date.now();
      if (lost.length)
        await k([
          "-n",
          "chaos",
          "delete",
          "pod",
          "--force",
          "--grace-period=0",
          "--wait=false",
          ...lost.map((p) => p.name),
        ]);
      const whole = await measure(stopped, k, probes, new Set(lost.map((p) => p.name)), state);
      recoveries["node-stop"].push(whole.recoveredAt - deletedAt);
      lags["node-stop"].push(whole.lagMs);
      log(
        `  node-stop ${rep + 1}: ${recoveries["node-stop"].at(-1)} ms after the lost pods were deleted (NotReady after ${deletedAt - stopped.injectedAt} ms; the operator's part: ${whole.lagMs} ms)`,
      );
      await stopped.restore();
      await waitFor(() => nodeReady(k, node), 90_000, `${node} Ready`);
    }
    const usage = cpu.stop();
    const writes = await writer.stop();
    const lost = await lostUpdates(k, names, want);
    const spans = await journal.finish();
    log(`  ${spans.reconciles} reconciles, ${spans.doubleReconciles} overlapping`);
    const summary = (ms) => ({ medianMs: Math.round(median(ms)), worstMs: Math.max(...ms), all: ms });
    return {
      podDelete: summary(recoveries["pod-delete"]),
      nodeStop: summary(recoveries["node-stop"]),
      operatorLag: summary([...lags["pod-delete"], ...lags["node-stop"]]),
      cpuMeanPercent: usage.mean,
      cpuPeakPercent: usage.peak,
      writes,
      lostUpdates: lost.length,
      ...spans,
    };
  } finally {
    await operator.stop();
    await journal.stop();
  }
}

/**
 * The fault's recovery, and the operator's part of it: from the moment every probe's pod (not one
 * of `gone`) was seen Ready until every probe's status said so. Pod start-up and readiness probes
 * are the kubelet's; what follows is the operator's reconcile.
 */
async function measure(fault, k, probes, gone, state) {
  let podsReadyAt;
  const recovery = await fault.recovered(
    async () => {
      if (podsReadyAt === undefined) {
        const at = Date.now();
        const pods = (await podsOn(k)).filter((p) => probes.has(p.instance) && !gone.has(p.name));
        if (pods.length === probes.size && pods.every((p) => p.ready)) podsReadyAt = at;
      }
      return podsReadyAt !== undefined && (await isWhole(state, gone));
    },
    { timeoutMs: 300_000, intervalMs: 250 },
  );
  return { ms: recovery.ms, recoveredAt: recovery.recoveredAt, lagMs: recovery.recoveredAt - podsReadyAt };
}

export async function readState(k) {
  const list = JSON.parse(await k(["-n", "chaos", "get", "nginxes", "-o", "json"])).items;
  return list.map((n) => ({
    name: n.metadata.name,
    ready: n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    current: n.status?.observedGeneration === n.metadata.generation,
    pods: n.status?.nodes ?? [],
  }));
}

/** Every Nginx Ready at its generation, and none names a pod of `gone` in its status. */
export async function isWhole(state, gone) {
  return (await state()).every((n) => n.ready && n.current && !n.pods.some((pod) => gone.has(pod)));
}

async function waitWhole(state, gone, ms) {
  await waitFor(() => isWhole(state, gone), ms, "every Nginx Ready");
}

export async function waitFor(check, ms, what) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(250);
  }
}

export async function nodeReady(k, node) {
  const path = 'jsonpath={.status.conditions[?(@.type=="Ready")].status}';
  return (await k(["get", "node", node, "-o", path])) === "True";
}

export async function podsOn(k) {
  const pods = JSON.parse(await k(["-n", "chaos", "get", "pods", "-o", "json"])).items;
  return pods
    .filter((p) => !p.metadata.deletionTimestamp)
    .map((p) => ({
      name: p.metadata.name,
      node: p.spec.nodeName,
      instance: p.metadata.labels?.["app.kubernetes.io/instance"],
      ready: p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    }));
}

/** The operator's CPU (% of one core): the mean over the run, and the peak second. */
export function cpuMeter(pid) {
  let timer;
  let first;
  let last;
  let peak = 0;
  return {
    start() {
      first = last = { at: performance.now(), cpu: procStats(pid)?.cpu ?? 0 };
      timer = setInterval(() => {
        const now = { at: performance.now(), cpu: procStats(pid)?.cpu ?? last.cpu };
        peak = Math.max(peak, ((now.cpu - last.cpu) / ((now.at - last.at) / 1000)) * 100);
        last = now;
      }, 1_000);
    },
    stop() {
      clearInterval(timer);
      const end = { at: performance.now(), cpu: procStats(pid)?.cpu ?? last.cpu };
      return {
        mean: Math.round(((end.cpu - first.cpu) / ((end.at - first.at) / 1000)) * 100),
        peak: Math.round(peak),
      };
    },
  };
}

export function reportRealPods(results, { nginxes, repetitions }) {
  const s = (ms) => (ms / 1000).toFixed(1);
  return [
    `${nginxes} Nginx on 2 real nodes (half probes of 1 pod, half with replicas changed once a second throughout); ${repetitions} repetitions per fault.`,
    "",
    "| workers | pod-delete recovery, median / worst (s) | node-stop recovery, median / worst (s) | the operator's part, median / worst (s) | operator CPU, mean / peak 1 s (%) | spec writes | updates lost | reconciles, overlapping |",
    "|---|---|---|---|---|---|---|---|",
    ...results.map(
      (r) =>
        `| ${r.workers} | ${s(r.podDelete.medianMs)} / ${s(r.podDelete.worstMs)} | ${s(r.nodeStop.medianMs)} / ${s(r.nodeStop.worstMs)} | ${s(r.operatorLag.medianMs)} / ${s(r.operatorLag.worstMs)} | ${r.cpuMeanPercent} / ${r.cpuPeakPercent} | ${r.writes} | ${r.lostUpdates} | ${r.reconciles}, ${r.doubleReconciles} |`,
    ),
  ].join("\n");
}
