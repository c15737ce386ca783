import { type KindKey, type KubeObject, type ObjectKey, objectKey } from "../client/index.js";
import { typedKeyOf } from "../client/internal.js";

/**
 * What a controller knows of its own writes, and the two questions it answers with it, kept apart:
 *
 * 1. **Read your writes** ({@link ReadYourWrites}): "has the cache caught up with my write?" A
 *    reconcile's write (any path: `ctx.apply`, `ctx.status`, `ctx.client.*`, helpers such as
 *    `addFinalizer(ctx.client, …)`) leaves an expectation: the cache must show the object at the
 *    version written or newer (for a deletion: no longer show it). The next reconcile of the same
 *    key waits (briefly requeued) until every one holds, so it does not act on a cache older than
 *    its own write and, say, create a child twice.
 * 2. **Echo filtering** ({@link EchoFilter}): "this watch event is our own write, not news." The
 *    event of the exact version a write returned tells the controller nothing it does not know;
 *    waking the key for it would loop on status writes and cut a failed reconcile's backoff short.
 *    An event that arrives while a write of its object is still waiting for its response is held
 *    until the response names the version written; then it is dropped if it is that version and
 *    delivered otherwise. Versions are compared, never contents, so anyone else's change (a status-only
 *    one made while we write status included) is always delivered.
 *
 * One behaviour for every write path: every write is both expected and echo-filtered. A reconcile
 * that wants to run again after its own write says so (`after(0)`), as it would after any step;
 * its echo never wakes it (java-operator-sdk 5.3 filters its own echoes the same way;
 * controller-runtime wakes on them, and pays a second reconcile per write for it). A create's echo
 * is an `added` event, which always wakes the key: once per object.
 *
 * The guarantee, with its exceptions: a reconcile never sees an object older than its own last
 * write, **unless**
 * - the expectation is older than {@link EXPECTATION_TIMEOUT_MS} (a watch that is down must slow a
 *   controller, not stop it): it is dropped and the reconcile runs on what the cache has;
 * - the written kind is not cached by this controller (not its primary, `owns` or `watches`): there
 *   is no cache to wait for, so the expectation counts as met;
 * - the object was deleted since: its expectations end with its deletion event.
 * And an update a relist delivers is never taken for an echo: it spans every change made while
 * the watch was down, so it always wakes the key (controller.ts decides that, before asking here).
 *
 * resourceVersions are opaque to clients, but the API server's are etcd revisions: decimal integers
 * that grow. Where both are integers they are compared as numbers; otherwise only the same version
 * counts as caught up.
 */

/** Long enough for any healthy watch to deliver an event; short enough not to stall a key for long. */
export const EXPECTATION_TIMEOUT_MS = 10_000;

/** A written object: its kind and key. */
export interface WrittenObject {
  kind: KindKey;
  key: ObjectKey;
}

/** The cached object of a kind and key, or "unwatched" when this controller caches no such kind. */
export type CacheLookup = (kind: KindKey, key: ObjectKey) => KubeObject | undefined | "unwatched";

interface Expectation {
  target: WrittenObject;
  /** The version written; for a deletion, `""`. */
  resourceVersion: string;
  /** A deletion: the cache must no longer show the object of this uid. */
  gone?: { uid: string | undefined };
  at: number;
}

/**
 * Read your writes: what each reconcile key wrote, until the cache shows it. Indexed by object
 * too, so that an object's watch event or deletion settles the keys that wait for it in O(1)
 * (a scan of them all made converging N objects cost O(N²)), and expectations do not pile up for
 * keys that are not reconciled again.
 */
export class ReadYourWrites {
  /** Reconcile key → object → what the cache must show. One per object: the latest write supersedes. */
  private readonly pending = new Map<ObjectKey, Map<string, Expectation>>();
  /** Object → the reconcile keys waiting for it. */
  private readonly byObject = new Map<string, Set<ObjectKey>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The reconcile of `reconcileKey` wrote `target` at `resourceVersion`. */
  expect(reconcileKey: ObjectKey, target: WrittenObject, resourceVersion: string): void {
    this.add(reconcileKey, { target, resourceVersion, at: this.now() });
  }

