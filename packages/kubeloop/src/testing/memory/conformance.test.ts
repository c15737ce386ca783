import { describe } from "vitest";
import { conformance, KINDS, type KindCase, step, useServers } from "../../../test/memory-conformance.js";
import type { KubeObject } from "../../client/types.js";

// Differential conformance: every case runs the same requests against the real kube-apiserver
// (ControlPlane, apiserver profile: no kube-controller-manager) and the in-memory server (with its
// controllers off, to match), and compares the answers (objects, errors with their messages and
// causes, watch event sequences) after normalising uids, timestamps and resourceVersion values.
// A divergence fails. This file: the requests every kind answers (test/memory-conformance.ts lists
// the kinds); conformance.rules.test.ts: schemas, validation, namespaces, refusals, discovery, RBAC.

useServers();

for (const k of KINDS) {
  describe(`${k.label}`, () => {
    createCases(k);
    updateCases(k);
    patchCases(k);
    deleteCases(k);
    listCases(k);
    watchCases(k);
    applyCases(k);
    statusCases(k);
  });
}

/** Create, get, names and labels. */
function createCases(k: KindCase): void {
  conformance("create then get", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () => c.get(k.type, "a", { namespace: ns }));
  });
  conformance("create twice: 409 AlreadyExists", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () => c.create(k.make(ns, "a")));
  });
  conformance("get a missing object: 404", async (c, ns, t) => {
    await step(t, () => c.get(k.type, "missing", { namespace: ns }));
  });
  conformance("create in a missing namespace: 404", async (c, _ns, t) => {
    await step(t, () => c.create(k.make("no-such-namespace", "a")));
  });
  for (const name of ["UPPER", "a_b", "-a", "a.", "x".repeat(254)])
    conformance(`create with invalid name ${name.slice(0, 10)}: 422`, async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, name)));
    });
  conformance("create with generateName", async (c, ns, t) => {
    const object = k.make(ns, "") as KubeObject & { metadata: Record<string, unknown> };
    object.metadata = { ...object.metadata, generateName: "gen-" };
    delete object.metadata.name;
    const created = (await c.create(object)) as KubeObject;
    t.push((created.metadata?.name ?? "").replace(/^gen-[a-z0-9]{5}$/, "gen-<suffix>"));
  });
  conformance("create without a name: 422", async (c, ns, t) => {
    const object = k.make(ns, "") as KubeObject & { metadata: Record<string, unknown> };
    delete object.metadata.name;
    await step(t, () => c.create(object));
  });
  conformance("create with an invalid label value: 422", async (c, ns, t) => {
    const object = k.make(ns, "a") as KubeObject & { metadata: Record<string, unknown> };
    object.metadata.labels = { bad: "-nope-" };
    await step(t, () => c.create(object));
  });
}

/** Update: resourceVersion, no-op updates, generation. */
function updateCases(k: KindCase): void {
  conformance("update with the current resourceVersion", async (c, ns, t) => {
    const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
    await step(t, () => c.update(k.change(created)));
  });
  conformance("update with a stale resourceVersion: 409 Conflict", async (c, ns, t) => {
    const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
    await step(t, () => c.update(k.change(created)));
    await step(t, () => c.update(k.change(created)));
  });
  conformance("update without a resourceVersion", async (c, ns, t) => {
    const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
    const changed = k.change(created);
    const { resourceVersion: _dropped, ...metadata } = changed.metadata ?? {};
    await step(t, () => c.update({ ...changed, metadata }));
  });
  conformance("update of a missing object: 404", async (c, ns, t) => {
    await step(t, () =>
      c.update({ ...k.make(ns, "a"), metadata: { name: "a", namespace: ns, resourceVersion: "1" } }),
    );
  });
  conformance("update that changes nothing keeps the resourceVersion", async (c, ns, t) => {
    const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
    await step(t, () => c.update(created));
  });
  conformance("labels-only update leaves generation alone", async (c, ns, t) => {
    const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
    await step(t, () =>
      c.update({ ...created, metadata: { ...created.metadata, labels: { only: "labels" } } }),
    );
  });
}

