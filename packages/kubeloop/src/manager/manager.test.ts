import { spawn } from "node:child_process";
import { once } from "node:events";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readyz, startManager, startPlane, stopPlane, until } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { type KubeObject, resourceType } from "../client/types.js";
import { controller } from "../controller/builder.js";
import { rbacRoles } from "../controller/rbac.js";
import { ConfigMap, Secret } from "../k8s/index.js";
import type { Condition } from "../resources/conditions.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { sleep } from "../util/index.js";
import { Manager } from "./manager.js";

interface CounterObject extends KubeObject {
  status?: { conditions?: Condition[] };
}
const Counter = resourceType<CounterObject>("test.kubeloop.dev/v1", "Counter");
const logger = pino({ level: "silent" });

let plane: ControlPlane;
let client: Client;

beforeAll(async () => {
  ({ plane, client } = await startPlane({
    crds: [join(import.meta.dirname, "../../test/fixtures/controller/counters.yaml")],
  }));
});
afterAll(() => stopPlane(plane, client));

describe("Manager", () => {
  it("backs off a reconciler that keeps failing, and reports it in a condition, an event and /metrics", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "failing" } });
    await client.create({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Counter",
      metadata: { name: "broken", namespace: "failing" },
    });
    const attempts: number[] = [];
    const manager = new Manager({
      client,
      logger,
      probes: { port: 0 },
      metrics: { port: 0 },
      handleSignals: false,
    });
    manager.add(
      controller(Counter)
        .named("always-fails")
        .inNamespace("failing")
        .reconcile(() => {
          attempts.push(performance.now());
          throw new Error("the backend is down");
        }),
    );
    const running = manager.start();
    await manager.ready;
    await sleep(2_500);
    // 5 ms × 2ⁿ: about ten attempts fit in 2.5 s; without backoff there would be thousands.
    expect(attempts.length).toBeGreaterThanOrEqual(6);
    expect(attempts.length).toBeLessThanOrEqual(12);
    const counter = await client.get({ type: Counter, namespace: "failing", name: "broken" });
    expect(counter.status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "ReconcileError",
      message: "the backend is down",
    });
    await until(
      async () => {
        const events = await client.list(
          resourceType<KubeObject & { reason?: string; series?: { count: number } }>(
            "events.k8s.io/v1",
            "Event",
          ),
          {
            namespace: "failing",
          },
        );
        return events.items.some((e) => e.reason === "ReconcileError");
      },
      10_000,
      "a Warning event",
    );
    const metrics = await (await fetch(`http://127.0.0.1:${manager.ports.metrics}/metrics`)).text();
    expect(metrics).toMatch(
      /controller_runtime_reconcile_errors_total\{controller="always-fails"\} ([6-9]|1[0-2])/,
    );
    expect(metrics).toMatch(/workqueue_retries_total\{name="always-fails",controller="always-fails"\} \d+/);
    await manager.stop();
    await running;
  });

  it("is not ready while its primary watch is forbidden, and fails to start naming the cause", async () => {
    const limited = await Client.connect({
      kubeconfig: plane.kubeconfigPath,
      impersonate: { user: "system:serviceaccount:default:no-rights", groups: ["system:authenticated"] },
    });
    const manager = new Manager({
      client: limited,
      logger,
      probes: { port: 0 },
      metrics: false,
      cacheSyncTimeoutMs: 3_000,
      handleSignals: false,
    });
    manager.add(
      controller(Counter)
        .named("forbidden")
        .reconcile(() => undefined),
    );
    const running = manager.start();
    let body = "";
    await until(
      async () => {
        const answer = await readyz(manager);
        body = answer?.body ?? "";
        return answer?.status === 500 && body.includes("forbidden");
      },
      10_000,
      "/readyz to report the forbidden watch",
    );
    expect(body).toContain("[-]informers failed");
    await expect(running).rejects.toThrow(
      /Caches did not sync within 3s:\n {2}Counter \(test.kubeloop.dev\/v1\) in all namespaces: .*cannot list resource "counters"/,
    );
    await limited.close();
  });

  it("fails /healthz while every worker is stuck in a call that never returns, and recovers once it does", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "stuck" } });
    // A server that accepts and never answers: a reconcile calling it without a timeout hangs, as
    // one calling a wedged backend does. Only the event loop still runs: `ping` stays ok.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket)).listen(0, "127.0.0.1");
    await once(silent, "listening");
    const { port } = silent.address() as AddressInfo;
    const manager = new Manager({
      client,
      logger,
      probes: { port: 0, stallTimeoutMs: 3_000 },
      metrics: false,
      handleSignals: false,
    });
    const reconciled: string[] = [];
    manager.add(
      controller(ConfigMap)
        .named("stuck")
        .inNamespace("stuck")
        .concurrency(1)
        .reconcile(async (object) => {
          if (object.metadata?.name === "hang")
            await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined);
          reconciled.push(object.metadata?.name ?? "");
        }),
    );
    const running = manager.start();
    await manager.ready;
    const healthz = async () => {
      const response = await fetch(`http://127.0.0.1:${manager.ports.probes}/healthz?verbose`);
      return { status: response.status, body: await response.text() };
    };
    try {
      expect((await healthz()).status).toBe(200);
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "hang", namespace: "stuck" },
      });
      await until(() => sockets.size === 1, 10_000, "the reconcile to call the silent server");
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "next", namespace: "stuck" },
      });
      expect((await healthz()).status).toBe(200); // keys waiting a moment are no wedge
      await until(async () => (await healthz()).status === 500, 10_000, "/healthz to fail");
      expect((await healthz()).body).toMatch(
        /^\[\+\]ping ok\n\[-\]reconcilers failed: controller "stuck": 1 key\(s\) waiting, no worker took one for \d+ s \(1 reconcile\(s\) running, the longest for \d+ s\)\nhealthz check failed\n$/,
      );
      expect(reconciled).toEqual([]);
      for (const socket of sockets) socket.destroy(); // the backend answers at last (by hanging up)
      await until(async () => (await healthz()).status === 200, 10_000, "/healthz to recover");
      expect(reconciled).toEqual(["hang", "next"]);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
      await manager.stop();
      await running;
    }
  });

  it("finishes a slow reconcile on SIGTERM, naming what the shutdown waits for, releases its lease, and exits 0", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "slow" } });
    const script = join(import.meta.dirname, "../../test/scripts/slow-operator.mjs");
    const child = spawn(process.execPath, [script], {
      env: {
        ...process.env,
        KUBECONFIG: plane.kubeconfigPath,
        // Longer than the 5 s after which a shutdown step still waiting is named in a warning.
        SLOW_MS: "6000",
        LEASE_NAMESPACE: "slow",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const lease = resourceType<KubeObject & { spec?: { holderIdentity?: string } }>(
      "coordination.k8s.io/v1",
      "Lease",
    );
    await until(
      async () => {
        const found = await client
          .get({ type: lease, namespace: "slow", name: "slow-operator" })
          .catch(() => undefined);
        return Boolean(found?.spec?.holderIdentity);
      },
      20_000,
      "leadership",
    );
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "heavy", namespace: "slow", labels: { slow: "true" } },
    });
    await until(() => stderr.includes("reconcile started heavy"), 10_000, "the slow reconcile");
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toContain("reconcile finished heavy");
    expect(stderr.indexOf("reconcile finished heavy")).toBeLessThan(stderr.indexOf("manager returned"));
    const waiting = stdout
      .split("\n")
      .filter((line) => line.includes("shutdown still waiting"))
      .map((line) => JSON.parse(line) as { step: string });
    // Each controller is a runnable of its own: the warning names the one that holds the shutdown.
    expect(waiting.map((line) => line.step)).toContain('controller "slow"');
    const released = await client.get({ type: lease, namespace: "slow", name: "slow-operator" });
    expect(released.spec?.holderIdentity ?? "").toBe("");
  });
});

