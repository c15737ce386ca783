// The chaos suite: the Widget operator (2 replicas, leader election) through every fault of
// scenarios.mjs, each repeated, under a writer changing Widget specs all along. Per scenario it
// checks that no update was lost (every Widget ends Ready with observedGeneration equal to its
// generation, at least the last one written, and its ConfigMap holds its spec), that no key was
// reconciled by two replicas (or two workers) at once, and that no replica exited unless the
// scenario killed it; and it reports the recovery times. Exits 1 if a check fails.
//
// Run: npm run chaos [-- --widgets 1000 --repetitions 5 --rate 5 --gap 20 --scenarios "half-open stall,leader killed"]
// Results: a Markdown table on stdout, and bench/chaos/results.json (or --out).
// Real pods (root; the `node` profile): npm run chaos -- --real-pods [--nginxes 20 --repetitions 5
// --settings 3,10,adaptive:3-10]: seed 003's pod-delete and node-stop on the nginx operator's
// workload, per worker setting (real-pods.mjs); results in bench/chaos/results-real-pods.json.
// Both real-pod workloads fail on a lost update or on two overlapping reconciles of one key.
// With --workload sampledb [--sampledbs 2 --repetitions 3]: the same faults on SampleDB's PostgreSQL
// (the primary's pod, its node), recovery from the SampleDB's status, acknowledged rows lost
// (real-pods-sampledb.mjs), then the primary's node lost with nothing force-deleted, per replication
// setting (real-pods-sampledb-node-loss.mjs; --faults node-loss for it alone, pod-delete,node-stop
// for the first part alone); results in bench/chaos/results-real-pods-sampledb.json (node-loss alone:
// results-real-pods-sampledb-node-loss.json).
// With --autopilot [--objects 100 --rate 6 --hold 30 --target 3]: instead, the sharded operator
// scaled by its HPA on its own work rate under churn, up and down (autopilot.mjs); samples in
// bench/chaos/results-autopilot.json, drawn into docs/autopilot.svg.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { runAutopilot } from "./autopilot.mjs";
import { startEnvironment } from "./harness.mjs";
import { reportRealPods, runRealPods } from "./real-pods.mjs";
import { reportRealPodsSampleDB, runRealPodsSampleDB } from "./real-pods-sampledb.mjs";
import { reportSampleDBNodeLoss, runSampleDBNodeLoss } from "./real-pods-sampledb-node-loss.mjs";
import { median, runScenario, SCENARIOS } from "./scenarios.mjs";

