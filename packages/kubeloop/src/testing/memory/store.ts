import { kindKeyOf } from "../../client/index.js";
import { clone } from "./clone.js";
import type { discoveryDocuments, KindInfo } from "./kinds.js";
import { apiVersionOf } from "./kinds.js";
import { keyOf, type Obj } from "./objects.js";
import { applyDefaults } from "./schema.js";
import type { StoredEvent, WatchStream } from "./watch.js";

/** A webhook called in process on writes of its kind (see `MemoryApiServer.addWebhooks`). */
export interface Admission {
  kind: KindInfo;
  handle(
    operation: "CREATE" | "UPDATE" | "DELETE",
    object: Obj | undefined,
    old: Obj | undefined,
  ): Promise<Obj | undefined>;
}

/**
 * The in-memory server's storage: objects by kind, the kinds served, the revision counter, the
 * history of changes (what watches resume from and lists at an old revision undo), the open
 * watches, and the admission webhooks. Every write goes through `record`, which feeds the watches.
 */
export class MemoryStore {
  revision = 1;
  readonly objects = new Map<string, Map<string, Obj>>();
  readonly kinds = new Map<string, KindInfo>();
  readonly byResource = new Map<string, KindInfo[]>();
  history: StoredEvent[] = [];
  /** Where the retained history starts in `history` (dropped events are cut off in batches). */
  historyStart = 0;
  /** Changes at or below this revision are forgotten. */
  compactedAt = 0;
  readonly watches = new Set<WatchStream>();
  readonly admission: Admission[] = [];
  readonly options: { history: number; now: () => Date };

  constructor(options: { history: number; now: () => Date }) {
    this.options = options;
  }

  /** Forgets the history of changes: watches and continue tokens from before now get 410 Gone. */
  compact(): void {
    this.compactedAt = this.revision;
    this.history = [];
    this.historyStart = 0;
  }

  /** The discovery documents, built once per set of kinds (every new client reads them). */
  discoveryCache: ReturnType<typeof discoveryDocuments> | undefined;

  isKnownGroup(group: string): boolean {
    return [...this.kinds.values()].some((k) => k.group === group);
  }

  bucket(kind: KindInfo): Map<string, Obj> {
    const key = `${kind.group}/${kind.resource}`;
    let bucket = this.objects.get(key);
    if (!bucket) {
      bucket = new Map();
      this.objects.set(key, bucket);
    }
    return bucket;
  }

  /**
   * Objects written under each kind's current schema, hence already defaulted. Stored objects are
   * never changed in place (a write stores a new object), so they can be shared by the history and
   * by answers, which the transport copies anyway.
   */
  readonly defaulted = new WeakMap<Obj, KindInfo>();

  /**
   * The stored object as a client reads it: in the requested version, with defaults applied (a
   * custom resource written before its CRD's schema changed gets the new defaults, as on the
   * server). A shallow copy: callers may set top-level fields, never change nested ones.
   */
  output(kind: KindInfo, stored: Obj): Obj {
    if (!kind.schema || this.defaulted.get(stored) === kind)
      return { ...stored, apiVersion: apiVersionOf(kind) };
    const object = clone(stored);
    object.apiVersion = apiVersionOf(kind);
    applyDefaults(object, kind.schema);
    return object;
  }

  /** Keeps a stored object (never changed after this) and notes that it carries its kind's defaults. */
  store(kind: KindInfo, key: string, object: Obj): void {
    this.bucket(kind).set(key, object);
    this.defaulted.set(object, kind);
  }

  /** The objects of a kind as they were at `revision`: now, with later changes undone. */
  snapshot(kind: KindInfo, revision: number): Map<string, Obj> {
    const bucket = new Map(this.bucket(kind));
    const resource = `${kind.group}/${kind.resource}`;
    for (let i = this.history.length - 1; i >= this.historyStart; i--) {
      const event = this.history[i] as StoredEvent;
      if (event.resourceVersion <= revision) break;
      if (event.resource !== resource) continue;
      const meta = event.object.metadata as Obj;
      const key = keyOf(meta.namespace, meta.name);
      if (event.type === "ADDED") bucket.delete(key);
      else if (event.previous) bucket.set(key, event.previous);
    }
    return bucket;
  }