describe("Manager under generated RBAC", () => {
  it("runs a namespace-bound controller with nothing but the Role generated for that namespace", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "team-a" } });
    // A ConfigMap labelled copy=yes gets a Secret with the same data.
    const copier = controller(ConfigMap)
      .named("copier")
      .inNamespace("team-a")
      .owns(Secret)
      .reconcile(async (configMap, ctx) => {
        if (ctx.gone || configMap.metadata?.labels?.copy !== "yes") return;
        await ctx.apply({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: configMap.metadata.name ?? "", namespace: "team-a" },
          stringData: configMap.data ?? {},
        });
      });
    const roles = rbacRoles([copier.spec]);
    expect(roles.cluster).toEqual([]);
    const rules = roles.namespaced["team-a"];
    expect(rules).toBeDefined();
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "copier", namespace: "team-a" },
      rules,
    });
    const user = "system:serviceaccount:team-a:copier";
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "copier", namespace: "team-a" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "copier" },
      subjects: [{ kind: "User", name: user, apiGroup: "rbac.authorization.k8s.io" }],
    });
    const limited = await Client.connect({ kubeconfig: plane.kubeconfigPath, impersonate: { user } });
    const { manager, running } = await startManager({ client: limited, logger }, copier);
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "settings", namespace: "team-a", labels: { copy: "yes" } },
      data: { color: "blue" },
    });
    await until(
      async () => {
        const secret = await client
          .get({ type: Secret, namespace: "team-a", name: "settings" })
          .catch(() => undefined);
        return Buffer.from(secret?.data?.color ?? "", "base64").toString() === "blue";
      },
      15_000,
      "the copied Secret",
    );
    // Nothing beyond the namespace: the same identity may not list ConfigMaps cluster-wide.
    await expect(limited.list(ConfigMap)).rejects.toThrow(/cannot list resource "configmaps"/);
    await manager.stop();
    await running;
    await limited.close();
  });
});
