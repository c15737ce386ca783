// The node-loss fault of the SampleDB chaos run (`npm run chaos -- --real-pods --workload sampledb`,
// `--faults node-loss` for it alone): the machine of the primary lost as an operations team would
// test it. A 3-node plane, the SampleDB operator as a host process, one SampleDB per replication
// setting (2 instances preferred, 2 and 3 required, 2 asynchronous), every primary on node-0 and
// every other instance elsewhere (examples/sampledb/test/world.ts's createOnNode). Per repetition:
// a writer per SampleDB on node-1 (a new connection per row through the read-write Service, each
// acknowledged id logged, until 75 s after the loss) and a client holding one connection to the primary; node-0's kubelet
// stopped, nobody force-deleting anything; once the writers are done, the kubelet started again and
// every SampleDB Ready (the old primaries rejoined). Per setting: when writes were acknowledged
// again after the loss, the longest pause, rows acknowledged and lost (missing from the primary
// once every instance is back), and rows the held connection had acknowledged after the promotion
// (a fenced primary acknowledges none).
import { join } from "node:path";
import { ControlPlane, readCrds, startOperator } from "kubeloop/testing";
import { World, writeOutage } from "../../examples/sampledb/test/world.ts";
import { median } from "../stats.mjs";
import { waitFor } from "./real-pods.mjs";

const SAMPLEDB = join(import.meta.dirname, "../../examples/sampledb");
/** Each SampleDB's name is its setting. */
export const NODE_LOSS_SETTINGS = {
  "preferred-2": "instances: 2",
  "required-2": "instances: 2, replication: { durability: required }",
  "required-3": "instances: 3, replication: { durability: required }",
  "asynchronous-2": "instances: 2, replication: { mode: asynchronous }",
};
const LOST = "node-0";
const WRITER_NODE = "node-1";
/**
 * The writers run until this long after the loss (detection takes 10-25 s, the failover a few
 * more), however long they took to start writing on a busy machine.
 */
const WRITE_SECONDS = 75;

export async function runSampleDBNodeLoss({ repetitions, log }) {
  log("node-loss: starting a 3-node plane");
  const world = new World();
  world.plane = await new ControlPlane({ profile: "node", nodes: 3 }).start();
  const results = Object.fromEntries(
    Object.keys(NODE_LOSS_SETTINGS).map((name) => [
      name,
      {
        resumedMs: [],
        pauseMs: [],
        failoverMs: [],
        acknowledged: 0,
        lost: 0,
        heldAfterPromotion: 0,
        silent: 0,
      },
    ]),
  );
  let operator;
  try {
    world.postgres = await world.plane.loadBaseImage("postgres");
    await world.plane.installCrdObjects(
      readCrds([join(SAMPLEDB, "config/crd/sampledbs.seed.example.com.yaml")]),
    );
    operator = startOperator("src/main.ts", {
      cwd: SAMPLEDB,
      env: { KUBECONFIG: world.plane.kubeconfigPath, METRICS_PORT: "0", PROBE_PORT: "0", LOG_LEVEL: "warn" },
    });
    for (let rep = 0; rep < repetitions; rep++) {
      const rows = await repetition(world, `loss-${rep}`, log);
      for (const [name, r] of Object.entries(rows)) {
        const total = results[name];
        if (r.resumedMs === undefined) total.silent++;
        else total.resumedMs.push(r.resumedMs);
        total.pauseMs.push(r.pauseMs);
        if (r.failoverMs !== undefined) total.failoverMs.push(r.failoverMs);
        total.acknowledged += r.acknowledged;
        total.lost += r.lost;
        total.heldAfterPromotion += r.heldAfterPromotion;
      }
    }
  } finally {
    await operator?.stop();
    await world.plane.stop();
  }
  return results;
}

