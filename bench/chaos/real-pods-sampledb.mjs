// The real-pod chaos run on SampleDB's workload (`npm run chaos -- --real-pods --workload sampledb`):
// the SampleDB operator (a host process, as `npm start` runs it) with `sampledbs` SampleDBs of 2
// PostgreSQL instances (synchronous replication, so an acknowledged row is on both) on 2 real nodes.
// Per fault, a writer pod per SampleDB inserts rows one by one through the read-write Service and
// logs each acknowledged id (examples/sampledb/test/world.ts, as level 5's failover test).
// Faults, each repeated: `pod-delete` (every SampleDB's primary pod deleted at once) and `node-stop`
// (the node of the first SampleDB's primary stopped; once NotReady, its SampleDB pods are
// force-deleted, as in the nginx run; real-pods-sampledb-node-loss.mjs loses a node without that). Recovery: until every SampleDB's status is Ready with all
// instances ready again, on pods that are none of those lost. Lost updates: acknowledged ids missing
// from the primary once the writers are done. Per worker setting: recovery median and worst,
// operator CPU (mean and peak 1 s), rows acknowledged and lost, and reconciles of one SampleDB
// that overlapped (spans.mjs; none may).
import { join } from "node:path";
import { ControlPlane, kubectl, readCrds, startOperator } from "kubeloop/testing";
import { deletePod, stopNode } from "kubeloop/testing/faults";
import { World } from "../../examples/sampledb/test/world.ts";
import { median } from "../stats.mjs";
import { cpuMeter, nodeReady, waitFor } from "./real-pods.mjs";
import { startReconcileJournal } from "./spans.mjs";

const SAMPLEDB = join(import.meta.dirname, "../../examples/sampledb");
const LABELS = "app.kubernetes.io/managed-by=sampledb-operator";
/** Seconds a writer runs: the fault is injected a few seconds in; recovery takes ~10-30 s. */
const WRITE_SECONDS = 35;

export async function runRealPodsSampleDB({
  sampledbs = 2,
  repetitions = 3,
  settings = ["3", "10", "adaptive:3-10"],
  log,
}) {
  const results = [];
  for (const workers of settings) {
    log(`workers ${workers}: starting a 2-node plane, ${sampledbs} SampleDBs`);
    const world = new World();
    world.plane = await new ControlPlane({ profile: "node", nodes: 2 }).start();
    try {
      world.postgres = await world.plane.loadBaseImage("postgres");
      results.push({ workers, ...(await runSetting(world, { workers, sampledbs, repetitions, log })) });
    } finally {
      await world.plane.stop();
    }
  }
  return results;
}

const NAMESPACE = "chaos";

async function runSetting(world, { workers, sampledbs, repetitions, log }) {
  const { plane } = world;
  const ns = NAMESPACE;
  const k = (args, input) => world.ok(["-n", ns, ...args], input);
  await plane.installCrdObjects(readCrds([join(SAMPLEDB, "config/crd/sampledbs.seed.example.com.yaml")]));
  const journal = await startReconcileJournal();
  const operator = startOperator("src/main.ts", {
    cwd: SAMPLEDB,
    env: {
      ...journal.env("operator"),
      KUBECONFIG: plane.kubeconfigPath,
      METRICS_PORT: "0",
      PROBE_PORT: "0",
      WORKERS: workers,
      LOG_LEVEL: "warn",
    },
  });
  const cpu = cpuMeter(operator.process.pid);
  try {
    const names = await createSampleDBs(world, k, ns, sampledbs);
    log("  all Ready, tables made");

    const recoveries = { "pod-delete": [], "node-stop": [] };
    const notReadyMs = [];
    let acknowledged = 0;
    let lost = 0;
    let degradedSeen = 0;
    cpu.start();
    for (let rep = 0; rep < repetitions; rep++) {
      for (const kind of ["pod-delete", "node-stop"]) {
        const writers = names.map((db) => ({ db, pod: `${db}-${kind}-${rep}` }));
        await Promise.all(writers.map((w) => world.startWriter(ns, w.db, w.pod, WRITE_SECONDS)));
        await waitFor(
          async () =>
            (await Promise.all(writers.map((w) => rowCount(world, ns, w.pod)))).every((n) => n >= 5),
          90_000,
          "the writers to write",
        );
        const before = await readState(k);
        const fault = kind === "pod-delete" ? deletePrimaries : stopPrimaryNode;
        const recovery = await fault(world, k, before, `${kind} ${rep + 1}`, log);
        recoveries[kind].push(recovery.ms);
        if (recovery.notReadyMs !== undefined) notReadyMs.push(recovery.notReadyMs);
        if (recovery.sawDegraded) degradedSeen++;
        const count = await lostRows(world, ns, writers);
        acknowledged += count.acknowledged;
        lost += count.lost;
        log(`    rows acknowledged ${count.acknowledged}, lost ${count.lost}`);
      }
    }
    const usage = cpu.stop();
    const spans = await journal.finish();
    log(`  ${spans.reconciles} reconciles, ${spans.doubleReconciles} overlapping`);
    const summary = (ms) => ({ medianMs: Math.round(median(ms)), worstMs: Math.max(...ms), all: ms });
    return {
      podDelete: summary(recoveries["pod-delete"]),
      nodeStop: summary(recoveries["node-stop"]),
      nodeNotReadyMs: notReadyMs,
      cpuMeanPercent: usage.mean,
      cpuPeakPercent: usage.peak,
      degradedSeen,
      acknowledged,
      lostUpdates: lost,
      ...spans,
    };
  } finally {
    await operator.stop();
    await journal.stop();
  }
}

