import type { Lease } from "kubernetes-types/coordination/v1.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane, until } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { loadConfig } from "../client/config.js";
import { Forbidden } from "../client/errors.js";
import { Lease as LeaseType, Role, RoleBinding } from "../k8s/index.js";
import { microTime } from "../resources/events.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { startFaultProxy } from "../testing/faults/fault-proxy.js";
import { sleep } from "../util/index.js";
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  LeaderElector,
  type LeaderElectorOptions,
  LeadershipLost,
  type StoppedLeading,
} from "./leader-election.js";

let plane: ControlPlane;
let client: Client;
let counter = 0;
const NS = "default";
/** Short timings, in the proportions of the defaults' safety margins (lease > renew > 1.2 × retry). */
const FAST = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 };
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const running: LeaderElector[] = [];

beforeAll(async () => ({ plane, client } = await startPlane()));
afterEach(async () => {
  await Promise.all(running.splice(0).map((elector) => elector.stop()));
});
afterAll(() => stopPlane(plane, client));

function leaseName(): string {
  return `lease-${++counter}`;
}

/** An elector with a record of what it went through; `start()` runs it until the test ends. */
function candidate(name: string, identity: string, options: Partial<LeaderElectorOptions> = {}) {
  const log: string[] = [];
  const stopped: StoppedLeading[] = [];
  const errors: Error[] = [];
  const status: boolean[] = [];
  let leadingSignal: AbortSignal | undefined;
  const elector = new LeaderElector({
    client,
    id: name,
    namespace: NS,
    identity,
    ...FAST,
    onStartedLeading: (signal) => {
      leadingSignal = signal;
      log.push("started");
    },
    onStoppedLeading: (event) => {
      stopped.push(event);
      log.push(event.lost ? "lost" : "stopped");
    },
    onNewLeader: (leader) => log.push(`leader ${leader}`),
    onError: (error) => errors.push(error),
    metrics: { set: (leading) => status.push(leading) },
    ...options,
  });
  const abort = new AbortController();
  let done: Promise<void> | undefined;
  return {
    elector,
    log,
    stopped,
    errors,
    status,
    abort,
    get leadingSignal() {
      return leadingSignal;
    },
    start() {
      running.push(elector);
      done = elector.run(abort.signal);
      return this;
    },
    get done() {
      return done;
    },
  };
}

/** Samples `isLeader` of every elector every 20 ms, and counts the samples where more than one leads. */
function watchOverlap(electors: LeaderElector[]) {
  let overlaps = 0;
  let samples = 0;
  const timer = setInterval(() => {
    samples++;
    if (electors.filter((elector) => elector.isLeader).length > 1) overlaps++;
  }, 20);
  return {
    stop() {
      clearInterval(timer);
      return { overlaps, samples };
    },
  };
}

function readLease(name: string): Promise<Lease> {
  return client.get({ type: LeaseType, namespace: NS, name });
}

describe("LeaderElector: options", () => {
  it("defaults to client-go's 15 s / 10 s / 2 s and a hostname_uuid identity", () => {
    const elector = new LeaderElector({ client: {} as Client, id: "op", namespace: NS });
    expect([elector.leaseDurationMs, elector.renewDeadlineMs, elector.retryPeriodMs]).toEqual([
      15_000, 10_000, 2_000,
    ]);
    expect([DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS]).toEqual([
      15_000, 10_000, 2_000,
    ]);
    expect(elector.identity).toMatch(/^.+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(new LeaderElector({ client: {} as Client, id: "op", namespace: NS }).identity).not.toBe(
      elector.identity,
    );
    expect(elector.isLeader).toBe(false);
  });

  it("refuses timings that would let two leaders overlap or leave no room to renew", () => {
    const base = { client: {} as Client, id: "op", namespace: NS };
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 })).toThrow(
      /must be greater than renewDeadlineMs/,
    );
    expect(() => new LeaderElector({ ...base, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 })).toThrow(
      /1.2 × retryPeriodMs/,
    );
    expect(
      () => new LeaderElector({ ...base, leaseDurationMs: 500, renewDeadlineMs: 400, retryPeriodMs: 100 }),
    ).toThrow(/at least 1000/);
    expect(() => new LeaderElector({ ...base, namespace: "" })).toThrow(/id \(its name\) and namespace/);
  });

  it("writes times as Kubernetes MicroTime: six fractional digits, UTC", () => {
    expect(microTime(Date.UTC(2026, 10, 21, 23, 0, 0, 123) + 0.456)).toBe("2026-11-21T23:00:00.123456Z");
    expect(microTime(Date.UTC(2026, 10, 21, 23, 0, 0))).toBe("2026-11-21T23:00:00.000000Z");
    expect(microTime()).toMatch(MICRO_TIME);
  });
});

