import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { controller } from "../controller/builder.js";
import { done } from "../controller/result.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { sleep } from "../util/index.js";
import { Manager } from "./manager.js";
import type { Runnable } from "./runnables.js";

let plane: ControlPlane;
let client: Client;

beforeAll(async () => ({ plane, client } = await startPlane()));
afterAll(() => stopPlane(plane, client));

/** A runnable that writes what happens to it into `log`, as `<replica> <name> started|stopped`. */
function recorder(log: string[], replica: string, name: string): Runnable {
  return {
    name,
    start: () => {
      log.push(`${replica} ${name} started`);
    },
    stop: () => {
      log.push(`${replica} ${name} stopped`);
    },
  };
}

function replica(log: string[], name: string): Manager {
  const manager = new Manager({
    client,
    leaderElection: {
      id: "runnables-test",
      namespace: "default",
      leaseDurationMs: 2_000,
      renewDeadlineMs: 1_500,
      retryPeriodMs: 200,
    },
    probes: false,
    metrics: false,
    tracing: false,
    handleSignals: false,
    onLeadershipLost: () => undefined,
  });
  manager.add(
    controller(ConfigMap)
      .named(`echo-${name}`)
      .inNamespace("default")
      .reconcile(() => done()),
  );
  manager.addRunnable(recorder(log, name, "reporter"), "leader");
  manager.addRunnable(recorder(log, name, "watcher"), "always");
  return manager;
}

describe("Manager runnables", () => {
  it("starts a leader-only runnable only on the leader, and on the standby once it takes over", async () => {
    const log: string[] = [];
    const a = replica(log, "a");
    const b = replica(log, "b");
    const runs = [a.start(), b.start()];
    await until(() => a.isLeader || b.isLeader, 10_000, "a leader");
    const [leader, standby] = a.isLeader ? [a, b] : [b, a];
    const [leaderName, standbyName] = a.isLeader ? ["a", "b"] : ["b", "a"];
    await leader.ready;
    await until(() => log.includes(`${standbyName} watcher started`), 10_000, "the standby's caches");
    // Longer than a few retry periods: the standby keeps trying for the Lease, and must not start it.
    await sleep(1_000);
    expect(log.filter((line) => line.includes("reporter"))).toEqual([`${leaderName} reporter started`]);
    expect(log).toContain(`${leaderName} watcher started`);
    // On every replica, `always` runs once the caches have synced, before the leader-only group.
    expect(log.indexOf(`${leaderName} watcher started`)).toBeLessThan(
      log.indexOf(`${leaderName} reporter started`),
    );

    await leader.stop();
    expect(log).toContain(`${leaderName} reporter stopped`);
    // The leader-only group stops before the rest.
    expect(log.indexOf(`${leaderName} reporter stopped`)).toBeLessThan(
      log.indexOf(`${leaderName} watcher stopped`),
    );
    await standby.ready;
    expect(log).toContain(`${standbyName} reporter started`);
    await standby.stop();
    await Promise.all(runs);
  });
});
