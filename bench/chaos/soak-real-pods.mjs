// The soak's real-pod mode (`npm run soak -- --real-pods --minutes N`): the nginx operator, 2
// replicas with leader election (host processes, as the real-pod chaos run starts it, each
// restarted a second after it ends, as a kubelet restarts a container), owns `nginxes` Nginx on a
// 2-node `node` plane: half probes, half changed by a writer once a second all along (real-pods.mjs).
// Every `faultEveryMs` a fault, in turn: a probe's pod deleted, its container killed, its network
// cut for 40 s (kubeloop/testing's chaos functions), the leading replica killed, a node's kubelet
// stopped (its pods force-deleted once NotReady, the kubelet started again after). Each fault's
// recovery is read from the Nginx status (every probe Ready at its generation, on live pods) or,
// for the leader, from the replicas' own leader metric. Each replica's heap and RSS (its metrics
// endpoint) are sampled every 5 s to a JSONL file that plot.mjs draws, as the Widget soak's are.
// Checks at the end: 0 lost updates, 0 overlapping reconciles of one key (spans.mjs), every fault
// recovered, no replica ended but those killed on purpose.
import { createWriteStream } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { ControlPlane, freePort } from "kubeloop/testing";
import { cutNetwork, deletePod, killContainer, stopNode } from "kubeloop/testing/faults";
import {
  createNginxes,
  isWhole,
  kubectlOn,
  lostUpdates,
  nodeReady,
  podsOn,
  prepareNginx,
  startNginxOperator,
  startWriter,
  waitFor,
} from "./real-pods.mjs";
import { heapTrend } from "./samples.mjs";
import { startReconcileJournal } from "./spans.mjs";

const RECOVERY = { timeoutMs: 300_000, intervalMs: 250 };
// Longer than the nginx pods' readiness probe takes to fail (10 s period, 3 failures), so the cut
// shows in the pod's and the Nginx's status.
const CUT_MS = 40_000;

/** Runs the soak; resolves with the exit code (0: every check passed). */
export async function runSoakRealPods({ minutes, nginxes, faultEveryMs, out: path, log }) {
  const out = createWriteStream(path);
  const write = (record) => out.write(`${JSON.stringify(record)}\n`);
  log(
    `soak on real pods: ${minutes} min, ${nginxes} Nginx on 2 nodes, a fault every ${faultEveryMs / 1000} s`,
  );
  const plane = await new ControlPlane({ profile: "node", nodes: 2 }).start();
  const replicas = [];
  let journal;
  try {
    const k = kubectlOn(plane);
    const image = await prepareNginx(plane, k);
    journal = await startReconcileJournal();
    for (const name of ["operator-0", "operator-1"])
      replicas.push(
        await supervise(
          plane,
          name,
          { LEADER_ELECT: "true", LEADER_ELECTION_NAMESPACE: "chaos", ...journal.env(name) },
          log,
        ),
      );
    const { names, want, probes, written, state } = await createNginxes(k, image, nginxes);
    log("all Ready");
    const started = Date.now();
    const minute = () => (Date.now() - started) / 60_000;
    write({
      type: "start",
      at: new Date().toISOString(),
      minutes,
      title: `${nginxes} Nginx on 2 real nodes, 1 spec change/s`,
    });
    const writer = startWriter(k, written, want);
    const end = started + minutes * 60_000;
    const samples = [];
    const sampling = sampleReplicas(replicas, end, minute, (record) => {
      samples.push(record);
      write(record);
    });

    const faults = faultKinds(plane, k, probes, state, replicas);
    const { failures, faultsRun } = await runFaults(faults, { faultEveryMs, end, minute, write, log });
    await sleep(Math.max(0, end - Date.now()));
    await sampling;
    const writes = await writer.stop();
    const lost = await lostUpdates(k, names, want);
    const spans = await journal.finish();
    const summary = {
      type: "summary",
      minutes,
      writes,
      lostUpdates: lost.length,
      faults: faultsRun,
      failedFaults: failures,
      unexpectedExits: replicas.flatMap((r) => r.unexpectedExits),
      leadershipLosses: replicas.reduce((sum, r) => sum + r.leadershipLosses, 0),
      restarts: Object.fromEntries(replicas.map((r) => [r.name, r.starts - 1])),
      ...spans,
      replicas: Object.fromEntries(
        replicas.map((r) => [r.name, heapTrend(samples.filter((s) => s.replica === r.name))]),
      ),
    };
    write(summary);
    console.log(JSON.stringify(summary, null, 2));
    const ok =
      lost.length === 0 &&
      spans.doubleReconciles === 0 &&
      failures.length === 0 &&
      summary.unexpectedExits.length === 0;
    if (!ok) console.log("SOAK FAILED: see the summary above");
    return ok ? 0 : 1;
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    await journal?.stop();
    await new Promise((resolve) => out.end(resolve));
    await plane.stop();
  }
}

