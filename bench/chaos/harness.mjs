// The chaos suite's test ground, shared by chaos.mjs (scenarios), soak.mjs and chaos.test.ts:
// a real control plane; the Widget operator (operator.ts) as supervised replicas that reach the
// API server through a fault-injecting proxy as their own user (so API Priority and Fairness can
// single them out); a validating webhook on widgets/status that the API server calls on every
// status write; a writer changing Widget specs continuously; and the checkers: no lost update,
// no key reconciled by two replicas at once, replicas alive.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:https";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Client } from "kubeloop/client";
import { ConfigMap } from "kubeloop/k8s";
import { ControlPlane, localWebhookServing } from "kubeloop/testing";
import { startFaultProxy } from "kubeloop/testing/faults";
import { Widget } from "../peers/widget.ts";

const here = fileURLToPath(new URL(".", import.meta.url));
export const OPERATOR_USER = "chaos-operator";
const WIDGETS_RESOURCE = "widgets.bench.kubeloop.dev";

/**
 * Starts everything. `widgets`: how many Widgets the workload has; `replicas`: operator processes
 * (one leads, the others stand by); `onStats(sample)`: each replica's `S` line, parsed.
 */
export async function startEnvironment({
  widgets,
  replicas = 2,
  leaderElection = true,
  namespace = "chaos",
  log = () => {},
  onStats,
}) {
  // Widgets bypass the watch cache, so that a compacted etcd makes a resume point Gone (410).
  const plane = await new ControlPlane({
    apiServerArgs: [`--watch-cache-sizes=${WIDGETS_RESOURCE}#0`],
  }).start();
  const env = new Environment(plane, namespace, log, onStats);
  env.leaderElection = leaderElection;
  // Interrupted (Ctrl-C, kill): stop the replicas and the control plane before leaving.
  env.onSignal = () => {
    env.stop().finally(() => process.exit(130));
  };
  process.once("SIGINT", env.onSignal);
  process.once("SIGTERM", env.onSignal);
  try {
    await env.setUp(widgets, replicas);
  } catch (error) {
    await env.stop();
    throw error;
  }
  return env;
}

class Environment {
  constructor(plane, namespace, log, onStats) {
    this.plane = plane;
    this.namespace = namespace;
    this.log = log;
    this.onStats = onStats;
    /** key → intervals [{ replica, start, end }] of reconciles, for the exclusive-access checker. */
    this.intervals = new Map();
    /** widget name → the last generation the writer wrote. */
    this.written = new Map();
    this.replicas = [];
    this.writes = 0;
    this.writeErrors = 0;
  }

