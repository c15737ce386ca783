import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection, startPlane, stopPlane, until } from "../../test/helpers.js";
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

/** A manager without leader election: its `leader` group starts once the caches have synced. */
function single(): Manager {
  return new Manager({
    client,
    probes: false,
    metrics: false,
    tracing: false,
    handleSignals: false,
    logLevel: process.env.TEST_LOG ?? "silent",
  });
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

describe("Manager runnables added after start()", () => {
  it("starts runnables and controllers added to running groups, and refuses them once stopping", async () => {
    const log: string[] = [];
    const manager = single();
    const run = manager.start();
    await manager.ready;
    manager.addRunnable(recorder(log, "late", "watcher"), "always");
    manager.addRunnable(recorder(log, "late", "reporter"), "leader");
    await until(() => log.length === 2, 5_000, "both late runnables started");
    expect(log.sort()).toEqual(["late reporter started", "late watcher started"]);

    // A controller added now gets its informers then starts: it reconciles what exists.
    const name = `late-${Date.now()}`;
    await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" } });
    const reconciled: string[] = [];
    manager.add(
      controller(ConfigMap)
        .named("late-controller")
        .inNamespace("default")
        .reconcile((cm) => {
          reconciled.push(cm.metadata?.name ?? "");
          return done();
        }),
    );
    await until(() => reconciled.includes(name), 15_000, "the late controller's reconcile");

    const stopping = manager.stop();
    expect(() => manager.addRunnable(recorder(log, "too-late", "x"), "always")).toThrow(
      /the manager is stopping/,
    );
    await stopping;
    await run;
    expect(log).toContain("late reporter stopped");
    expect(log).toContain("late watcher stopped");
  });
});

describe("A runnable that fails", () => {
  it("stops the manager through fail(error): start() rejects with that error", async () => {
    const log: string[] = [];
    const manager = single();
    manager.addRunnable(recorder(log, "m", "bystander"), "always");
    let fail: ((error: Error) => void) | undefined;
    manager.addRunnable(
      {
        name: "device-watcher",
        start: (context) => {
          fail = context.fail;
        },
        stop: () => {},
      },
      "leader",
    );
    const run = rejection(manager.start());
    await manager.ready;
    fail?.(new Error("the device is gone"));
    expect((await run).message).toBe("the device is gone");
    // Stopped gracefully, not abandoned: the other groups' runnables were stopped.
    expect(log).toContain("m bystander stopped");
  });

  it("stops the manager when a runnable added after start() rejects in start()", async () => {
    const manager = single();
    const run = rejection(manager.start());
    await manager.ready;
    manager.addRunnable(
      {
        name: "broken",
        start: () => Promise.reject(new Error("broken from the start")),
        stop: () => {},
      },
      "always",
    );
    expect((await run).message).toBe("broken from the start");
  });
});