/** Every 5 s until `end`, each replica's heap, RSS and leadership, as a "sample" record. */
async function sampleReplicas(replicas, end, minute, record) {
  while (Date.now() < end) {
    for (const replica of replicas) {
      const sample = await replica.sample();
      if (sample) record({ type: "sample", minute: minute(), replica: replica.name, ...sample });
    }
    await sleep(5_000);
  }
}

/** A fault every `faultEveryMs`, in the middle of its slot, in turn, until `end`; a failed one is counted, not thrown. */
async function runFaults(faults, { faultEveryMs, end, minute, write, log }) {
  const failures = [];
  let faultsRun = 0;
  for (let i = 0; Date.now() + faultEveryMs < end; i++, faultsRun++) {
    const slot = Date.now();
    await sleep(faultEveryMs / 2);
    const fault = faults[i % faults.length];
    const at = minute();
    try {
      const result = await fault.run(i);
      write({ type: "fault", minute: at, scenario: fault.name, ...result });
      log(`${fault.name}: recovered in ${(result.recoveryMs / 1000).toFixed(1)} s (${result.what})`);
    } catch (error) {
      failures.push(`${fault.name}: ${error.message}`);
      write({ type: "fault", minute: at, scenario: fault.name, error: error.message });
      log(`${fault.name}: ${error.message}`);
    }
    await sleep(Math.max(0, slot + faultEveryMs - Date.now()));
  }
  return { failures, faultsRun };
}

/** The faults, in the order the soak runs them; each resolves with `{ recoveryMs, what, … }`. */
function faultKinds(plane, k, probes, state, replicas) {
  const probePods = async () => (await podsOn(k)).filter((p) => probes.has(p.instance));
  const pick = async (i) => {
    const pods = await probePods();
    if (!pods.length) throw new Error("no probe pod to fault");
    return pods[i % pods.length];
  };
  const whole = (gone = new Set()) => isWhole(state, gone);
  const faults = { plane, k, replicas, pick, whole };
  return [podDelete, containerKill, networkCut, leaderKill, nodeStop].map((fault) => fault(faults));
}

/** A probe's pod deleted; whole once the Nginx status has every probe Ready on live pods again. */
function podDelete({ plane, pick, whole }) {
  return {
    name: "pod-delete",
    async run(i) {
      const pod = await pick(i);
      const fault = await deletePod(plane, { namespace: "chaos", pod: pod.name, gracePeriodSeconds: 0 });
      const recovery = await fault.recovered(() => whole(new Set([pod.name])), RECOVERY);
      return { recoveryMs: recovery.ms, what: pod.name };
    },
  };
}

/** A probe's container killed; whole once the kubelet has restarted it and the status says Ready again. */
function containerKill({ plane, k, pick, whole }) {
  return {
    name: "container-kill",
    async run(i) {
      const pod = await pick(i);
      const fault = await killContainer(plane, { namespace: "chaos", pod: pod.name });
      const restarts = async () =>
        Number(
          await k([
            "-n",
            "chaos",
            "get",
            "pod",
            pod.name,
            "-o",
            "jsonpath={.status.containerStatuses[0].restartCount}",
          ]),
        );
      // Whole once the kubelet has restarted the container and the status says Ready again.
      const recovery = await fault.recovered(
        async () => (await restarts()) > fault.restartCount && (await whole()),
        RECOVERY,
      );
      return {
        recoveryMs: recovery.ms,
        what: `${pod.name}, restarts ${fault.restartCount} → ${await restarts()}`,
      };
    },
  };
}

/** A probe's network cut for CUT_MS, then restored; whole once the status is Ready again. */
function networkCut({ plane, pick, whole }) {
  return {
    name: "network-cut",
    async run(i) {
      const pod = await pick(i);
      const fault = await cutNetwork(plane, { namespace: "chaos", pod: pod.name });
      let sawNotReady = false;
      const cutUntil = Date.now() + CUT_MS;
      while (Date.now() < cutUntil) {
        if (!(await whole())) sawNotReady = true;
        await sleep(500);
      }
      await fault.restore();
      const recovery = await fault.recovered(() => whole(), RECOVERY);
      return {
        recoveryMs: recovery.ms,
        sinceRestoreMs: recovery.sinceRestoreMs,
        what: `${pod.name} cut ${CUT_MS / 1000} s, status left Ready: ${sawNotReady}, whole ${recovery.sinceRestoreMs} ms after restore`,
      };
    },
  };
}