/** `count` SampleDBs of 2 instances, Ready, each with the writers' table; returns their names. */
async function createSampleDBs(world, k, ns, count) {
  await world.ok(["create", "namespace", ns]);
  const names = Array.from({ length: count }, (_, i) => `db-${i}`);
  const items = names.map((name) => ({
    apiVersion: "seed.example.com/v1",
    kind: "SampleDB",
    metadata: { name, namespace: ns },
    // The default replication: synchronous, durability preferred.
    spec: { instances: 2, storage: "256Mi", image: world.postgres },
  }));
  await k(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
  await waitFor(async () => (await readState(k)).every((db) => db.whole), 400_000, "every SampleDB Ready");
  // The writers' table; its creation returns once a synchronous standby has it.
  await Promise.all(
    names.map((db) =>
      world.sqlPod(
        ns,
        db,
        `${db}-table`,
        `for i in $(seq 60); do timeout 30 psql -qc "create table t (id serial primary key)" && exit 0; sleep 1; done; exit 1`,
      ),
    ),
  );
  return names;
}

/** Every SampleDB's primary pod deleted at once; recovery from then. */
async function deletePrimaries(world, k, before, label, log) {
  const primaries = before.map((db) => db.primary);
  const pods = await dbPods(k);
  const gone = new Set(pods.filter((p) => primaries.includes(p.name)).map((p) => p.uid));
  const faults = await Promise.all(
    primaries.map((pod) => deletePod(world.plane, { namespace: NAMESPACE, pod, gracePeriodSeconds: 0 })),
  );
  const recovery = await measure(faults[0], k, gone);
  log(`  ${label}: ${recovery.ms} ms (status left Ready: ${recovery.sawDegraded})`);
  return recovery;
}

/**
 * The node of the first SampleDB's primary stopped; once NotReady, its SampleDB pods force-deleted
 * and recovery measured from then; the node started again after.
 */
async function stopPrimaryNode(world, k, before, label, log) {
  const primary = (await dbPods(k)).find((p) => p.name === before[0].primary);
  const node = primary.node;
  const stopped = await stopNode(world.plane, node);
  await waitFor(async () => !(await nodeReady(world.ok.bind(world), node)), 90_000, `${node} NotReady`);
  // The operator may have deleted some already (a follower restarted after a failover).
  const onNode = (await dbPods(k, { terminating: true })).filter((p) => p.node === node);
  const deletedAt = Date.now();
  if (onNode.length)
    await k(["delete", "pod", "--force", "--grace-period=0", "--wait=false", ...onNode.map((p) => p.name)]);
  const recovery = await measure(stopped, k, new Set(onNode.map((p) => p.uid)));
  const ms = recovery.recoveredAt - deletedAt;
  const notReadyMs = deletedAt - stopped.injectedAt;
  log(
    `  ${label}: ${ms} ms after its ${onNode.length} SampleDB pods were deleted (NotReady after ${notReadyMs} ms; status left Ready: ${recovery.sawDegraded})`,
  );
  await stopped.restore();
  await waitFor(() => nodeReady(world.ok.bind(world), node), 90_000, `${node} Ready`);
  return { ...recovery, ms, notReadyMs };
}

/**
 * Recovery: every SampleDB Ready at its generation, all instances ready, on pods none of which is
 * `gone` (uids), as many as the SampleDBs' instances. `sawDegraded`: some status left Ready on the way (the operator saw the fault).
 */
async function measure(fault, k, gone) {
  let sawDegraded = false;
  const recovery = await fault.recovered(
    async () => {
      const [state, pods] = await Promise.all([readState(k), dbPods(k)]);
      if (state.some((db) => !db.whole)) sawDegraded = true;
      // Every instance back (a deleted pod's successor has its name, not its uid) and Ready.
      const instances = state.reduce((sum, db) => sum + db.instances, 0);
      const back = pods.length === instances && pods.every((p) => !gone.has(p.uid) && p.ready);
      return back && state.every((db) => db.whole);
    },
    { timeoutMs: 300_000, intervalMs: 250 },
  );
  return { ms: recovery.ms, recoveredAt: recovery.recoveredAt, sawDegraded };
}

async function readState(k) {
  const list = JSON.parse(await k(["get", "sampledbs", "-o", "json"])).items;
  return list.map((db) => ({
    name: db.metadata.name,
    primary: db.status?.primary,
    instances: db.spec.instances,
    whole:
      db.status?.phase === "Ready" &&
      db.status?.readyInstances === db.spec.instances &&
      (db.status?.observedGeneration ?? db.metadata.generation) === db.metadata.generation,
  }));
}

/** The SampleDBs' instance pods; with `terminating`, also those being deleted (on a lost node, forever). */
async function dbPods(k, { terminating = false } = {}) {
  const pods = JSON.parse(await k(["get", "pods", "-l", LABELS, "-o", "json"])).items;
  return pods
    .filter((p) => terminating || !p.metadata.deletionTimestamp)
    .filter((p) => p.metadata.labels?.["statefulset.kubernetes.io/pod-name"])
    .map((p) => ({
      name: p.metadata.name,
      uid: p.metadata.uid,
      node: p.spec.nodeName,
      ready: p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    }));
}

async function rowCount(world, ns, pod) {
  const result = await kubectl(["-n", ns, "logs", pod], { kubeconfig: world.plane.kubeconfigPath });
  return result.code === 0 ? result.stdout.split("\n").filter(Boolean).length : 0;
}

/** Once the writers are done: their acknowledged ids, and those missing from their SampleDB's primary. */
async function lostRows(world, ns, writers) {
  let acknowledged = 0;
  let lost = 0;
  for (const w of writers) {
    await waitFor(
      async () =>
        (await world.ok(["-n", ns, "get", "pod", w.pod, "-o", "jsonpath={.status.phase}"])) === "Succeeded",
      120_000,
      `writer ${w.pod} to finish`,
    );
    const { rows } = await world.writerRows(ns, w.pod);
    const ids = await world.sqlPod(ns, w.db, `${w.pod}-check`, `psql -Atc "select id from t"`);
    const present = new Set(ids.trim().split("\n").map(Number));
    acknowledged += rows.length;
    lost += rows.filter(([, id]) => !present.has(id)).length;
    await world.ok(["-n", ns, "delete", "pod", w.pod, `${w.pod}-check`, "--wait=false"]);
  }
  return { acknowledged, lost };
}

export function reportRealPodsSampleDB(results, { sampledbs, repetitions }) {
  const s = (ms) => (ms / 1000).toFixed(1);
  return [
    `${sampledbs} SampleDBs of 2 PostgreSQL instances (synchronous replication) on 2 real nodes, a writer per SampleDB inserting throughout each fault; ${repetitions} repetitions per fault.`,
    "",
    "| workers | primary pod-delete recovery, median / worst (s) | node-stop recovery, median / worst (s) | operator CPU, mean / peak 1 s (%) | rows acknowledged | rows lost | reconciles, overlapping |",
    "|---|---|---|---|---|---|---|",
    ...results.map(
      (r) =>
        `| ${r.workers} | ${s(r.podDelete.medianMs)} / ${s(r.podDelete.worstMs)} | ${s(r.nodeStop.medianMs)} / ${s(r.nodeStop.worstMs)} | ${r.cpuMeanPercent} / ${r.cpuPeakPercent} | ${r.acknowledged} | ${r.lostUpdates} | ${r.reconciles}, ${r.doubleReconciles} |`,
    ),
  ].join("\n");
}
