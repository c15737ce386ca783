import { type KubeObject, resourceType } from "kubeloop";
import { Deployment } from "kubeloop/k8s";
import { ReconcileHarness } from "kubeloop/testing";
import { afterEach, describe, expect, it } from "vitest";
import { type NginxObject, nginxController } from "../src/nginx.ts";
import { Nginx } from "../src/resources.ts";
import { nginxWebhooks } from "../src/webhooks.ts";

// Unit tests of the nginx reconciler, in milliseconds: the real controller (queue, cache, apply,
// status, events) against kubeloop's in-memory API server, one reconcile at a time, with a fake
// clock. Pods are test data (seeded: no kubelet here); everything else goes through the API.
// The end-to-end behaviour on a real cluster is nginx.test.ts's.

const NS = "default";
const Pod = resourceType<KubeObject & { status?: object }>("v1", "Pod");
let harness: ReconcileHarness<NginxObject> | undefined;

afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

async function start(): Promise<ReconcileHarness<NginxObject>> {
  harness = await ReconcileHarness.start(nginxController, { resources: [Nginx] });
  return harness;
}

function nginx(name: string, replicas: number, image?: string) {
  return {
    apiVersion: Nginx.apiVersion,
    kind: "Nginx",
    metadata: { name, namespace: NS },
    spec: { replicas, ...(image ? { image } : {}) },
  } as NginxObject;
}