  outputEvent(kind: KindInfo, event: StoredEvent): StoredEvent {
    return {
      ...event,
      object: this.output(kind, event.object),
      previous: event.previous && this.output(kind, event.previous),
    };
  }

  nextRevision(): string {
    this.revision += 1;
    return String(this.revision);
  }

  /** The last timestamp written, by its second: most writes of a test fall in the same one. */
  lastTimestamp = { second: Number.NaN, text: "" };

  timestamp(): string {
    const now = this.options.now();
    const second = Math.floor(now.getTime() / 1000);
    if (second !== this.lastTimestamp.second)
      this.lastTimestamp = { second, text: `${now.toISOString().slice(0, 19)}Z` };
    return this.lastTimestamp.text;
  }

  record(kind: KindInfo, type: StoredEvent["type"], object: Obj, previous: Obj | undefined): void {
    const event: StoredEvent = {
      resourceVersion: Number(object.metadata.resourceVersion),
      resource: `${kind.group}/${kind.resource}`,
      type,
      object,
      previous,
    };
    this.history.push(event);
    if (this.history.length - this.historyStart > this.options.history) {
      this.compactedAt = (this.history[this.historyStart] as StoredEvent).resourceVersion;
      this.historyStart++;
      // Cut the dropped ones off now and then, not one by one (a shift per write would copy it all).
      if (this.historyStart >= 1024 && this.historyStart * 2 >= this.history.length) {
        this.history = this.history.slice(this.historyStart);
        this.historyStart = 0;
      }
    }
    let shown: StoredEvent | undefined;
    for (const watch of this.watches) {
      if (watch.filter.resource !== event.resource) continue;
      shown ??= this.outputEvent(kind, event);
      watch.offer(shown);
    }
  }

  kindFor(apiVersion: string, kindName: string): KindInfo | undefined {
    return this.kinds.get(kindKeyOf({ apiVersion, kind: kindName }));
  }

  addKind(kind: KindInfo): void {
    this.discoveryCache = undefined;
    this.kinds.set(kindKeyOf({ apiVersion: apiVersionOf(kind), kind: kind.kind }), kind);
    const key = `${kind.group}/${kind.resource}`;
    this.byResource.set(key, [
      ...(this.byResource.get(key) ?? []).filter((k) => k.version !== kind.version),
      kind,
    ]);
  }

  /** A CustomResourceDefinition was deleted: its kinds and its objects go. */
  forgetCrd(object: Obj): void {
    this.discoveryCache = undefined;
    for (const [key, k] of this.kinds) if (k.crd === object.metadata.name) this.kinds.delete(key);
    for (const [key, list] of this.byResource) {
      const rest = list.filter((k) => k.crd !== object.metadata.name);
      if (rest.length) this.byResource.set(key, rest);
      else this.byResource.delete(key);
    }
    this.objects.delete(`${object.spec.group}/${object.spec.names.plural}`);
  }

  dropObject(kind: KindInfo, object: Obj): void {
    const old = object;
    const gone = clone(object);
    gone.metadata.resourceVersion = this.nextRevision();
    this.bucket(kind).delete(keyOf(object.metadata.namespace, object.metadata.name));
    this.record(kind, "DELETED", gone, old);
  }

  writeSync(kind: KindInfo, object: Obj, change: (o: Obj) => void): void {
    const old = object;
    const next = clone(object);
    change(next);
    next.metadata.resourceVersion = this.nextRevision();
    const key = keyOf(object.metadata.namespace, object.metadata.name);
    if (
      next.metadata.deletionTimestamp &&
      !((next.metadata.finalizers as string[] | undefined) ?? []).length
    ) {
      this.bucket(kind).delete(key);
      this.record(kind, "DELETED", next, old);
      return;
    }
    this.store(kind, key, next);
    this.record(kind, "MODIFIED", next, old);
  }

  // ---------------------------------------------------------------- admission

  async admit(
    kind: KindInfo,
    operation: "CREATE" | "UPDATE" | "DELETE",
    object: Obj | undefined,
    old: Obj | undefined,
  ): Promise<Obj> {
    let current = object;
    for (const webhook of this.admission) {
      if (webhook.kind.group !== kind.group || webhook.kind.resource !== kind.resource) continue;
      current = (await webhook.handle(operation, current, old)) ?? current;
    }
    return current as Obj;
  }
}
