import pino from "pino";
import { afterEach, expect, it } from "vitest";
import { InformerRegistry } from "../src/cache/index.js";
import {
  type Client,
  type KubeObject,
  NotFound,
  type ResourceType,
  resourceType,
} from "../src/client/index.js";
import {
  APPLYSET_PART_OF_LABEL,
  after,
  applySetId,
  type Condition,
  type Controller,
  controller,
  dependents,
  done,
  finalizer,
  readiness,
} from "../src/controller/index.js";
import { ConfigMap, Deployment, Secret } from "../src/k8s/index.js";
import { until } from "./helpers.js";

/**
 * The dependents cases ("Done when" of the feature), written once and run on two API servers: a
 * real kube-apiserver (controller/dependents/dependents.test.ts) and MemoryApiServer
 * (dependents.memory.test.ts). Each runs a real controller (informers, queue, workers) and looks
 * only at what the server holds.
 */

export interface Backend {
  client: Client;
  /** A fresh namespace for one case. */
  namespace(): Promise<string>;
  /** Serves a CRD (and waits until it is established). */
  installCrd(crd: KubeObject): Promise<void>;
}

interface CounterObject extends KubeObject {
  spec?: { configs?: string[]; token?: boolean; gadget?: boolean; step?: number };
  status?: { conditions?: Condition[] };
}
/** The primary: test/fixtures/controller/counters.yaml (spec and status keep unknown fields). */
export const Counter = resourceType<CounterObject>("test.kubeloop.dev/v1", "Counter", {
  plural: "counters",
  namespaced: true,
});
const Gadget = resourceType("later.kubeloop.dev/v1", "Gadget", { plural: "gadgets", namespaced: true });
const GADGET_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "gadgets.later.kubeloop.dev" },
  spec: {
    group: "later.kubeloop.dev",
    scope: "Namespaced",
    names: { plural: "gadgets", singular: "gadget", kind: "Gadget" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
      },
    ],
  },
};

const logger = pino({ level: process.env.TEST_LOG ?? "silent" });
const meta = (c: CounterObject, name: string) => ({ name, namespace: c.metadata?.namespace ?? "" });
const configMap = (c: CounterObject, name: string, data: Record<string, string> = {}) => ({
  apiVersion: "v1" as const,
  kind: "ConfigMap" as const,
  metadata: { ...meta(c, name), labels: { app: c.metadata?.name ?? "" } },
  data,
});

