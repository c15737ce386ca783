// The faults of the chaos suite. Each injects one fault into the environment (harness.mjs), holds
// it (`holdMs`), then heals it. Recovery is measured from the heal (from the injection for faults
// that are over at once: a reset, a stall, a kill, a restart) to the moment a change made to the
// probe Widget right after the injection is seen Ready at its generation.

import { setTimeout as sleep } from "node:timers/promises";

export const SCENARIOS = [
  {
    name: "connection reset",
    what: "every open connection of the operator reset (RST)",
    inject: (env) => env.proxy.reset(),
  },
  {
    name: "half-open stall",
    what: "every open connection stops moving bytes and stays open, forever",
    detectsDeadConnection: true,
    inject: (env) => env.proxy.stall(),
  },
  {
    name: "refused connections",
    what: "connections reset, new ones refused for 5 s",
    holdMs: 5_000,
    inject: async (env) => {
      await env.proxy.refuse();
      env.proxy.reset();
    },
    heal: (env) => env.proxy.heal(),
  },
  {
    name: "latency 400 ms",
    what: "400 ms added each way to every byte, for 15 s",
    holdMs: 15_000,
    inject: (env) => env.proxy.setLatency(400),
    heal: (env) => env.proxy.heal(),
  },
  {
    name: "bandwidth 64 KiB/s",
    what: "each direction capped at 64 KiB/s, for 15 s",
    holdMs: 15_000,
    inject: (env) => env.proxy.setBandwidth(64 * 1024),
    heal: (env) => env.proxy.heal(),
  },
  {
    name: "API server restarted",
    what: "kube-apiserver stopped and started again (recovery from its /readyz)",
    inject: (env) => env.plane.restartApiServer(),
    measureFromHeal: true,
  },
  {
    name: "etcd compacted (410 on resume)",
    what: "operator cut off for 5 s while specs change, etcd compacted: resumes get 410 and relist",
    holdMs: 5_000,
    inject: async (env) => {
      await env.proxy.refuse();
      env.proxy.reset();
    },
    heal: async (env) => {
      await env.plane.compactEtcd();
      await env.proxy.heal();
    },
  },
  {
    name: "429 storm (APF)",
    what: "a FlowSchema puts the operator's widget and configmap requests in a priority level with no seats, for 10 s",
    holdMs: 10_000,
    inject: (env) => env.startRejecting(),
    heal: (env) => env.stopRejecting(),
  },
  {
    name: "5xx burst",
    what: "the status webhook answers HTTP 500 for 10 s: every status write fails with 500",
    holdMs: 10_000,
    inject: (env) => {
      env.webhookMode = "error";
    },
    heal: (env) => {
      env.webhookMode = "allow";
    },
  },
  {
    name: "webhook down",
    what: "the status webhook's server stopped for 10 s while the API server calls it",
    holdMs: 10_000,
    inject: (env) => env.stopWebhook(),
    heal: (env) => env.restartWebhook(),
  },
  {
    name: "leader killed",
    what: "the leading replica SIGKILLed (its supervisor restarts it); a standby takes the Lease",
    inject: (env) => env.leader?.kill(),
    killsReplicas: true,
  },
  {
    name: "operator killed mid-reconcile",
    what: "every replica SIGKILLed while reconciles run; supervisors restart them",
    inject: async (env) => {
      await env.until(() => inFlight(env) > 0, 10_000, "a reconcile in flight").catch(() => {});
      for (const replica of env.replicas) replica.kill();
    },
    killsReplicas: true,
  },
];

function inFlight(env) {
  let open = 0;
  for (const intervals of env.intervals.values()) for (const i of intervals) if (i.end === undefined) open++;
  return open;
}

/**
 * Runs `scenario` `repetitions` times under the running writer; returns the recovery times (ms)
 * and what the checkers found.
 */
export async function runScenario(env, scenario, { repetitions, gapMs = 3_000, log = () => {} }) {
  const recoveries = [];
  const detections = [];
  const exitsBefore = env.replicas.map((r) => r.unexpectedExits.length);
  const lossesBefore = env.replicas.map((r) => r.leadershipLosses.length);
  for (let rep = 0; rep < repetitions; rep++) {
    const injectedAt = performance.now();
    const leader = env.leader;
    await scenario.inject(env);
    const generation = await env.touchProbe();
    // Watched from now on: a probe Ready during a held fault counts from the injection.
    const readiness = env.probeReady(generation);
    let from = scenario.measureFromHeal ? performance.now() : injectedAt;
    if (scenario.holdMs) {
      await sleep(scenario.holdMs - (performance.now() - injectedAt));
      await scenario.heal(env);
      from = performance.now();
    }
    const ready = await readiness;
    if (scenario.detectsDeadConnection) {
      // The leader's client replaced its pool: the dead connection was found (sampled each second).
      await env.until(
        () => (leader?.poolReplacedAt ?? 0) > injectedAt,
        60_000,
        "the dead connection to be found",
      );
      detections.push(leader.poolReplacedAt - injectedAt);
    }
    // Converged during a fault held longer than needed (latency, bandwidth): from the injection.
    const recovery = ready >= from ? ready - from : ready - injectedAt;
    recoveries.push(recovery);
    const detected =
      detections.length > rep ? `, dead connection found in ${(detections[rep] / 1000).toFixed(1)} s` : "";
    log(`  ${scenario.name} #${rep + 1}: recovered in ${(recovery / 1000).toFixed(1)} s${detected}`);
    await sleep(gapMs);
  }
  return {
    recoveries,
    detections,
    unexpectedExits: env.replicas.reduce((sum, r, i) => sum + r.unexpectedExits.length - exitsBefore[i], 0),
    leadershipLosses: env.replicas.reduce(
      (sum, r, i) => sum + r.leadershipLosses.length - lossesBefore[i],
      0,
    ),
  };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