describe("LeaderElector on a real API server", () => {
  it("elects exactly one of two candidates, creates the Lease, and both learn who leads", async () => {
    const name = leaseName();
    const a = candidate(name, "a").start();
    const b = candidate(name, "b").start();
    const overlap = watchOverlap([a.elector, b.elector]);
    await until(() => a.elector.isLeader || b.elector.isLeader, 10_000, "a leader");
    const [leader, standby] = a.elector.isLeader ? [a, b] : [b, a];
    await until(
      () => standby.elector.leader === leader.elector.identity,
      5_000,
      "the standby to see the leader",
    );
    const first = await readLease(name);
    // Several renewals later: the same leader, renewing; the standby still waiting.
    await sleep(1_500);
    const later = await readLease(name);
    expect(overlap.stop().overlaps).toBe(0);
    expect(leader.elector.isLeader).toBe(true);
    expect(standby.elector.isLeader).toBe(false);
    expect(leader.log).toEqual([`leader ${leader.elector.identity}`, "started"]);
    expect(standby.log).toEqual([`leader ${leader.elector.identity}`]);
    expect(leader.status).toEqual([false, true]);
    expect(standby.status).toEqual([false]);
    // Losing the race to create or update the Lease is expected, not an error.
    expect([...leader.errors, ...standby.errors]).toEqual([]);

    expect(first.spec).toMatchObject({
      holderIdentity: leader.elector.identity,
      leaseDurationSeconds: 2,
      leaseTransitions: 0,
    });
    expect(first.spec?.acquireTime).toMatch(MICRO_TIME);
    expect(first.spec?.renewTime).toMatch(MICRO_TIME);
    expect(later.spec?.holderIdentity).toBe(leader.elector.identity);
    expect(later.spec?.acquireTime).toBe(first.spec?.acquireTime);
    expect(later.spec?.leaseTransitions).toBe(0);
    expect(Date.parse(later.spec?.renewTime ?? "")).toBeGreaterThan(Date.parse(first.spec?.renewTime ?? ""));
    expect(Date.parse(later.spec?.renewTime ?? "")).toBeGreaterThan(Date.now() - 1_000); // renewed every 200 ms
  });

  it("a leader stopped with releaseOnCancel hands the Lease back, and the standby leads within a retry period", async () => {
    const name = leaseName();
    // A long lease: without the release, the standby would wait 10 s.
    const slow = { leaseDurationMs: 10_000, renewDeadlineMs: 8_000, retryPeriodMs: 200 };
    const a = candidate(name, "a", { ...slow, releaseOnCancel: true }).start();
    await until(() => a.elector.isLeader, 10_000, "a to lead");
    const b = candidate(name, "b", slow).start();
    await until(() => b.elector.leader === "a", 5_000, "b to see a");
    const overlap = watchOverlap([a.elector, b.elector]);

    const stopping = performance.now();
    await a.elector.stop();
    expect(a.elector.isLeader).toBe(false);
    expect(a.leadingSignal?.aborted).toBe(true);
    expect(a.stopped).toEqual([{ lost: false }]);
    expect(a.status).toEqual([false, true, false]);
    await a.done; // run() has returned
    await until(() => b.elector.isLeader, 5_000, "b to take over");
    const takeover = performance.now() - stopping;
    expect(overlap.stop().overlaps).toBe(0);
    // Within one jittered retry (≤ 2.2 × 200 ms) plus a few requests: far below the 10 s lease.
    expect(takeover).toBeLessThan(1_500);
    const lease = await readLease(name);
    expect(lease.spec).toMatchObject({ holderIdentity: "b", leaseDurationSeconds: 10, leaseTransitions: 1 });
    expect(b.log).toEqual(["leader a", "leader b", "started"]);
  });

  it("the released Lease has an empty holder and a 1 s duration; without releaseOnCancel it stays held", async () => {
    const released = leaseName();
    const a = candidate(released, "a", { releaseOnCancel: true }).start();
    await until(() => a.elector.isLeader, 10_000, "a to lead");
    const before = await readLease(released);
    await a.elector.stop();
    const after = await readLease(released);
    expect(after.spec?.holderIdentity ?? "").toBe("");
    expect(after.spec?.leaseDurationSeconds).toBe(1);
    expect(after.spec?.leaseTransitions).toBe(before.spec?.leaseTransitions);
    expect(after.spec?.renewTime).toMatch(MICRO_TIME);

    const kept = leaseName();
    const c = candidate(kept, "c").start();
    await until(() => c.elector.isLeader, 10_000, "c to lead");
    await c.elector.stop();
    expect(c.stopped).toEqual([{ lost: false }]);
    expect((await readLease(kept)).spec).toMatchObject({ holderIdentity: "c", leaseDurationSeconds: 2 });
  });

  it("a leader killed without release is replaced after the lease duration, never overlapping, transitions + 1", async () => {
    const name = leaseName();
    const a = candidate(name, "a").start();
    await until(() => a.elector.isLeader, 10_000, "a to lead");
    const b = candidate(name, "b").start();
    await until(() => b.elector.leader === "a", 5_000, "b to see a");
    const before = await readLease(name);
    const overlap = watchOverlap([a.elector, b.elector]);

    // A kill: the run ends without a release; nobody renews the Lease any more.
    const killed = performance.now();
    a.abort.abort();
    await a.done;
    expect(a.elector.isLeader).toBe(false);
    await until(() => b.elector.isLeader, 10_000, "b to take over");
    const takeover = performance.now() - killed;
    expect(overlap.stop().overlaps).toBe(0);
    // Not before the lease ran out on b's clock (a renewed at most a retry period before the kill)…
    expect(takeover).toBeGreaterThan(FAST.leaseDurationMs - FAST.retryPeriodMs - 100);
    // …and within the lease plus one jittered retry (2.2 × 200 ms), with room for a busy machine.
    expect(takeover).toBeLessThan(FAST.leaseDurationMs + 2.2 * FAST.retryPeriodMs + 1_000);

    const after = await readLease(name);
    expect(after.spec).toMatchObject({ holderIdentity: "b", leaseDurationSeconds: 2, leaseTransitions: 1 });
    expect(after.spec?.acquireTime).not.toBe(before.spec?.acquireTime);
    expect(Date.parse(after.spec?.acquireTime ?? "")).toBeGreaterThan(
      Date.parse(before.spec?.renewTime ?? ""),
    );
    expect(b.log).toEqual(["leader a", "leader b", "started"]);
  });

  it("a leader whose renewals are Forbidden loses leadership within the renew deadline, before anyone takes over", async () => {
    const name = leaseName();
    const user = plane.addUser("elector");
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "elector", namespace: NS },
      rules: [
        { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
      ],
    });
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "elector", namespace: NS },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "elector" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "elector" }],
    });
    const userClient = await Client.connect({ kubeconfig: user.kubeconfigPath });
    try {
      const a = candidate(name, "a", { client: userClient }).start();
      await until(() => a.elector.isLeader, 15_000, "a to lead (once its RBAC is in effect)");
      const b = candidate(name, "b").start(); // the admin: its requests keep working
      await until(() => b.elector.leader === "a", 5_000, "b to see a");
      const overlap = watchOverlap([a.elector, b.elector]);
      let lostAt = 0;
      let bLeadsAt = 0;
      const lost = until(() => !a.elector.isLeader, 10_000, "a to lose").then(() => {
        lostAt = performance.now();
      });
      const tookOver = until(() => b.elector.isLeader, 10_000, "b to take over").then(() => {
        bLeadsAt = performance.now();
      });

      const revoked = performance.now();
      await client.delete(RoleBinding, "elector", { namespace: NS });
      await Promise.all([lost, tookOver]);
      expect(overlap.stop().overlaps).toBe(0);

      // a renews every 200 ms; its last success was sent just before the revocation, and it gives
      // up 1.5 s after that: not at the first failure, and not later than the deadline.
      const lostAfter = lostAt - revoked;
      expect(lostAfter).toBeGreaterThan(FAST.renewDeadlineMs - FAST.retryPeriodMs - 300);
      expect(lostAfter).toBeLessThan(FAST.renewDeadlineMs + 300);
      expect(bLeadsAt).toBeGreaterThan(lostAt);
      expect(a.stopped).toHaveLength(1);
      const event = a.stopped[0];
      expect(event?.lost).toBe(true);
      const error = event?.lost ? event.error : undefined;
      expect(error).toBeInstanceOf(LeadershipLost);
      expect(error?.message).toMatch(/no renewal succeeded within 1.5s \(last error: Forbidden: .*leases/);
      expect(error?.cause).toBeInstanceOf(Forbidden);
      expect(a.leadingSignal?.aborted).toBe(true);
      expect(a.leadingSignal?.reason).toBe(error);
      expect(a.errors.some((failure) => failure instanceof Forbidden)).toBe(true);
      expect(a.status).toEqual([false, true, false]);
      await a.done; // a lost leader's run ends: no second campaign
      expect(a.log).toEqual(["leader a", "started", "lost"]);
      expect((await readLease(name)).spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 1 });
    } finally {
      await client.delete(Role, "elector", { namespace: NS });
      await userClient.close();
    }
  });

  it("a leader whose API server stops answering loses leadership at the renew deadline, not a request timeout later", async () => {
    const name = leaseName();
    const proxy = await startFaultProxy({ target: new URL(plane.server) });
    const config = await loadConfig({ kubeconfig: plane.kubeconfigPath });
    const proxied = new Client({ ...config, server: proxy.url });
    try {
      const a = candidate(name, "a", { client: proxied }).start();
      await until(() => a.elector.isLeader, 10_000, "a to lead");
      const b = candidate(name, "b").start();
      await until(() => b.elector.leader === "a", 5_000, "b to see a");
      const overlap = watchOverlap([a.elector, b.elector]);

      const hung = performance.now();
      proxy.stall({ newConnections: true }); // connections stay open, no bytes pass: requests hang, nothing errors
      await until(() => !a.elector.isLeader, 5_000, "a to lose");
      const lostAfter = performance.now() - hung;
      await until(() => b.elector.isLeader, 10_000, "b to take over");
      expect(overlap.stop().overlaps).toBe(0);
      expect(lostAfter).toBeLessThan(FAST.renewDeadlineMs + 300);
      const event = a.stopped[0];
      expect(event?.lost && event.error.message).toMatch(/no renewal succeeded within 1.5s/);
      expect(a.errors.map(String)).toContain(`Error: Lease ${NS}/${name}: no answer within 1000 ms`);
      // run() returns at once too: it does not wait for the hung connection to time out.
      const ending = performance.now();
      await a.done;
      expect(performance.now() - ending).toBeLessThan(100);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });

  it("a leader that finds the Lease taken by another holder stops leading at once", async () => {
    const name = leaseName();
    const a = candidate(name, "a").start();
    await until(() => a.elector.isLeader, 10_000, "a to lead");
    // Someone (an operator with kubectl, a buggy replica) writes another holder in.
    const lease = await readLease(name);
    await client.update({
      ...lease,
      spec: { ...lease.spec, holderIdentity: "intruder", renewTime: microTime() },
    });
    await until(() => !a.elector.isLeader, 2_000, "a to step down");
    const event = a.stopped[0];
    expect(event?.lost && event.error.message).toBe(`Lease ${NS}/${name} is now held by intruder`);
    expect(a.log).toEqual(["leader a", "started", "leader intruder", "lost"]);
  });

  it("runs once at a time, can run again after stopping, and ends at once if its signal is already aborted", async () => {
    const name = leaseName();
    const a = candidate(name, "a").start();
    expect(() => a.elector.run()).toThrow(/already running/);
    await until(() => a.elector.isLeader, 10_000, "a to lead");
    await a.elector.stop();
    const again = a.elector.run();
    await until(() => a.elector.isLeader, 10_000, "a to lead again");
    await a.elector.stop();
    await again;
    await a.elector.run(AbortSignal.abort());
    expect(a.elector.isLeader).toBe(false);
    expect(a.log.filter((entry) => entry === "started")).toHaveLength(2);
  });
});