export function dependentsCases(backend: () => Backend): void {
  const running: { controller: Controller<KubeObject>; registry: InformerRegistry }[] = [];
  const events: { reason: string; note?: string | undefined }[] = [];
  afterEach(async () => {
    for (const { controller: c, registry } of running.splice(0)) {
      await c.stop(1_000);
      await registry.stopAll();
    }
    events.length = 0;
  });

  async function run<T extends KubeObject>(c: Controller<T>): Promise<void> {
    const { client } = backend();
    const registry = new InformerRegistry(client);
    c.prepare({ client, registry, logger, events: { event: (_, e) => events.push(e) } });
    await Promise.all(c.allInformers.map((i) => i.synced));
    c.start();
    running.push({ controller: c as unknown as Controller<KubeObject>, registry });
  }

  const exists = async (type: ResourceType, name: string, namespace: string) =>
    backend()
      .client.get(type, name, { namespace })
      .then(
        () => true,
        (error: unknown) => {
          if (error instanceof NotFound) return false;
          throw error;
        },
      );
  const counter = (name: string, namespace: string, spec: CounterObject["spec"]) =>
    backend().client.create({
      apiVersion: Counter.apiVersion,
      kind: Counter.kind,
      metadata: { name, namespace },
      spec,
    });
  const patchSpec = (name: string, namespace: string, spec: CounterObject["spec"]) =>
    backend().client.patch(Counter, name, { spec }, { namespace, type: "merge" });
  const condition = async (name: string, namespace: string) =>
    (await backend().client.get(Counter, name, { namespace })).status?.conditions?.find(
      (c) => c.type === "DependentsReady",
    );

  /** ConfigMaps from spec.configs (bulk), a Secret while spec.token. */
  const configsAndToken = () =>
    dependents(Counter)
      .children("configs", ConfigMap, (c) => (c.spec?.configs ?? []).map((name) => configMap(c, name)))
      .child(
        "token",
        Secret,
        (c) => ({
          apiVersion: "v1",
          kind: "Secret",
          metadata: meta(c, `${c.metadata?.name}-token`),
          stringData: { t: "x" },
        }),
        {
          when: (c) => c.spec?.token === true,
        },
      );

  it("deletes a child no longer desired, and nothing else: not its siblings, not others' objects of the same kind and labels", async () => {
    const ns = await backend().namespace();
    const children = configsAndToken();
    await run(
      controller(Counter)
        .named("prune")
        .inNamespace(ns)
        .owns(ConfigMap)
        .owns(Secret)
        .reconcile(async (c, ctx) => (await children.reconcile(c, ctx)).result),
    );
    const primary = await counter("p", ns, { configs: ["a"], token: true });
    // Someone else's objects: the same kind and labels; and one carrying the set's label but controlled by another owner.
    await backend().client.create(configMap(primary, "foreign"));
    const other = await backend().client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "other-owner", namespace: ns },
    });
    await backend().client.create({
      ...configMap(primary, "claimed"),
      metadata: {
        ...configMap(primary, "claimed").metadata,
        labels: { app: "p", [APPLYSET_PART_OF_LABEL]: applySetId(primary, Counter) },
        ownerReferences: [
          {
            apiVersion: "v1",
            kind: "ConfigMap",
            name: "other-owner",
            uid: other.metadata?.uid ?? "",
            controller: true,
          },
        ],
      },
    });
    await until(
      async () => (await exists(Secret, "p-token", ns)) && (await exists(ConfigMap, "a", ns)),
      20_000,
      "the children",
    );
    const parent = await backend().client.get(Counter, "p", { namespace: ns });
    expect(parent.metadata?.labels?.["applyset.kubernetes.io/id"]).toBe(applySetId(primary, Counter));
    expect(parent.metadata?.annotations?.["applyset.kubernetes.io/contains-group-kinds"]).toBe(
      "ConfigMap,Secret",
    );
    expect(parent.metadata?.annotations?.["applyset.kubernetes.io/tooling"]).toBe("kubeloop/v1");

    await patchSpec("p", ns, { token: false });
    await until(
      async () => !(await exists(Secret, "p-token", ns)),
      20_000,
      "the Secret no longer wanted is deleted",
    );
    expect(await exists(ConfigMap, "a", ns)).toBe(true);
    expect(await exists(ConfigMap, "foreign", ns)).toBe(true);
    expect(await exists(ConfigMap, "claimed", ns)).toBe(true);
    // The kinds the set may hold stay listed (the Secret may be wanted again): no write per pass.
    const after = await backend().client.get(Counter, "p", { namespace: ns });
    expect(after.metadata?.annotations?.["applyset.kubernetes.io/contains-group-kinds"]).toBe(
      "ConfigMap,Secret",
    );
    expect(after.metadata?.managedFields?.filter((f) => f.manager === "kubeloop-applyset")).toHaveLength(1);
  });

  it("scales a bulk child down: the extra ones go, the rest stay untouched", async () => {
    const ns = await backend().namespace();
    const children = configsAndToken();
    await run(
      controller(Counter)
        .named("bulk")
        .inNamespace(ns)
        .owns(ConfigMap)
        .reconcile(async (c, ctx) => (await children.reconcile(c, ctx)).result),
    );
    await counter("p", ns, { configs: ["a", "b", "c"] });
    await until(async () => exists(ConfigMap, "c", ns), 20_000, "three ConfigMaps");
    const a = await backend().client.get(ConfigMap, "a", { namespace: ns });
    await patchSpec("p", ns, { configs: ["a"] });
    await until(
      async () => !(await exists(ConfigMap, "b", ns)) && !(await exists(ConfigMap, "c", ns)),
      20_000,
      "b and c deleted",
    );
    expect((await backend().client.get(ConfigMap, "a", { namespace: ns })).metadata?.resourceVersion).toBe(
      a.metadata?.resourceVersion,
    );
  });

  it("applies B only once A is ready, and the primary's condition and event name A meanwhile", async () => {
    const ns = await backend().namespace();
    const children = dependents(Counter)
      .child(
        "db",
        Deployment,
        (c) => ({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: meta(c, "db"),
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: "db" } },
            template: {
              metadata: { labels: { app: "db" } },
              spec: { containers: [{ name: "db", image: "db:1" }] },
            },
          },
        }),
        { ready: readiness.deployment },
      )
      .child(
        "app",
        ConfigMap,
        (c, applied) => configMap(c, "app", { db: applied.one("db")?.metadata?.name ?? "" }),
        { dependsOn: ["db"] },
      );
    const details: string[] = [];
    await run(
      controller(Counter)
        .named("ready")
        .inNamespace(ns)
        .dependents(children)
        .reconcile(async (c, ctx) => {
          const outcome = await children.reconcile(c, ctx);
          details.push(outcome.waitingFor?.detail ?? "");
          return outcome.result;
        }),
    );
    await counter("p", ns, {});
    await until(async () => (await condition("p", ns))?.status === "False", 20_000, "DependentsReady=False");
    const waiting = await condition("p", ns);
    expect(waiting?.reason).toBe("NotReady");
    expect(waiting?.message).toContain('"db"');
    expect(waiting?.message).toContain("Deployment db");
    // The readiness answer alone, for a message of the primary's own words.
    expect(details.map((detail) => `waiting for dependent "db": Deployment db: ${detail}`)).toContain(
      waiting?.message,
    );
    expect(events.some((e) => e.reason === "WaitingForDependent" && e.note?.includes('"db"'))).toBe(true);
    expect(await exists(ConfigMap, "app", ns)).toBe(false);
    // The Deployment controller's part, by hand: the rollout completes.
    const db = await backend().client.get(Deployment, "db", { namespace: ns });
    await backend().client.patch(
      Deployment,
      "db",
      {
        status: {
          observedGeneration: db.metadata?.generation,
          replicas: 1,
          updatedReplicas: 1,
          readyReplicas: 1,
          availableReplicas: 1,
        },
      },
      { namespace: ns, type: "merge", subresource: "status" },
    );
    await until(async () => exists(ConfigMap, "app", ns), 20_000, "B applied once A is ready");
    await until(async () => (await condition("p", ns))?.status === "True", 20_000, "DependentsReady=True");
  });

  it("activates a child when its kind's CRD appears, without a restart; one not wanted waits for nothing", async () => {
    const ns = await backend().namespace();
    const children = dependents(Counter, { recheckServed: "300ms" }).child(
      "gadget",
      Gadget,
      (c) => ({
        apiVersion: Gadget.apiVersion,
        kind: Gadget.kind,
        metadata: meta(c, `${c.metadata?.name}-g`),
      }),
      { activeWhenServed: true, when: (c) => c.spec?.gadget !== false },
    );
    await run(
      controller(Counter)
        .named("later")
        .inNamespace(ns)
        .reconcile(async (c, ctx) => (await children.reconcile(c, ctx)).result),
    );
    await counter("p", ns, {});
    await counter("q", ns, { gadget: false });
    await until(async () => (await condition("p", ns))?.reason === "NotServed", 20_000, "NotServed");
    expect((await condition("p", ns))?.message).toContain('"gadget"');
    await until(async () => (await condition("q", ns))?.status === "True", 20_000, "q: nothing to wait for");
    await backend().installCrd(GADGET_CRD);
    await until(
      async () => (await backend().client.list(Gadget, { namespace: ns })).items.length === 1,
      20_000,
      "the Gadget, once its CRD is served",
    );
    await until(async () => (await condition("p", ns))?.status === "True", 20_000, "DependentsReady=True");
  });

  it("keeps the finalizer while cleanup returns after(…), deletes children in reverse order, and removes it on done()", async () => {
    const ns = await backend().namespace();
    let cleanups = 0;
    const children = dependents(Counter, { poll: "200ms" })
      .child("first", ConfigMap, (c) => configMap(c, "first"))
      .child(
        "second",
        ConfigMap,
        (c) => ({
          ...configMap(c, "second"),
          metadata: { ...configMap(c, "second").metadata, finalizers: ["test.kubeloop.dev/hold"] },
        }),
        { dependsOn: ["first"] },
      );
    await run(
      controller(Counter)
        .named("finalize")
        .inNamespace(ns)
        .owns(ConfigMap)
        .reconcile((c, ctx) =>
          finalizer(c, ctx, "test.kubeloop.dev/children", async (event) => {
            if (event.type === "apply") return (await children.reconcile(c, ctx)).result;
            cleanups++;
            return (await children.cleanup(c, ctx)).result;
          }),
        ),
    );
    await counter("p", ns, {});
    await until(async () => exists(ConfigMap, "second", ns), 20_000, "both children");
    await backend().client.delete(Counter, "p", { namespace: ns });
    await until(async () => cleanups >= 3, 20_000, "cleanup looked again (after)");
    // "second" is held by its own finalizer: it is deleting, "first" waits for it, and so does the primary.
    const second = await backend().client.get(ConfigMap, "second", { namespace: ns });
    expect(second.metadata?.deletionTimestamp).toBeTruthy();
    expect(await exists(ConfigMap, "first", ns)).toBe(true);
    const held = await backend().client.get(Counter, "p", { namespace: ns });
    expect(held.metadata?.finalizers).toEqual(["test.kubeloop.dev/children"]);
    await backend().client.patch(
      ConfigMap,
      "second",
      { metadata: { finalizers: null } },
      { namespace: ns, type: "merge" },
    );
    await until(async () => !(await exists(ConfigMap, "first", ns)), 20_000, "first deleted after second");
    await until(
      async () => !(await exists(Counter, "p", ns)),
      20_000,
      "the primary gone once cleanup returned done()",
    );
  });

  it("converges on the next reconcile after a crash between two steps", async () => {
    const ns = await backend().namespace();
    let crashed = false;
    const children = dependents(Counter)
      .children("configs", ConfigMap, (c) => (c.spec?.configs ?? []).map((name) => configMap(c, name)), {
        // The reconcile "dies" once at step 2 after applying the first wave: before pruning and the rest.
        ready: (object) => {
          if (object.metadata?.name === "c" && !crashed) {
            crashed = true;
            throw new Error("crash");
          }
          return true;
        },
      })
      .child("after", ConfigMap, (c) => configMap(c, `after-${c.spec?.step ?? 0}`), {
        dependsOn: ["configs"],
      });
    await run(
      controller(Counter)
        .named("crash")
        .inNamespace(ns)
        .owns(ConfigMap)
        .reconcile(async (c, ctx) => (await children.reconcile(c, ctx)).result),
    );
    await counter("p", ns, { configs: ["a", "b"], step: 1 });
    await until(async () => exists(ConfigMap, "after-1", ns), 20_000, "first pass");
    await patchSpec("p", ns, { configs: ["c"], step: 2 });
    await until(
      async () =>
        (await exists(ConfigMap, "c", ns)) &&
        (await exists(ConfigMap, "after-2", ns)) &&
        !(await exists(ConfigMap, "a", ns)) &&
        !(await exists(ConfigMap, "b", ns)) &&
        !(await exists(ConfigMap, "after-1", ns)),
      20_000,
      "the state of step 2, after the crash",
    );
    expect(crashed).toBe(true);
  });

  it("a finalizer's cleanup that throws keeps the finalizer; a reconcile can still write by hand beside the dependents", async () => {
    const ns = await backend().namespace();
    let fail = true;
    const children = configsAndToken();
    await run(
      controller(Counter)
        .named("byhand")
        .inNamespace(ns)
        .owns(ConfigMap)
        .reconcile((c, ctx) =>
          finalizer(c, ctx, "test.kubeloop.dev/x", async (event) => {
            if (event.type === "cleanup") {
              if (fail) throw new Error("not yet");
              return done();
            }
            await ctx.apply(configMap(c, "by-hand"));
            const outcome = await children.reconcile(c, ctx);
            return outcome.ready ? done() : after("1s");
          }),
        ),
    );
    await counter("p", ns, { configs: ["a"] });
    await until(
      async () => (await exists(ConfigMap, "a", ns)) && (await exists(ConfigMap, "by-hand", ns)),
      20_000,
      "children and the hand-made one",
    );
    // Not a member: pruning leaves it (it carries no set label).
    const byHand = await backend().client.get(ConfigMap, "by-hand", { namespace: ns });
    expect(byHand.metadata?.labels?.[APPLYSET_PART_OF_LABEL]).toBeUndefined();
    await backend().client.delete(Counter, "p", { namespace: ns });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await backend().client.get(Counter, "p", { namespace: ns })).metadata?.finalizers).toEqual([
      "test.kubeloop.dev/x",
    ]);
    fail = false;
    await until(async () => !(await exists(Counter, "p", ns)), 20_000, "gone once cleanup succeeds");
  });

  it("fails a reconcile whose desired function returns another kind, naming the dependent and the fix", async () => {
    const ns = await backend().namespace();
    const children = dependents(Counter).child("settings", ConfigMap, (c) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: meta(c, "settings"),
    }));
    await run(
      controller(Counter)
        .named("wrong")
        .inNamespace(ns)
        .reconcile(async (c, ctx) => (await children.reconcile(c, ctx)).result),
    );
    await counter("p", ns, {});
    await until(() => events.some((e) => e.reason === "ReconcileError"), 20_000, "a Warning event");
    expect(events.find((e) => e.reason === "ReconcileError")?.note).toContain(
      'dependent "settings" is declared as v1 ConfigMap but returned v1 Secret settings',
    );
    expect(await exists(Secret, "settings", ns)).toBe(false);
  });

  it("does nothing for a primary being deleted (no error, nothing applied): the deletion is cleanup's", async () => {
    const ns = await backend().namespace();
    const children = configsAndToken();
    const outcomes: boolean[] = [];
    await run(
      controller(Counter)
        .named("deleting")
        .inNamespace(ns)
        .owns(ConfigMap)
        .reconcile(async (c, ctx) => {
          const outcome = await children.reconcile(c, ctx);
          outcomes.push(outcome.ready);
          return outcome.result;
        }),
    );
    await backend().client.create({
      apiVersion: Counter.apiVersion,
      kind: Counter.kind,
      metadata: { name: "p", namespace: ns, finalizers: ["test.kubeloop.dev/hold"] },
      spec: { configs: ["a"] },
    });
    await until(async () => exists(ConfigMap, "a", ns), 20_000, "the child");
    await backend().client.delete(Counter, "p", { namespace: ns });
    await until(() => outcomes.at(-1) === false, 20_000, "a reconcile of the deleting primary");
    expect(events.filter((e) => e.reason === "ReconcileError")).toEqual([]);
    await backend().client.patch(
      Counter,
      "p",
      { metadata: { finalizers: null } },
      { namespace: ns, type: "merge" },
    );
  });
}
