import { clone } from "./clone.js";
import { conflict, notFound, StatusError } from "./errors.js";
import type { GarbageCollector } from "./garbage-collector.js";
import type { KindInfo } from "./kinds.js";
import { keyOf, type Obj, type Route } from "./objects.js";
import { list } from "./reads.js";
import type { MemoryStore } from "./store.js";

/** Deletes: preconditions, propagation (finalizers for foreground and orphan), namespaces, collections. */
export class Deletion {
  constructor(
    private readonly store: MemoryStore,
    private readonly gc: GarbageCollector,
  ) {}

  async delete(route: Route, body: Obj | undefined): Promise<Obj> {
    const { kind } = route;
    const name = route.name ?? "";
    const key = keyOf(route.namespace, name);
    const current = this.store.bucket(kind).get(key);
    if (!current) throw notFound(kind.group, kind.resource, name);
    const preconditions = body?.preconditions as { uid?: string; resourceVersion?: string } | undefined;
    if (preconditions?.uid && preconditions.uid !== current.metadata.uid)
      throw conflict(
        kind.group,
        kind.resource,
        name,
        `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    if (preconditions?.resourceVersion && preconditions.resourceVersion !== current.metadata.resourceVersion)
      throw new StatusError({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `Operation cannot be fulfilled on ${kind.group ? `${kind.kind}.${kind.group}` : kind.kind} "${name}": the ResourceVersion in the precondition (${preconditions.resourceVersion}) does not match the ResourceVersion in record (${current.metadata.resourceVersion}). The object might have been modified`,
        reason: "Conflict",
        details: { name, ...(kind.group ? { group: kind.group } : {}), kind: kind.resource },
        code: 409,
      } as StatusError["status"]);
    await this.store.admit(kind, "DELETE", undefined, this.store.output(kind, current));
    const policy =
      (body?.propagationPolicy as string | undefined) ??
      (body?.orphanDependents === true ? "Orphan" : undefined);
    const finalizers = [...((current.metadata.finalizers as string[] | undefined) ?? [])];
    if (policy === "Foreground" && !finalizers.includes("foregroundDeletion"))
      finalizers.push("foregroundDeletion");
    if (policy === "Orphan" && !finalizers.includes("orphan")) finalizers.push("orphan");
    if (kind.kind === "Namespace" && kind.group === "") return this.deleteNamespace(kind, current);
    if (finalizers.length) {
      if (current.metadata.deletionTimestamp) return this.store.output(kind, current);
      const old = clone(current);
      const object = clone(current);
      object.metadata.finalizers = finalizers;
      object.metadata.deletionTimestamp = this.store.timestamp();
      object.metadata.deletionGracePeriodSeconds = 0;
      if (kind.generation) object.metadata.generation = (object.metadata.generation ?? 0) + 1;
      object.metadata.resourceVersion = this.store.nextRevision();
      this.store.store(kind, key, object);
      this.store.record(kind, "MODIFIED", object, old);
      this.gc.run();
      const after = this.store.bucket(kind).get(key);
      return this.store.output(kind, after ?? object);
    }
    const old = current;
    const object = clone(current);
    object.metadata.resourceVersion = this.store.nextRevision();
    this.store.bucket(kind).delete(key);
    this.store.record(kind, "DELETED", object, old);
    this.gc.deleted(kind, object);
    if (kind.deleteReturnsObject) return this.store.output(kind, object);
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: {
        name,
        ...(kind.group ? { group: kind.group } : {}),
        kind: kind.resource,
        uid: object.metadata.uid,
      },
    };
  }

  private deleteNamespace(kind: KindInfo, current: Obj): Obj {
    if (current.metadata.deletionTimestamp) return this.store.output(kind, current);
    const old = current;
    const object = clone(current);
    object.metadata.deletionTimestamp = this.store.timestamp();
    object.status = { ...object.status, phase: "Terminating" };
    object.metadata.resourceVersion = this.store.nextRevision();
    this.store.store(kind, keyOf(undefined, object.metadata.name), object);
    this.store.record(kind, "MODIFIED", object, old);
    this.gc.run();
    const after = this.store.bucket(kind).get(keyOf(undefined, object.metadata.name));
    return this.store.output(kind, after ?? object);
  }

  async deleteCollection(route: Route, query: Record<string, unknown>, body: Obj | undefined): Promise<Obj> {
    const listed = list(
      this.store,
      route,
      { labelSelector: query.labelSelector, fieldSelector: query.fieldSelector },
      undefined,
    );
    for (const item of listed.items as Obj[]) {
      try {
        await this.delete({ ...route, namespace: item.metadata.namespace, name: item.metadata.name }, body);
      } catch (error) {
        if (!(error instanceof StatusError && error.status.code === 404)) throw error;
      }
    }
    return { ...listed, items: [] };
  }
}