/** The leading replica killed; whole once a live replica reports leading. */
function leaderKill({ replicas }) {
  return {
    name: "leader-kill",
    async run() {
      const leader = (
        await Promise.all(replicas.map(async (r) => ((await r.sample())?.leader ? r : undefined)))
      ).find(Boolean);
      if (!leader) throw new Error("no replica reports leading");
      const killedAt = Date.now();
      leader.kill();
      // Whole again when a live replica (either) reports leading.
      await waitFor(
        async () =>
          (await Promise.all(replicas.map((r) => r.sample()))).some(
            (s) => s?.leader && s.pid !== leader.killedPid,
          ),
        120_000,
        "a new leader",
      );
      return { recoveryMs: Date.now() - killedAt, what: `${leader.name} (pid ${leader.killedPid}) killed` };
    },
  };
}

/** A node's kubelet stopped, its pods force-deleted once it is NotReady; whole once they are replaced. */
function nodeStop({ plane, k, whole }) {
  return {
    name: "node-stop",
    async run(i) {
      const node = plane.nodeNames[i % 2 === 0 ? 1 : 0];
      const stopped = await stopNode(plane, node);
      try {
        await waitFor(async () => !(await nodeReady(k, node)), 90_000, `${node} NotReady`);
        const lost = (await podsOn(k)).filter((p) => p.node === node).map((p) => p.name);
        const deletedAt = Date.now();
        if (lost.length)
          await k(["-n", "chaos", "delete", "pod", "--force", "--grace-period=0", "--wait=false", ...lost]);
        const recovery = await stopped.recovered(() => whole(new Set(lost)), RECOVERY);
        return {
          recoveryMs: recovery.recoveredAt - deletedAt,
          notReadyMs: deletedAt - stopped.injectedAt,
          what: `${node}; NotReady after ${deletedAt - stopped.injectedAt} ms, ${lost.length} pods force-deleted, recovery from then`,
        };
      } finally {
        await stopped.restore();
        await waitFor(() => nodeReady(k, node), 90_000, `${node} Ready`);
      }
    },
  };
}

/**
 * One operator replica, restarted a second after its process ends (as a kubelet restarts a
 * container); `sample()` reads its heap, RSS and leadership from its metrics endpoint.
 */
async function supervise(plane, name, env, log) {
  const replica = {
    name,
    starts: 0,
    unexpectedExits: [],
    leadershipLosses: 0,
    killedPid: undefined,
    stopping: false,
    operator: undefined,
    port: 0,
    kill() {
      replica.killedPid = replica.operator.process.pid;
      replica.operator.kill("SIGKILL");
    },
    async stop() {
      replica.stopping = true;
      await replica.operator?.stop();
    },
    async sample() {
      const pid = replica.operator?.process.pid;
      try {
        const response = await fetch(`http://127.0.0.1:${replica.port}/metrics`, {
          signal: AbortSignal.timeout(2_000),
        });
        const text = await response.text();
        const value = (pattern) => Number(new RegExp(`^${pattern} (\\S+)$`, "m").exec(text)?.[1]);
        const heapUsed = value("nodejs_heap_size_used_bytes");
        const rss = value("process_resident_memory_bytes");
        if (!Number.isFinite(heapUsed) || !Number.isFinite(rss)) return undefined;
        return {
          t: Date.now(),
          pid,
          heapUsed,
          rss,
          leader: value("leader_election_master_status\\{[^}]*\\}") === 1,
        };
      } catch {
        return undefined; // Starting, or just killed.
      }
    },
  };
  const start = async () => {
    replica.port = await freePort();
    const operator = startNginxOperator(plane, {
      ...env,
      METRICS_PORT: String(replica.port),
      LOG_LEVEL: "warn",
    });
    replica.operator = operator;
    replica.starts++;
    operator.exited.then(async (code) => {
      if (replica.stopping) return;
      // Leader election ends the process on purpose when it cannot renew the Lease in time (as in
      // the Widget soak): a restart, not a crash.
      const lostLease = /leadership lost|LeadershipLost/.test(operator.output());
      if (operator.process.pid === replica.killedPid) {
        // Killed by the leader-kill fault.
      } else if (lostLease) {
        replica.leadershipLosses++;
        log(`${name} lost its Lease and exited; restarting it`);
      } else {
        replica.unexpectedExits.push({
          name,
          code,
          at: new Date().toISOString(),
          output: operator.output().slice(-2_000),
        });
        log(`${name} exited (code ${code}) without a fault: ${operator.output().slice(-500)}`);
      }
      await sleep(1_000);
      if (!replica.stopping) await start();
    });
  };
  await start();
  return replica;
}