  /** The reconcile of `reconcileKey` deleted `target` (of this uid, when known). */
  expectGone(reconcileKey: ObjectKey, target: WrittenObject, uid: string | undefined): void {
    this.add(reconcileKey, { target, resourceVersion: "", gone: { uid }, at: this.now() });
  }

  /** True when the cache has caught up with every write of the key's reconciles (or they expired). */
  caughtUp(reconcileKey: ObjectKey, lookup: CacheLookup): boolean {
    const mine = this.pending.get(reconcileKey);
    if (!mine) return true;
    const now = this.now();
    for (const [id, e] of mine) {
      const cached = now - e.at > EXPECTATION_TIMEOUT_MS ? "expired" : lookup(e.target.kind, e.target.key);
      const met =
        typeof cached === "string" ||
        (e.gone
          ? !cached || (e.gone.uid !== undefined && cached.metadata?.uid !== e.gone.uid)
          : isAtLeast(cached?.metadata?.resourceVersion, e.resourceVersion));
      if (met) this.settle(reconcileKey, id);
    }
    return !this.pending.has(reconcileKey);
  }

  /** Nothing is expected: the common case, where events need no bookkeeping. */
  get idle(): boolean {
    return this.byObject.size === 0;
  }

  /** The cache now holds this version of the object (its watch event): writes up to it are met. */
  seen(id: string, resourceVersion: string | undefined): void {
    const keys = this.byObject.get(id);
    if (!keys || !resourceVersion) return;
    for (const key of keys) {
      const e = this.pending.get(key)?.get(id);
      if (e && !e.gone && isAtLeast(resourceVersion, e.resourceVersion)) this.settle(key, id);
    }
  }

  /** The object was deleted: expectations of it can never be met by the cache, so they end here. */
  deleted(id: string): void {
    for (const key of this.byObject.get(id) ?? []) this.settle(key, id);
  }

  private add(reconcileKey: ObjectKey, expectation: Expectation): void {
    const id = idOf(expectation.target);
    const mine = this.pending.get(reconcileKey) ?? new Map<string, Expectation>();
    this.pending.set(reconcileKey, mine.set(id, expectation));
    this.byObject.set(id, (this.byObject.get(id) ?? new Set()).add(reconcileKey));
  }

  private settle(reconcileKey: ObjectKey, id: string): void {
    const mine = this.pending.get(reconcileKey);
    mine?.delete(id);
    if (mine?.size === 0) this.pending.delete(reconcileKey);
    const keys = this.byObject.get(id);
    keys?.delete(reconcileKey);
    if (keys?.size === 0) this.byObject.delete(id);
  }
}

/** Writes of one object waiting for their responses, and the events held until they have them. */
interface InFlight {
  writes: number;
  /** The versions the writes that ended returned. */
  versions: string[];
  held: { resourceVersion: string | undefined; deliver: () => void }[];
}

/**
 * Echo filtering: the versions this controller wrote, and the events held while a write of their
 * object waits for its response (on a loaded machine the echo often comes first). Keyed by object
 * only: an echo is an echo whichever reconcile wrote it.
 */
export class EchoFilter {
  private readonly inFlight = new Map<string, InFlight>();
  /** Object → the version our last write of it returned, until its event comes (or a newer one). */
  private readonly written = new Map<string, string>();

  /** No write under way and no echo to come: every event is news. */
  get idle(): boolean {
    return this.inFlight.size === 0 && this.written.size === 0;
  }

  /** Runs a write of the object; events of it that arrive meanwhile wait for its response. */
  async during<R extends KubeObject>(id: string, write: () => Promise<R>): Promise<R> {
    const entry = this.inFlight.get(id) ?? { writes: 0, versions: [], held: [] };
    entry.writes++;
    this.inFlight.set(id, entry);
    let version: string | undefined;
    try {
      const result = await write();
      version = result?.metadata?.resourceVersion;
      return result;
    } finally {
      if (version) entry.versions.push(version);
      if (--entry.writes === 0) this.ended(id, entry);
    }
  }