  async setUp(widgets, replicas) {
    const { plane, namespace } = this;
    await plane.installCrdObjects([Widget.crd()]);
    this.admin = await Client.connect({ kubeconfig: plane.kubeconfigPath });
    const admin = this.admin;
    // The operator's own user: system:masters (the admin) is exempt from API Priority and Fairness.
    const user = plane.addUser(OPERATOR_USER);
    this.asOperator = await Client.connect({ kubeconfig: user.kubeconfigPath, maxRetries: 0 });
    await admin.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: OPERATOR_USER },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "User", name: OPERATOR_USER, apiGroup: "rbac.authorization.k8s.io" }],
    });
    this.proxy = await startFaultProxy({ target: new URL(plane.server) });
    this.kubeconfig = `${user.kubeconfigPath}.via-proxy`;
    writeFileSync(
      this.kubeconfig,
      readFileSync(user.kubeconfigPath, "utf8").replace(/server: \S+/, `server: ${this.proxy.url}`),
    );
    await this.startWebhook();
    await admin.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    this.names = Array.from({ length: widgets }, (_, i) => `w-${i}`);
    const queue = [...this.names, "probe"];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let name = queue.shift(); name; name = queue.shift()) {
          const created = await admin.create({
            apiVersion: Widget.apiVersion,
            kind: Widget.kind,
            metadata: { name, namespace },
            spec: { replicas: 1, data: { v: "0" } },
          });
          if (name !== "probe") this.written.set(name, created.metadata.generation);
        }
      }),
    );
    for (let i = 0; i < replicas; i++) this.replicas.push(new Replica(this, `replica-${i}`));
    await this.until(() => this.replicas.some((r) => r.leading), 120_000, "a leader");
    await this.converged(180_000);
  }

  /** The webhook the API server calls on widgets/status: answers allowed, or HTTP 500, or is down. */
  async startWebhook() {
    const serving = await localWebhookServing();
    this.webhookMode = "allow";
    this.webhookCalls = 0;
    const tls = {
      cert: readFileSync(join(serving.certDir, "tls.crt")),
      key: readFileSync(join(serving.certDir, "tls.key")),
    };
    const handler = (request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        this.webhookCalls++;
        if (this.webhookMode === "error") {
          response.writeHead(500).end("injected failure");
          return;
        }
        const review = JSON.parse(body);
        response.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            apiVersion: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            response: { uid: review.request.uid, allowed: true },
          }),
        );
      });
    };
    this.webhookServer = createServer(tls, handler);
    this.webhookServer.listen(serving.port, "127.0.0.1");
    await once(this.webhookServer, "listening");
    this.webhook = { serving, tls, handler };
    await this.admin.create({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "chaos-widget-status" },
      webhooks: [
        {
          name: "status.widgets.bench.kubeloop.dev",
          clientConfig: { url: `https://127.0.0.1:${serving.port}/validate`, caBundle: serving.caBundle },
          rules: [
            {
              apiGroups: ["bench.kubeloop.dev"],
              apiVersions: ["v1"],
              operations: ["UPDATE"],
              resources: ["widgets/status"],
            },
          ],
          failurePolicy: "Fail",
          sideEffects: "None",
          admissionReviewVersions: ["v1"],
          timeoutSeconds: 5,
        },
      ],
    });
  }

  async stopWebhook() {
    const server = this.webhookServer;
    this.webhookServer = undefined;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  async restartWebhook() {
    this.webhookServer = createServer(this.webhook.tls, this.webhook.handler);
    this.webhookServer.listen(this.webhook.serving.port, "127.0.0.1");
    await once(this.webhookServer, "listening");
  }

  /** Changes Widget specs continuously (`perSecond` in all), recording each generation written. */
  startWriter(perSecond) {
    this.writing = true;
    let counter = 0;
    const workers = 4;
    const loop = async () => {
      while (this.writing) {
        const started = performance.now();
        const name = this.names[Math.floor(Math.random() * this.names.length)];
        try {
          const written = await this.admin.patch(
            Widget,
            name,
            { spec: { data: { v: String(++counter) } } },
            { namespace: this.namespace },
          );
          const generation = written.metadata.generation;
          if (generation > (this.written.get(name) ?? 0)) this.written.set(name, generation);
          this.writes++;
        } catch {
          this.writeErrors++; // e.g. the API server restarting: not written, nothing to check
        }
        await sleep(Math.max(0, (workers * 1000) / perSecond - (performance.now() - started)));
      }
    };
    this.writers = Array.from({ length: workers }, loop);
  }

  async stopWriter() {
    this.writing = false;
    await Promise.all(this.writers ?? []);
  }

  /** Changes the probe Widget; resolves with its new generation. */
  async touchProbe() {
    const written = await this.admin.patch(
      Widget,
      "probe",
      { spec: { data: { at: String(Date.now()) } } },
      { namespace: this.namespace },
    );
    return written.metadata.generation;
  }

  /** Resolves with the time (performance.now()) the probe was seen Ready at `generation`. */
  async probeReady(generation, timeoutMs = 180_000) {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const probe = await this.admin
        .get(Widget, "probe", { namespace: this.namespace })
        .catch(() => undefined);
      if (probe && readyAt(probe, generation)) return performance.now();
      if (performance.now() > deadline)
        throw new Error(`the probe did not become Ready at generation ${generation}`);
      await sleep(100);
    }
  }

  /**
   * Lost updates: waits until every Widget is Ready with observedGeneration equal to its generation,
   * which is at least the last one written, and its ConfigMap holds its spec; then returns the keys
   * still wrong (none, when nothing was lost).
   */
  async converged(timeoutMs) {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const wrong = await this.unconverged();
      if (wrong.length === 0 || performance.now() > deadline) return wrong;
      await sleep(1000);
    }
  }

  async unconverged() {
    const widgets = await this.admin.list(Widget, { namespace: this.namespace }).catch(() => undefined);
    const maps = await this.admin.list(ConfigMap, { namespace: this.namespace }).catch(() => undefined);
    if (!widgets || !maps) return ["(list failed)"];
    const data = new Map(maps.items.map((cm) => [cm.metadata.name, cm.data ?? {}]));
    const wrong = [];
    for (const widget of widgets.items) {
      const name = widget.metadata.name;
      const generation = widget.metadata.generation;
      const ok =
        readyAt(widget, generation) &&
        generation >= (this.written.get(name) ?? 0) &&
        JSON.stringify(data.get(name)) === JSON.stringify(widget.spec.data);
      if (!ok) wrong.push(name);
    }
    return wrong;
  }

  /** Double reconciles: pairs of reconciles of one key that overlapped in time. */
  doubleReconciles() {
    let doubles = 0;
    for (const intervals of this.intervals.values()) {
      const sorted = intervals.filter((i) => i.start !== undefined).sort((a, b) => a.start - b.start);
      let end = Number.NEGATIVE_INFINITY;
      for (const interval of sorted) {
        const stop = interval.end ?? Number.POSITIVE_INFINITY;
        if (interval.start < end) doubles++;
        end = Math.max(end, stop);
      }
    }
    return doubles;
  }

  /** Forgets finished reconciles, so a long run's checker holds only what it still needs. */
  pruneIntervals() {
    for (const [key, intervals] of this.intervals) {
      const open = intervals.filter((i) => i.end === undefined);
      const last = intervals.filter((i) => i.end !== undefined).sort((a, b) => b.end - a.end)[0];
      const kept = last ? [...open, last] : open;
      if (kept.length) this.intervals.set(key, kept);
      else this.intervals.delete(key);
    }
  }

  get leader() {
    return this.replicas.find((r) => r.leading && r.child);
  }

  /** The fault ground's API Priority and Fairness rule: the operator's workload requests rejected. */
  async startRejecting() {
    await this.admin.create({
      apiVersion: "flowcontrol.apiserver.k8s.io/v1",
      kind: "PriorityLevelConfiguration",
      metadata: { name: "chaos-starved" },
      spec: {
        type: "Limited",
        limited: {
          nominalConcurrencyShares: 0,
          lendablePercent: 0,
          borrowingLimitPercent: 0,
          limitResponse: { type: "Reject" },
        },
      },
    });
    await this.admin.create({
      apiVersion: "flowcontrol.apiserver.k8s.io/v1",
      kind: "FlowSchema",
      metadata: { name: "chaos-operator" },
      spec: {
        priorityLevelConfiguration: { name: "chaos-starved" },
        matchingPrecedence: 100,
        distinguisherMethod: { type: "ByUser" },
        rules: [
          {
            subjects: [{ kind: "User", user: { name: OPERATOR_USER } }],
            resourceRules: [
              {
                verbs: ["*"],
                apiGroups: ["bench.kubeloop.dev", ""],
                resources: ["widgets", "widgets/status", "configmaps"],
                namespaces: ["*"],
                clusterScope: true,
              },
            ],
          },
        ],
      },
    });
    await this.rejected(true);
  }

  /** Resolves once the operator's requests are rejected with 429 (APF applies configuration asynchronously). */
  async rejected(expected) {
    await this.until(
      async () => {
        const error = await this.asOperator.list(Widget, { namespace: this.namespace, limit: 1 }).then(
          () => undefined,
          (e) => e,
        );
        return expected ? error?.code === 429 : !error;
      },
      15_000,
      expected
        ? "API Priority and Fairness to reject the operator"
        : "API Priority and Fairness to admit the operator",
    );
  }

  async stopRejecting() {
    const flowcontrol = "/apis/flowcontrol.apiserver.k8s.io/v1";
    await this.admin.transport.request({
      method: "DELETE",
      path: `${flowcontrol}/flowschemas/chaos-operator`,
    });
    await this.admin.transport.request({
      method: "DELETE",
      path: `${flowcontrol}/prioritylevelconfigurations/chaos-starved`,
    });
    await this.rejected(false);
  }

  async until(check, timeoutMs, what) {
    const deadline = performance.now() + timeoutMs;
    while (!(await check())) {
      if (performance.now() > deadline)
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await sleep(100);
    }
  }

  async stop() {
    process.off("SIGINT", this.onSignal);
    process.off("SIGTERM", this.onSignal);
    this.writing = false;
    await Promise.all(this.replicas.map((r) => r.stop()));
    await this.admin?.close();
    await this.asOperator?.close();
    await this.proxy?.close();
    if (this.webhookServer) await this.stopWebhook().catch(() => {});
    this.webhook?.serving.dispose();
    await this.plane.stop();
  }
}