async function repetition(world, ns, log) {
  const names = Object.keys(NODE_LOSS_SETTINGS);
  const field = (db, path) => world.ok(["-n", ns, "get", "sampledb", db, "-o", `jsonpath=${path}`]);
  await world.ok(["create", "namespace", ns]);
  await world.createOnNode(ns, NODE_LOSS_SETTINGS, LOST);
  await Promise.all(names.map((db) => world.waitForPhase(ns, db, "Ready", 400_000)));
  await Promise.all(
    names.map(async (db) => {
      await waitFor(
        async () => /Synchronous|Asynchronous/.test(await field(db, "{.status.replication.writes}")),
        120_000,
        `${db} replicating`,
      );
      await world.sqlPod(ns, db, `${db}-table`, `psql -qc "create table t (id serial primary key)"`);
      await world.startWriter(ns, db, `${db}-writer`, 3_600, { node: WRITER_NODE });
      await world.startHeldWriter(ns, db, `${db}-held`, 36_000, { node: WRITER_NODE });
    }),
  );
  const pods = names.flatMap((db) => [`${db}-writer`, `${db}-held`]);
  await waitFor(
    async () =>
      (await Promise.all(pods.map((pod) => world.writerRows(ns, pod).catch(() => ({ rows: [] }))))).every(
        (r) => r.rows.length >= 5,
      ),
    180_000,
    "the writers to write",
  );
  const lost = Date.now();
  await world.plane.stopKubelet(LOST);
  log(`  ${ns}: ${LOST}'s kubelet stopped`);
  await new Promise((resolve) => setTimeout(resolve, WRITE_SECONDS * 1000));
  const stoppedAt = Date.now();
  await Promise.all(names.map((db) => world.stopWriter(ns, `${db}-writer`)));
  const phase = (pod) => world.ok(["-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.phase}"]);
  await waitFor(
    async () => (await Promise.all(names.map((db) => phase(`${db}-writer`)))).every((p) => p === "Succeeded"),
    60_000,
    "the writers to finish",
  );
  await world.plane.startKubelet(LOST);
  const back = Date.now();
  await Promise.all(names.map((db) => world.waitForPhase(ns, db, "Ready", 300_000)));
  log(`  ${ns}: ${LOST} back, every SampleDB Ready ${((Date.now() - back) / 1000).toFixed(1)} s after`);
  const out = {};
  for (const db of names) {
    const { rows } = await world.writerRows(ns, `${db}-writer`);
    const held = await world.writerRows(ns, `${db}-held`);
    const promotedAt =
      Date.parse((await field(db, "{.status.promotedAt}")) || "") || Number.POSITIVE_INFINITY;
    const ids = await world.sqlPod(ns, db, `${db}-check`, `psql -Atc "select id from t"`);
    const present = new Set(ids.trim().split("\n").map(Number));
    const acknowledged = [...rows, ...held.rows];
    // The writer's end counts as a row: a silence until then is the longest pause, never resumed.
    const { pauseMs, resumedMs } = writeOutage([...rows, [stoppedAt, -1]], lost);
    const during = lost + resumedMs < stoppedAt;
    out[db] = {
      resumedMs: during ? resumedMs : undefined,
      failoverMs: Number.isFinite(promotedAt) ? promotedAt - lost : undefined,
      pauseMs,
      acknowledged: acknowledged.length,
      lost: acknowledged.filter(([, id]) => !present.has(id)).length,
      heldAfterPromotion: held.rows.filter(([at]) => at >= promotedAt).length,
    };
    log(
      `    ${db}: primary named ${((out[db].failoverMs ?? Number.NaN) / 1000).toFixed(1)} s after the loss, writes again ${during ? `${(resumedMs / 1000).toFixed(1)} s` : "never"} after it, longest pause ${(pauseMs / 1000).toFixed(1)} s, ${out[db].acknowledged} acknowledged, ${out[db].lost} lost; held connection: ${held.other.at(-2) ?? ""} ${held.other.at(-1) ?? ""}`,
    );
  }
  await world.ok(["delete", "namespace", ns, "--wait=false"]);
  return out;
}

export function reportSampleDBNodeLoss(results, { repetitions }) {
  const s = (ms) => (ms / 1000).toFixed(1);
  const line = ([name, r]) => {
    const again = r.resumedMs.length
      ? `${s(median(r.resumedMs))} / ${s(Math.max(...r.resumedMs))}${r.silent ? ` (${r.silent} never)` : ""}`
      : "none until the writer stopped";
    const named = r.failoverMs.length ? `${s(median(r.failoverMs))} / ${s(Math.max(...r.failoverMs))}` : "-";
    return `| ${name} | ${named} | ${again} | ${s(Math.max(...r.pauseMs))} | ${r.acknowledged} | ${r.lost} | ${r.heldAfterPromotion} |`;
  };
  return [
    `Node loss (${LOST}'s kubelet stopped, nothing force-deleted), every primary on it; ${repetitions} repetitions; a writer per SampleDB (until ${WRITE_SECONDS} s after the loss) and a client holding one connection to the primary.`,
    "",
    "| setting | new primary named after the loss, median / worst (s) | writes acknowledged again after the loss (the row ending the longest pause), median / worst (s) | longest pause in acknowledged writes, worst (s) | rows acknowledged | rows lost | held connection's rows after the promotion |",
    "|---|---|---|---|---|---|---|",
    ...Object.entries(results).map(line),
  ].join("\n");
}