/** Merge, JSON and strategic merge patches. */
function patchCases(k: KindCase): void {
  conformance("merge patch", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () => c.patch(k.type, "a", k.mergePatch, { namespace: ns }));
  });
  conformance("merge patch of a missing object: 404", async (c, ns, t) => {
    await step(t, () => c.patch(k.type, "a", k.mergePatch, { namespace: ns }));
  });
  conformance("merge patch with a stale resourceVersion: 409", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () =>
      c.patch(k.type, "a", { metadata: { resourceVersion: "1" }, ...k.mergePatch }, { namespace: ns }),
    );
  });
  conformance("JSON patch add and replace", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () =>
      c.patch(
        k.type,
        "a",
        [
          { op: "add", path: "/metadata/annotations", value: { x: "y" } },
          { op: "replace", path: "/metadata/labels/app", value: "other" },
        ],
        { namespace: ns, type: "json" },
      ),
    );
  });
  conformance("JSON patch remove", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () =>
      c.patch(k.type, "a", [{ op: "remove", path: "/metadata/labels/tier" }], {
        namespace: ns,
        type: "json",
      }),
    );
  });
  conformance("JSON patch whose test fails: 422", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () =>
      c.patch(k.type, "a", [{ op: "test", path: "/metadata/labels/app", value: "nope" }], {
        namespace: ns,
        type: "json",
      }),
    );
  });
  conformance("strategic merge patch (415 on custom resources)", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () =>
      c.patch(k.type, "a", { metadata: { labels: { s: "m" } } }, { namespace: ns, type: "strategic" }),
    );
  });
}

/** Delete: preconditions, finalizers. */
function deleteCases(k: KindCase): void {
  conformance("delete, then get: 404", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () => c.delete(k.type, "a", { namespace: ns }));
    await step(t, () => c.get(k.type, "a", { namespace: ns }));
  });
  conformance("delete a missing object: 404", async (c, ns, t) => {
    await step(t, () => c.delete(k.type, "a", { namespace: ns }));
  });
  conformance("delete with a stale resourceVersion precondition: 409", async (c, ns, t) => {
    await step(t, () => c.create(k.make(ns, "a")));
    await step(t, () => c.delete(k.type, "a", { namespace: ns, preconditions: { resourceVersion: "1" } }));
  });
  conformance(
    "delete with a finalizer: deletionTimestamp, then gone when it is removed",
    async (c, ns, t) => {
      const object = k.make(ns, "a");
      object.metadata = { ...object.metadata, finalizers: ["example.com/hold"] };
      await step(t, () => c.create(object));
      await step(t, () => c.delete(k.type, "a", { namespace: ns }));
      await step(t, () => c.get(k.type, "a", { namespace: ns }));
      await step(t, () => c.delete(k.type, "a", { namespace: ns }));
      await step(t, () =>
        c.patch(
          k.type,
          "a",
          { metadata: { finalizers: ["example.com/new", "example.com/hold"] } },
          { namespace: ns },
        ),
      );
      await step(t, () => c.patch(k.type, "a", { metadata: { finalizers: null } }, { namespace: ns }));
      await step(t, () => c.get(k.type, "a", { namespace: ns }));
    },
  );
  for (const policy of ["Foreground", "Orphan", "Background"] as const)
    conformance(
      `delete with propagationPolicy ${policy} (no garbage collector running)`,
      async (c, ns, t) => {
        await step(t, () => c.create(k.make(ns, "a")));
        await step(t, () => c.delete(k.type, "a", { namespace: ns, propagationPolicy: policy }));
        await step(t, () => c.get(k.type, "a", { namespace: ns }));
      },
    );
  for (const selector of [
    "app=demo",
    "tier=web",
    "tier!=web",
    "tier in (web,db)",
    "tier notin (web)",
    "index",
    "!index",
    "app=demo,tier=db",
    "missing=x",
    "index in (1,3)",
  ])
    conformance(`list with label selector ${selector}`, async (c, ns, t) => {
      for (let i = 0; i < 4; i++) await c.create(k.make(ns, `o${i}`, i));
      const list = await c.list(k.type, { namespace: ns, labelSelector: selector });
      t.push(
        list.items.map((i) => i.metadata?.name),
        list.kind,
        list.apiVersion,
      );
    });
  for (const selector of [
    "metadata.name=o1",
    "metadata.name!=o1",
    "metadata.namespace=default",
    "spec.nope=1",
  ])
    conformance(`list with field selector ${selector}`, async (c, ns, t) => {
      for (let i = 0; i < 3; i++) await c.create(k.make(ns, `o${i}`, i));
      await step(t, async () =>
        (await c.list(k.type, { namespace: ns, fieldSelector: selector })).items.map((i) => i.metadata?.name),
      );
    });
}