/** Runs the suite; resolves with one result per scenario (see the table in `report`). */
export async function runChaos({
  leaderElection = true,
  widgets,
  repetitions,
  rate,
  scenarios,
  gapMs = 3_000,
  replicas = 2,
  log = () => {},
}) {
  const chosen = scenarios
    ? scenarios.map((name) => {
        const scenario = SCENARIOS.find((s) => s.name === name);
        if (!scenario)
          throw new Error(
            `no scenario "${name}": choose among ${SCENARIOS.map((s) => `"${s.name}"`).join(", ")}`,
          );
        return scenario;
      })
    : SCENARIOS;
  const started = performance.now();
  log(`starting: ${widgets} Widgets, ${replicas} replicas`);
  const env = await startEnvironment({ widgets, replicas, leaderElection, log });
  log(`ready in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  const results = [];
  try {
    for (const scenario of chosen) {
      log(`${scenario.name}: ${scenario.what}`);
      const writesBefore = env.writes;
      env.startWriter(rate);
      const { recoveries, detections, unexpectedExits, leadershipLosses } = await runScenario(env, scenario, {
        repetitions,
        gapMs,
        log,
      });
      await env.stopWriter();
      const unconverged = await env.converged(180_000);
      const doubles = env.doubleReconciles();
      env.pruneIntervals();
      const result = {
        scenario: scenario.name,
        what: scenario.what,
        recoveriesMs: recoveries.map(Math.round),
        medianMs: Math.round(median(recoveries)),
        worstMs: Math.round(Math.max(...recoveries)),
        ...(detections.length
          ? {
              detectionsMs: detections.map(Math.round),
              detectionWorstMs: Math.round(Math.max(...detections)),
            }
          : {}),
        writes: env.writes - writesBefore,
        lostUpdates: unconverged.length,
        unconverged: unconverged.slice(0, 10),
        doubleReconciles: doubles,
        unexpectedExits,
        leadershipLosses,
        restartedBySupervisor: scenario.killsReplicas === true,
      };
      results.push(result);
      log(
        `  → median ${(result.medianMs / 1000).toFixed(1)} s, worst ${(result.worstMs / 1000).toFixed(1)} s, ` +
          `${result.writes} spec writes, lost ${result.lostUpdates}, double reconciles ${doubles}, crashes ${unexpectedExits}, leadership losses ${leadershipLosses}`,
      );
      if (unexpectedExits)
        log(
          `  last exit: ${JSON.stringify(env.replicas.flatMap((r) => r.unexpectedExits).at(-1)).slice(0, 2000)}`,
        );
    }
  } finally {
    await env.stop();
  }
  return results;
}

export function failed(result) {
  return result.lostUpdates > 0 || result.doubleReconciles > 0 || result.unexpectedExits > 0;
}

export function report(results, { widgets, repetitions, rate, replicas = 2, leaderElection = true }) {
  const seconds = (ms) => (ms / 1000).toFixed(1);
  const lines = [
    `${widgets} Widgets, ${leaderElection ? `${replicas} replicas (leader election)` : "1 replica (no leader election)"}, specs changed at ${rate}/s throughout; ${repetitions} repetitions per fault.`,
    "",
    "| fault | recovery, median (s) | worst (s) | spec writes | updates lost | double reconciles | crashes | restarts after a lost Lease |",
    "|---|---|---|---|---|---|---|---|",
    ...results.map(
      (r) =>
        `| ${r.scenario} | ${seconds(r.medianMs)} | ${seconds(r.worstMs)} | ${r.writes} | ${r.lostUpdates} | ${r.doubleReconciles} | ${r.unexpectedExits} | ${r.leadershipLosses}${r.restartedBySupervisor ? " (+ the killed replicas, restarted by their supervisor)" : ""} |`,
    ),
  ];
  for (const r of results.filter((r) => r.detectionsMs))
    lines.push(
      "",
      `${r.scenario}: the dead connection was found in ${r.detectionsMs.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s (worst ${seconds(r.detectionWorstMs)} s).`,
    );
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      widgets: { type: "string", default: "1000" },
      repetitions: { type: "string", default: "5" },
      // Below what the operator drains on a busy 2-core machine, so recovery is not a backlog's length.
      rate: { type: "string", default: "5" },
      scenarios: { type: "string" },
      // Between repetitions: long enough for a watch to run its term, so each fault meets a reset backoff.
      gap: { type: "string", default: "20" },
      replicas: { type: "string", default: "2" },
      // One replica without leader election: dead connections found by the watches alone.
      "no-leader-election": { type: "boolean", default: false },
      out: { type: "string" },
      "real-pods": { type: "boolean", default: false },
      nginxes: { type: "string", default: "20" },
      // --real-pods: nginx (default) or sampledb (real-pods-sampledb.mjs; 3 repetitions by default).
      workload: { type: "string", default: "nginx" },
      sampledbs: { type: "string", default: "2" },
      faults: { type: "string", default: "pod-delete,node-stop,node-loss" },
      settings: { type: "string", default: "3,10,adaptive:3-10" },
      autopilot: { type: "boolean", default: false },
      objects: { type: "string", default: "100" },
      hold: { type: "string", default: "30" },
      target: { type: "string", default: "3" },
    },
  });
  const log = (line) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
  if (values["real-pods"] && values.autopilot) {
    const code = runAutopilot({
      objects: Number(values.objects),
      // --rate's default is the Widget writer's; the autopilot churns harder.
      rate: process.argv.includes("--rate") ? Number(values.rate) : 6,
      hold: Number(values.hold),
      target: Number(values.target),
      out: values.out ?? new URL("./results-autopilot.json", import.meta.url).pathname,
      plot: new URL("../../docs/autopilot.svg", import.meta.url).pathname,
      log,
    });
    process.exit(code);
  }
  if (values["real-pods"]) {
    const workloads = {
      nginx: [runRealPods, reportRealPods, { nginxes: Number(values.nginxes), repetitions: 5 }],
      sampledb: [
        (options) => runSampleDBFaults(values.faults.split(","), options),
        (results, options) =>
          [
            results.workers.length ? reportRealPodsSampleDB(results.workers, options) : "",
            results.nodeLoss ? reportSampleDBNodeLoss(results.nodeLoss, options) : "",
          ].join("\n\n"),
        { sampledbs: Number(values.sampledbs), repetitions: 3 },
      ],
    };
    if (!workloads[values.workload]) throw new Error(`--workload: nginx or sampledb, not ${values.workload}`);
    const [run, table, defaults] = workloads[values.workload];
    const options = {
      ...defaults,
      ...(process.argv.includes("--repetitions") ? { repetitions: Number(values.repetitions) } : {}),
      settings: values.settings.split(",").map((s) => s.trim()),
    };
    const results = await run({ ...options, log });
    // --faults node-loss alone keeps its results beside, not over, the worker settings' ones.
    const onlyNodeLoss = values.workload === "sampledb" && values.faults === "node-loss";
    const file =
      values.workload === "nginx"
        ? "results-real-pods.json"
        : `results-real-pods-${values.workload}${onlyNodeLoss ? "-node-loss" : ""}.json`;
    writeFileSync(
      values.out ?? new URL(`./${file}`, import.meta.url).pathname,
      `${JSON.stringify({ at: new Date().toISOString(), ...options, results }, null, 2)}\n`,
    );
    console.log(`\n${table(results, options)}`);
    const failed = (results.workers ?? results).filter((r) => r.lostUpdates > 0 || r.doubleReconciles > 0);
    for (const r of failed)
      console.log(
        `FAILED, workers ${r.workers}: ${r.lostUpdates} lost, ${r.doubleReconciles} overlapping (${r.overlapping.join("; ")})`,
      );
    // Asynchronous replication may lose the last commits; the synchronous settings may not.
    const nodeLossFailed = Object.entries(results.nodeLoss ?? {}).filter(
      ([name, r]) => r.heldAfterPromotion > 0 || (!name.startsWith("asynchronous") && r.lost > 0),
    );
    for (const [name, r] of nodeLossFailed)
      console.log(
        `FAILED, node-loss ${name}: ${r.lost} lost, ${r.heldAfterPromotion} acknowledged after the promotion`,
      );
    process.exit(failed.length || nodeLossFailed.length ? 1 : 0);
  }
  const options = {
    widgets: Number(values.widgets),
    repetitions: Number(values.repetitions),
    rate: Number(values.rate),
    scenarios: values.scenarios?.split(",").map((s) => s.trim()),
    gapMs: Number(values.gap) * 1000,
    replicas: values["no-leader-election"] ? 1 : Number(values.replicas),
    leaderElection: !values["no-leader-election"],
    log,
  };
  const results = await runChaos(options);
  writeFileSync(
    values.out ?? new URL("./results.json", import.meta.url).pathname,
    `${JSON.stringify({ at: new Date().toISOString(), ...options, log: undefined, results }, null, 2)}\n`,
  );
  console.log(`\n${report(results, options)}`);
  process.exit(results.some(failed) ? 1 : 0);
}

/** SampleDB's faults: pod-delete and node-stop per worker setting, node-loss per replication setting. */
async function runSampleDBFaults(faults, options) {
  const unknown = faults.filter((f) => !["pod-delete", "node-stop", "node-loss"].includes(f));
  if (unknown.length)
    throw new Error(`--faults: pod-delete, node-stop, node-loss; not ${unknown.join(", ")}`);
  const workers = faults.some((f) => f !== "node-loss") ? await runRealPodsSampleDB(options) : [];
  const nodeLoss = faults.includes("node-loss") ? await runSampleDBNodeLoss(options) : undefined;
  return { workers, ...(nodeLoss ? { nodeLoss } : {}) };
}