function readyAt(widget, generation) {
  const ready = widget.status?.conditions?.find((c) => c.type === "Ready");
  return (
    widget.metadata.generation === generation &&
    widget.status?.observedGeneration === generation &&
    ready?.status === "True" &&
    ready.observedGeneration === generation
  );
}

/**
 * One operator process under a supervisor: restarted 1 s after it exits, as a Deployment would.
 * Exits are told apart: killed by the suite, leadership lost (leader election exits on purpose),
 * or a crash (anything else: the checker's failure).
 */
class Replica {
  constructor(env, name) {
    this.env = env;
    this.name = name;
    this.exits = [];
    this.starts = 0;
    this.start();
  }

  start() {
    this.starts++;
    this.leading = false;
    this.killing = false;
    this.stderr = "";
    const child = spawn(
      process.execPath,
      ["--disable-warning=ExperimentalWarning", join(here, "operator.ts")],
      {
        env: {
          ...process.env,
          KUBECONFIG: this.env.kubeconfig,
          REPLICA: this.name,
          LEADER_ELECTION: String(this.env.leaderElection),
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.child = child;
    const open = new Map();
    let buffer = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      buffer += chunk;
      let newline = buffer.indexOf("\n");
      while (newline >= 0) {
        this.line(buffer.slice(0, newline), open);
        buffer = buffer.slice(newline + 1);
        newline = buffer.indexOf("\n");
      }
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      this.stderr = (this.stderr + chunk).slice(-4000);
    });
    child.on("exit", (code, signal) => {
      const at = performance.timeOrigin + performance.now();
      // A reconcile cut short by the process's end ended then.
      for (const interval of open.values()) interval.end = at;
      // Leader election exits the process on purpose when it cannot renew the Lease in time (a
      // network outage longer than the renew deadline): a restart, not a crash.
      const kind = this.killing ? "killed" : /LeadershipLost/.test(this.stderr) ? "leadership lost" : "crash";
      this.exits.push({ code, signal, kind, at: Date.now(), stderr: this.stderr });
      if (kind === "crash")
        this.env.log(
          `${this.name} exited on its own (code ${code}, signal ${signal}): ${this.stderr.slice(-1500)}`,
        );
      else if (kind === "leadership lost")
        this.env.log(`${this.name} lost its Lease and exited; restarting it`);
      this.child = undefined;
      this.leading = false;
      if (!this.stopping) this.restartTimer = setTimeout(() => this.start(), 1000);
    });
  }

  line(text, open) {
    const kind = text[0];
    if (kind === "B" || kind === "E") {
      const [, key, time] = text.split(" ");
      if (kind === "B") {
        const interval = { replica: this.name, start: Number(time), end: undefined };
        open.set(key, interval);
        const list = this.env.intervals.get(key);
        if (list) list.push(interval);
        else this.env.intervals.set(key, [interval]);
      } else {
        const interval = open.get(key);
        if (interval) interval.end = Number(time);
        open.delete(key);
      }
    } else if (text === "LEADING") this.leading = true;
    else if (kind === "S") {
      const sample = JSON.parse(text.slice(2));
      // When the client found a dead connection (its pool replaced), to the second.
      if (sample.poolReplacements > (this.poolReplacements ?? 0)) this.poolReplacedAt = performance.now();
      this.poolReplacements = sample.poolReplacements;
      this.env.onStats?.({ ...sample, incarnation: this.starts });
    }
  }

  /** SIGKILL: no shutdown, no Lease release, reconciles cut wherever they are. */
  kill() {
    if (!this.child) return false;
    this.killing = true;
    this.child.kill("SIGKILL");
    return true;
  }

  /** Exits neither caused by the suite nor by leader election: crashes. */
  get unexpectedExits() {
    return this.exits.filter((e) => e.kind === "crash");
  }

  get leadershipLosses() {
    return this.exits.filter((e) => e.kind === "leadership lost");
  }

  async stop() {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child) return;
    this.killing = true;
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