  /** The last write of the object ended: the held events that are not its echo go out. */
  private ended(id: string, entry: InFlight): void {
    this.inFlight.delete(id);
    for (const held of entry.held) {
      if (!held.resourceVersion || !entry.versions.includes(held.resourceVersion)) held.deliver();
    }
    const last = entry.versions.at(-1);
    const passed = entry.held.some((h) => h.resourceVersion && isAtLeast(h.resourceVersion, last ?? ""));
    if (last && !passed) this.written.set(id, last); // its echo is still to come
  }

  /** An update of the object: `deliver` runs now, once the writes under way end, or never (our echo). */
  updated(id: string, resourceVersion: string | undefined, deliver: () => void): void {
    const entry = this.inFlight.get(id);
    if (entry) {
      entry.held.push({ resourceVersion, deliver });
      return;
    }
    const ours = this.written.get(id);
    if (ours !== undefined && resourceVersion && isAtLeast(resourceVersion, ours)) {
      this.written.delete(id); // this or a later version: ours has passed
      if (resourceVersion === ours) return;
    }
    deliver();
  }

  /** The object was deleted: no echo of it is to come. */
  deleted(id: string): void {
    this.written.delete(id);
  }
}

/**
 * The controller's write-awareness: every write of a reconcile goes through {@link write} or
 * {@link delete} (the tracking client, `ctx.apply`, `ctx.status` and the failure recorder all do),
 * and every watch event of a cached kind through {@link updated} or {@link deleted}.
 */
export class WriteAwareness {
  readonly reads: ReadYourWrites;
  readonly echoes = new EchoFilter();

  constructor(now: () => number = Date.now) {
    this.reads = new ReadYourWrites(now);
  }

  /** A write (create, update, patch, apply, status) by the reconcile of `reconcileKey`. */
  async write<R extends KubeObject>(
    reconcileKey: ObjectKey,
    target: WrittenObject,
    write: () => Promise<R>,
  ): Promise<R> {
    const written = await this.echoes.during(idOf(target), write);
    const version = written?.metadata?.resourceVersion;
    if (version) this.reads.expect(reconcileKey, target, version);
    return written;
  }

  /** A deletion: the next reconcile waits until the cache no longer shows the object (or, kept by finalizers, shows its deletion). */
  async delete(
    reconcileKey: ObjectKey,
    target: WrittenObject,
    remove: () => Promise<KubeObject>,
  ): Promise<KubeObject> {
    const left = await this.echoes.during(idOf(target), remove);
    const meta = left.metadata;
    const stays =
      left.kind !== "Status" && (meta?.finalizers?.length || (meta?.deletionGracePeriodSeconds ?? 0) > 0);
    if (stays && meta?.resourceVersion) this.reads.expect(reconcileKey, target, meta.resourceVersion);
    else this.reads.expectGone(reconcileKey, target, meta?.uid);
    return left;
  }

  /**
   * An added object's watch event: the cache holds it now. (It always wakes its keys, as it did
   * before echoes were filtered: a create's echo costs one reconcile, once per object.)
   */
  added(kind: KindKey, object: KubeObject): void {
    if (this.reads.idle) return;
    this.reads.seen(typedKeyOf(kind, objectKey(object)), object.metadata?.resourceVersion);
  }

  /** An updated object's watch event: `deliver` wakes its keys, unless it is our echo. */
  updated(kind: KindKey, object: KubeObject, deliver: () => void): void {
    if (this.reads.idle && this.echoes.idle) {
      deliver(); // the hot path of a controller that is not writing: no key built
      return;
    }
    const id = typedKeyOf(kind, objectKey(object));
    const version = object.metadata?.resourceVersion;
    this.reads.seen(id, version);
    this.echoes.updated(id, version, deliver);
  }

  /** A deleted object's watch event. */
  deleted(kind: KindKey, object: KubeObject): void {
    if (this.reads.idle && this.echoes.idle) return;
    const id = typedKeyOf(kind, objectKey(object));
    this.reads.deleted(id);
    this.echoes.deleted(id);
  }
}

function idOf(target: WrittenObject): string {
  return typedKeyOf(target.kind, target.key);
}

function isAtLeast(cached: string | undefined, expected: string): boolean {
  if (!cached) return false;
  if (cached === expected) return true;
  if (/^\d+$/.test(cached) && /^\d+$/.test(expected)) return BigInt(cached) >= BigInt(expected);
  return false;
}