/** List: pages and snapshots. */
function listCases(k: KindCase): void {
  conformance("list pages: limit and continue", async (c, ns, t) => {
    for (let i = 0; i < 5; i++) await c.create(k.make(ns, `o${i}`, i));
    const first = await c.list(k.type, { namespace: ns, limit: 2 });
    t.push(
      first.items.map((i) => i.metadata?.name),
      first.metadata.remainingItemCount,
      Boolean(first.metadata.continue),
    );
    const second = await c.list(k.type, { namespace: ns, limit: 2, continue: first.metadata.continue });
    t.push(
      second.items.map((i) => i.metadata?.name),
      second.metadata.remainingItemCount,
    );
    const third = await c.list(k.type, { namespace: ns, limit: 2, continue: second.metadata.continue });
    t.push(
      third.items.map((i) => i.metadata?.name),
      third.metadata.continue ?? "",
      third.metadata.remainingItemCount,
    );
  });
  conformance("list items in full", async (c, ns, t) => {
    await c.create(k.make(ns, "a"));
    await step(t, () => c.list(k.type, { namespace: ns }));
  });
  conformance("list pages see the first page's snapshot", async (c, ns, t) => {
    for (let i = 0; i < 4; i++) await c.create(k.make(ns, `o${i}`, i));
    const first = await c.list(k.type, { namespace: ns, limit: 2 });
    await c.delete(k.type, "o3", { namespace: ns });
    await c.create(k.make(ns, "o4", 4));
    const second = await c.list(k.type, { namespace: ns, limit: 5, continue: first.metadata.continue });
    t.push(second.items.map((i) => i.metadata?.name));
  });
}

/** Watch: from a resourceVersion, or from now. */
function watchCases(k: KindCase): void {
  conformance("watch from a resourceVersion: ADDED, MODIFIED, DELETED", async (c, ns, t) => {
    const start = await c.list(k.type, { namespace: ns });
    const created = await c.create(k.make(ns, "a"));
    await c.update(k.change(created));
    await c.delete(k.type, "a", { namespace: ns });
    const events: unknown[] = [];
    for await (const event of c.watch(k.type, {
      namespace: ns,
      resourceVersion: start.metadata.resourceVersion,
      allowBookmarks: false,
    })) {
      events.push(event);
      if (events.length === 3) break;
    }
    t.push(events);
  });
  conformance(
    "watch with a label selector: objects leaving it are DELETED, joining it ADDED",
    async (c, ns, t) => {
      const start = await c.list(k.type, { namespace: ns });
      const created = await c.create(k.make(ns, "a", 1));
      const moved = await c.patch(k.type, "a", { metadata: { labels: { tier: "db" } } }, { namespace: ns });
      await c.patch(k.type, "a", { metadata: { labels: { tier: "web" } } }, { namespace: ns });
      void created;
      void moved;
      const events: unknown[] = [];
      for await (const event of c.watch(k.type, {
        namespace: ns,
        resourceVersion: start.metadata.resourceVersion,
        labelSelector: "tier=web",
        allowBookmarks: false,
      })) {
        events.push({
          type: event.type,
          name: event.object.metadata?.name,
          tier: event.object.metadata?.labels?.tier,
        });
        if (events.length === 3) break;
      }
      t.push(events);
    },
  );
  conformance("watch without a resourceVersion starts with the current objects", async (c, ns, t) => {
    await c.create(k.make(ns, "a"));
    await c.create(k.make(ns, "b"));
    const events: unknown[] = [];
    for await (const event of c.watch(k.type, { namespace: ns, allowBookmarks: false })) {
      events.push({ type: event.type, name: event.object.metadata?.name });
      if (events.length === 2) break;
    }
    t.push(events.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))));
  });
}

