import type { KindInfo } from "./kinds.js";
import type { Obj } from "./objects.js";
import type { MemoryStore } from "./store.js";

/**
 * What kube-controller-manager does for the API's own bookkeeping: owner-reference garbage
 * collection (background, foreground, orphan) and namespace deletion, run to completion after each
 * change. Off on a bare API server (`controllers: false`).
 */
export class GarbageCollector {
  constructor(
    private readonly store: MemoryStore,
    private readonly enabled: boolean,
  ) {}

  /** An object is gone: a CRD takes its kinds with it; then the controllers catch up. */
  deleted(kind: KindInfo, object: Obj): void {
    if (kind.kind === "CustomResourceDefinition" && kind.group === "apiextensions.k8s.io")
      this.store.forgetCrd(object);
    this.run();
  }

  private running = false;

  /**
   * Garbage collection and namespace deletion, run to completion after each change (synchronous,
   * so tests see a settled state; kube-controller-manager does the same work a moment later).
   */
  run(): void {
    if (!this.enabled || this.running) return;
    this.running = true;
    try {
      for (let progress = true; progress; ) progress = this.collectGarbage();
    } finally {
      this.running = false;
    }
  }

  /** One pass of the garbage collector; true if it changed anything. */
  private collectGarbage(): boolean {
    const uids = new Map<string, { kind: KindInfo; object: Obj }>();
    const all: { kind: KindInfo; object: Obj }[] = [];
    for (const kind of new Set(this.store.kinds.values())) {
      if (!this.store.byResource.get(`${kind.group}/${kind.resource}`)?.includes(kind)) continue;
      if (this.store.byResource.get(`${kind.group}/${kind.resource}`)?.[0] !== kind) continue;
      for (const object of this.store.bucket(kind).values()) {
        uids.set(object.metadata.uid, { kind, object });
        all.push({ kind, object });
      }
    }
    for (const { kind, object } of all) {
      const meta = object.metadata;
      const finalizers = (meta.finalizers as string[] | undefined) ?? [];
      const dependents = () =>
        all.filter((d) =>
          (d.object.metadata.ownerReferences as Obj[] | undefined)?.some((r) => r.uid === meta.uid),
        );
      if (meta.deletionTimestamp && kind.kind === "Namespace" && kind.group === "") {
        const contents = all.filter((o) => o.kind.namespaced && o.object.metadata.namespace === meta.name);
        if (contents.length) {
          // Objects held by finalizers keep the namespace Terminating until they are released.
          const live = contents.filter((o) => !o.object.metadata.deletionTimestamp);
          for (const o of live) this.deleteSync(o.kind, o.object, "Background");
          if (live.length) return true;
          continue;
        }
        this.store.dropObject(kind, object);
        return true;
      }
      if (meta.deletionTimestamp && finalizers.includes("orphan")) {
        for (const d of dependents())
          this.store.writeSync(d.kind, d.object, (o) => {
            o.metadata.ownerReferences = (o.metadata.ownerReferences as Obj[]).filter(
              (r) => r.uid !== meta.uid,
            );
            if (!o.metadata.ownerReferences.length) delete o.metadata.ownerReferences;
          });
        this.store.writeSync(kind, object, (o) => {
          o.metadata.finalizers = finalizers.filter((f) => f !== "orphan");
        });
        return true;
      }
      if (meta.deletionTimestamp && finalizers.includes("foregroundDeletion")) {
        const blocking = dependents();
        if (blocking.length) {
          let changed = false;
          for (const d of blocking)
            if (!d.object.metadata.deletionTimestamp) {
              this.deleteSync(d.kind, d.object, "Foreground");
              changed = true;
            }
          if (changed) return true;
          continue;
        }
        this.store.writeSync(kind, object, (o) => {
          o.metadata.finalizers = finalizers.filter((f) => f !== "foregroundDeletion");
        });
        return true;
      }
      const owners = (meta.ownerReferences as Obj[] | undefined) ?? [];
      if (owners.length && !meta.deletionTimestamp) {
        const ownerGone = owners.every((r) => !uids.has(r.uid));
        const foregroundOwner = owners.some((r) =>
          (uids.get(r.uid)?.object.metadata.finalizers ?? []).includes("foregroundDeletion"),
        );
        if (ownerGone || foregroundOwner) {
          this.deleteSync(kind, object, foregroundOwner ? "Foreground" : "Background");
          return true;
        }
      }
    }
    return false;
  }

  deleteSync(kind: KindInfo, object: Obj, policy: string): void {
    const finalizers = [...((object.metadata.finalizers as string[] | undefined) ?? [])];
    if (policy === "Foreground") {
      const hasDependents = [...this.store.objects.values()].some((b) =>
        [...b.values()].some((o) =>
          (o.metadata.ownerReferences as Obj[] | undefined)?.some((r) => r.uid === object.metadata.uid),
        ),
      );
      if (hasDependents && !finalizers.includes("foregroundDeletion")) finalizers.push("foregroundDeletion");
    }
    if (finalizers.length) {
      this.store.writeSync(kind, object, (o) => {
        o.metadata.finalizers = finalizers;
        o.metadata.deletionTimestamp = this.store.timestamp();
        o.metadata.deletionGracePeriodSeconds = 0;
        if (kind.generation) o.metadata.generation = (o.metadata.generation ?? 0) + 1;
      });
      return;
    }
    this.store.dropObject(kind, object);
  }
}