/** A pod as the Deployment's ReplicaSet and the kubelet would have left it. */
function pod(owner: string, index: number, ready: boolean): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${owner}-${index}`,
      namespace: NS,
      labels: {
        "app.kubernetes.io/name": "nginx",
        "app.kubernetes.io/instance": owner,
        "app.kubernetes.io/managed-by": "nginx-operator",
      },
    },
    status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  } as KubeObject;
}

const ready = (object: NginxObject) => object.status?.conditions?.find((c) => c.type === "Ready");

/**
 * A new Nginx takes two reconciles: the first creates the Deployment, whose ADDED event then wakes
 * its owner once more (the controller skips the echoes of its updates, not of its creations).
 */
const FIRST_RECONCILES = (key: string) => [
  { key, result: "requeue_after" },
  { key, result: "requeue_after" },
];

describe("nginx reconciler (in memory)", () => {
  it("turns an Nginx into a Deployment it owns, with its replicas and image, and reports progress", async () => {
    const h = await start();
    await h.client.create(nginx("web", 3));
    expect(await h.reconcileUntilIdle()).toEqual(FIRST_RECONCILES("default/web"));
    const deployment = await h.client.get({ type: Deployment, namespace: NS, name: "web" });
    expect(deployment.spec?.replicas).toBe(3);
    expect(deployment.spec?.template.spec?.containers[0]?.image).toBe("nginxinc/nginx-unprivileged:1.27");
    expect(deployment.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "Nginx",
      name: "web",
      controller: true,
    });
    const object = await h.client.get({ type: Nginx, namespace: NS, name: "web" });
    expect(ready(object)).toMatchObject({
      status: "False",
      reason: "Progressing",
      message: "0 of 3 pods running",
    });
    expect(object.status?.observedGeneration).toBe(1);
  });

  it("becomes Ready, listing its pods, once all of them run and are ready", async () => {
    const h = await start();
    await h.client.create(nginx("web", 2));
    await h.reconcileUntilIdle();
    h.server.seed(pod("web", 1, true));
    h.server.seed(pod("web", 0, false));
    // Two pod events, one reconcile: the queue folds them into one key.
    expect(await h.reconcileUntilIdle()).toEqual([{ key: "default/web", result: "requeue_after" }]);
    expect((await h.client.get({ type: Nginx, namespace: NS, name: "web" })).status?.nodes).toEqual([
      "web-1",
    ]);
    h.server.seed(pod("web", 0, true));
    expect(await h.reconcileUntilIdle()).toEqual([{ key: "default/web", result: "success" }]);
    const object = await h.client.get({ type: Nginx, namespace: NS, name: "web" });
    expect(object.status?.nodes).toEqual(["web-0", "web-1"]);
    expect(object.status?.readyCount).toBe(2);
    expect(ready(object)?.status).toBe("True");
  });

  it("requeues itself after 30 s while pods are missing, and not before", async () => {
    const h = await start();
    await h.client.create(nginx("web", 1));
    await h.reconcileUntilIdle();
    h.advance(29_999);
    expect(await h.reconcileNext()).toBeUndefined();
    h.advance(1);
    expect(await h.reconcileNext()).toEqual({ key: "default/web", result: "requeue_after" });
  });

  it("follows a scale: the Deployment's replicas and the observed generation", async () => {
    const h = await start();
    await h.client.create(nginx("web", 1));
    await h.reconcileUntilIdle();
    await h.client.patch(Nginx, "web", { spec: { replicas: 4 } }, { namespace: NS });
    await h.reconcileUntilIdle();
    expect((await h.client.get({ type: Deployment, namespace: NS, name: "web" })).spec?.replicas).toBe(4);
    const object = await h.client.get({ type: Nginx, namespace: NS, name: "web" });
    expect(object.metadata?.generation).toBe(2);
    expect(object.status?.observedGeneration).toBe(2);
  });

  it("takes back a Deployment field another manager changed (its apply is forced)", async () => {
    const h = await start();
    await h.client.create(nginx("web", 2));
    await h.reconcileUntilIdle();
    await h.client.patch(
      Deployment,
      "web",
      { spec: { replicas: 9 } },
      { namespace: NS, fieldManager: "kubectl-edit" },
    );
    expect((await h.reconcileUntilIdle()).map((s) => s.key)).toEqual(["default/web"]);
    expect((await h.client.get({ type: Deployment, namespace: NS, name: "web" })).spec?.replicas).toBe(2);
  });

  it("does not wake itself up with its own writes (no status loop)", async () => {
    const h = await start();
    await h.client.create(nginx("web", 1));
    expect(await h.reconcileUntilIdle()).toEqual(FIRST_RECONCILES("default/web"));
    // Its status and Deployment writes are echoed by watches, and ignored.
    await h.client.patch(Nginx, "web", { metadata: { labels: { touched: "yes" } } }, { namespace: NS });
    expect(await h.reconcileUntilIdle()).toEqual([{ key: "default/web", result: "requeue_after" }]);
    expect(await h.reconcileNext()).toBeUndefined();
  });

  it("leaves the Deployment to garbage collection when the Nginx is deleted", async () => {
    const h = await start();
    await h.client.create(nginx("web", 1));
    await h.reconcileUntilIdle();
    await h.client.delete(Nginx, "web", { namespace: NS });
    expect(await h.reconcileUntilIdle()).toEqual([{ key: "default/web", result: "success" }]);
    await expect(h.client.get({ type: Deployment, namespace: NS, name: "web" })).rejects.toThrow(/not found/);
  });

  it("reconciles several Nginxes in queue order, each in one step", async () => {
    const h = await start();
    for (const name of ["a", "b", "c"]) await h.client.create(nginx(name, 1));
    expect((await h.reconcileUntilIdle()).map((s) => s.key)).toEqual([
      ...["default/a", "default/b", "default/c"],
      // Each one's new Deployment wakes it once more, in the order they were created.
      ...["default/a", "default/b", "default/c"],
    ]);
    const deployments = await h.client.list(Deployment, { namespace: NS });
    expect(deployments.items.map((d) => d.metadata?.name)).toEqual(["a", "b", "c"]);
  });

  it("records a failure as a Warning event and Ready=False, then retries with backoff", async () => {
    harness = await ReconcileHarness.start(nginxController, {
      resources: [Nginx],
      namespaces: ["default", "doomed"],
    });
    const h = harness;
    // In a namespace being deleted, the Nginx (held by a finalizer) stays, but no Deployment can be created.
    await h.client.create({
      ...nginx("web", 1),
      metadata: { name: "web", namespace: "doomed", finalizers: ["example.com/hold"] },
    });
    await h.client.delete(resourceType("v1", "Namespace"), "doomed");
    expect(await h.reconcileUntilIdle()).toEqual([{ key: "doomed/web", result: "error" }]);
    expect(h.events).toEqual([
      expect.objectContaining({
        type: "Warning",
        reason: "ReconcileError",
        note: expect.stringMatching(/namespace doomed because it is being terminated/),
      }),
    ]);
    const object = await h.client.get({ type: Nginx, namespace: "doomed", name: "web" });
    expect(ready(object)).toMatchObject({ status: "False", reason: "ReconcileError" });
    // Retried with per-key backoff (5 ms, then doubling), not at once.
    expect(await h.reconcileNext()).toBeUndefined();
    h.advance(5);
    expect(await h.reconcileNext()).toEqual({ key: "doomed/web", result: "error" });
  });

  it("runs the admission webhooks in process: an image from a registry not allowed is refused", async () => {
    const h = await start();
    h.server.addWebhooks(nginxWebhooks);
    await expect(h.client.create(nginx("web", 1, "evil.example.com/nginx:1"))).rejects.toThrow(
      /evil\.example\.com/,
    );
    await h.client.create(nginx("ok", 1, "ghcr.io/nginxinc/nginx-unprivileged:1.27"));
    expect(await h.reconcileUntilIdle()).toEqual(FIRST_RECONCILES("default/ok"));
  });

  it("reads pods from its cache: the pods of another Nginx do not count", async () => {
    const h = await start();
    await h.client.create(nginx("web", 1));
    await h.client.create(nginx("api", 1));
    h.server.seed(pod("api", 0, true));
    await h.reconcileUntilIdle();
    expect(ready(await h.client.get({ type: Nginx, namespace: NS, name: "web" }))?.status).toBe("False");
    expect(ready(await h.client.get({ type: Nginx, namespace: NS, name: "api" }))?.status).toBe("True");
    expect(await h.client.list(Pod, { namespace: NS })).toMatchObject({
      items: [{ metadata: { name: "api-0" } }],
    });
  });
});