/** Server-side apply and its conflicts. */
function applyCases(k: KindCase): void {
  conformance("server-side apply creates, then updates, its fields", async (c, ns, t) => {
    const object = k.make(ns, "a");
    delete (object as { stringData?: unknown }).stringData;
    const applied = (await step(t, () => c.apply(object, { fieldManager: "one" }))) as KubeObject;
    t.push(applied?.metadata?.managedFields?.map((m) => [m.manager, m.operation]));
    const again = (await step(t, () =>
      c.apply(
        { ...object, metadata: { ...object.metadata, labels: { app: "demo" } } },
        { fieldManager: "one" },
      ),
    )) as KubeObject;
    t.push(again?.metadata?.managedFields?.map((m) => [m.manager, m.operation, JSON.stringify(m.fieldsV1)]));
  });
  conformance("server-side apply by a second manager: 409 conflict, then force", async (c, ns, t) => {
    const object = k.make(ns, "a");
    delete (object as { stringData?: unknown }).stringData;
    await step(t, () => c.apply(object, { fieldManager: "one" }));
    const other = {
      ...object,
      metadata: { ...object.metadata, labels: { ...object.metadata?.labels, app: "mine" } },
    };
    await step(t, () => c.apply(other, { fieldManager: "two" }));
    const forced = (await step(t, () => c.apply(other, { fieldManager: "two", force: true }))) as KubeObject;
    t.push(forced?.metadata?.managedFields?.map((m) => [m.manager, m.operation]).sort());
  });
}

/** Status written through the main resource and the subresource. */
function statusCases(k: KindCase): void {
  conformance("server-side apply after an update by another manager: conflict names it", async (c, ns, t) => {
    const object = k.make(ns, "a");
    delete (object as { stringData?: unknown }).stringData;
    await step(t, () => c.create(object, { fieldManager: "editor" }));
    await step(t, () =>
      c.apply(
        { ...object, metadata: { ...object.metadata, labels: { app: "applied" } } },
        { fieldManager: "applier" },
      ),
    );
  });
  if (k.status) {
    conformance("status written through the main resource is ignored", async (c, ns, t) => {
      const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
      await step(t, () =>
        c.update({ ...created, status: { observedGeneration: 9, ready: true } } as KubeObject),
      );
    });
    conformance("status subresource: update changes status only", async (c, ns, t) => {
      const created = (await step(t, () => c.create(k.make(ns, "a")))) as KubeObject;
      const status =
        k.label === "Deployment" ? { replicas: 1, observedGeneration: 1 } : { ready: true, count: 2 };
      await step(t, () =>
        c.updateStatus({
          ...created,
          metadata: { ...created.metadata, labels: { changed: "yes" } },
          status,
        } as KubeObject),
      );
      await step(t, () => c.getStatus(k.type, "a", { namespace: ns }));
    });
    conformance("status subresource: merge patch", async (c, ns, t) => {
      await step(t, () => c.create(k.make(ns, "a")));
      const status = k.label === "Deployment" ? { replicas: 2 } : { count: 3 };
      await step(t, () => c.patch(k.type, "a", { status }, { namespace: ns, subresource: "status" }));
    });
  }
}
