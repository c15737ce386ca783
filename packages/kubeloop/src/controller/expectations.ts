import { type KubeObject, objectKey } from "../client/index.js";

/**
 * Read your own writes. A reconcile that writes an object (through `ctx.client`, `ctx.apply` or
 * `ctx.status`: the tracking client of tracking-client.ts records each) leaves an expectation:
 * "the cache must show this object at this resourceVersion or newer". Before the next reconcile of
 * the same key, the controller checks them; until they hold, the key waits (briefly requeued), so it
 * never acts on a cache older than its own last write (and never, say, creates a child twice).
 *
 * resourceVersions are opaque to clients, but the API server's are etcd revisions: decimal integers
 * that grow. Where both are integers they are compared as numbers; otherwise only the same version
 * counts. An expectation older than {@link EXPECTATION_TIMEOUT_MS} is dropped: a watch that
 * is down must slow a controller, not stop it.
 *
 * Every watch event asks {@link Expectations.isOwnWrite}, and every deletion ends the expectations
 * of the object, so the pending writes are also indexed by object: a scan of them all made
 * converging N objects cost O(N²). The echo of a write also settles it (the cache holds that
 * version by then), so expectations do not pile up for keys that are not reconciled again.
 */

interface Held {
  resourceVersion: string | undefined;
  wake: () => void;
}

interface Expectation {
  typeKey: string;
  objectKey: string;
  /** The version written; for a deletion, `""`. */
  resourceVersion: string;
  /** A deletion: the cache must no longer show the object of this uid. */
  gone?: { uid: string | undefined };
  /** Its echo is not news: it does not wake the key (the writes of `ctx.apply` and `ctx.status`). */
  quiet: boolean;
  at: number;
}

/** Long enough for any healthy watch to deliver an event; short enough not to stall a key for long. */
export const EXPECTATION_TIMEOUT_MS = 10_000;

export type CacheLookup = (typeKey: string, objectKey: string) => KubeObject | undefined | "unwatched";

export class Expectations {
  /** Reconcile key → object (`type object`) → the last write of it. */
  private readonly pending = new Map<string, Map<string, Expectation>>();
  /** Object (`type object`) → the reconcile keys expecting a version of it. */
  private readonly byObject = new Map<string, Set<string>>();
  private readonly inFlight = new Map<string, number>();

  /**
   * Marks a write of the primary's status as under way. Its watch event can arrive before the
   * response that tells us the new resourceVersion; while the write is in flight, a status-only
   * change of the primary is taken to be ours.
   */
  async writing<R>(reconcileKey: string, write: () => Promise<R>): Promise<R> {
    this.inFlight.set(reconcileKey, (this.inFlight.get(reconcileKey) ?? 0) + 1);
    try {
      return await write();
    } finally {
      const left = (this.inFlight.get(reconcileKey) ?? 1) - 1;
      if (left === 0) this.inFlight.delete(reconcileKey);
      else this.inFlight.set(reconcileKey, left);
    }
  }

  isWriting(reconcileKey: string): boolean {
    return this.inFlight.has(reconcileKey);
  }

  /** Object (`type object`) → the writes of it under way, and the watch events held until they end. */
  private readonly applying = new Map<string, { writes: number; held: Held[] }>();

  /**
   * Marks a write of a child (apply) as under way. Its echo can arrive before the response that
   * tells us the new resourceVersion; {@link holdIfWriting} keeps such an event until the write
   * ends, then lets it through only if it is not the version we wrote. Without this, a loaded
   * machine (echo before response, every time) turns each reconcile's apply into the next one's
   * trigger.
   */
  async writingObject<R extends KubeObject>(
    target: { apiVersion: string; kind: string; key: string },
    write: () => Promise<R>,
  ): Promise<R> {
    const id = objectId(typeKeyOf(target.apiVersion, target.kind), target.key);
    const entry = this.applying.get(id) ?? { writes: 0, held: [] };
    entry.writes++;
    this.applying.set(id, entry);
    let result: R | undefined;
    try {
      result = await write();
      return result;
    } finally {
      if (--entry.writes === 0) {
        this.applying.delete(id);
        const version = result?.metadata?.resourceVersion;
        for (const held of entry.held) if (held.resourceVersion !== version) held.wake();
      }
    }
  }

  /**
   * True when a write of this object is under way: the event is held and `wake` runs once the
   * write ends, unless the event was its echo. False when nothing is being written: decide now.
   */
  holdIfWriting(
    typeKey: string,
    objectKey: string,
    resourceVersion: string | undefined,
    wake: () => void,
  ): boolean {
    const entry = this.applying.get(objectId(typeKey, objectKey));
    if (!entry) return false;
    entry.held.push({ resourceVersion, wake });
    return true;
  }

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Records that the reconcile of `reconcileKey` wrote `written`. A `quiet` write's echo does not
   * wake the key (see {@link isOwnWrite}); any other write's does, as anyone else's change would.
   */
  expect(reconcileKey: string, written: KubeObject, quiet = true): void {
    const resourceVersion = written.metadata?.resourceVersion;
    if (!resourceVersion || !written.apiVersion || !written.kind) return;
    const typeKey = typeKeyOf(written.apiVersion, written.kind);
    this.add(reconcileKey, {
      typeKey,
      objectKey: objectKey(written),
      resourceVersion,
      quiet,
      at: this.now(),
    });
  }

  /** Records that the reconcile of `reconcileKey` deleted the object (of this uid, when known). */
  expectGone(reconcileKey: string, typeKey: string, objectKey: string, uid: string | undefined): void {
    this.add(reconcileKey, {
      typeKey,
      objectKey,
      resourceVersion: "",
      gone: { uid },
      quiet: false,
      at: this.now(),
    });
  }

  private add(reconcileKey: string, expectation: Expectation): void {
    const id = objectId(expectation.typeKey, expectation.objectKey);
    // One expectation per object: the latest write supersedes earlier ones.
    const mine = this.pending.get(reconcileKey) ?? new Map<string, Expectation>();
    this.pending.set(reconcileKey, mine.set(id, expectation));
    this.byObject.set(id, (this.byObject.get(id) ?? new Set()).add(reconcileKey));
  }

  /** Ends the key's expectation of the object, keeping the index in step. */
  private settle(reconcileKey: string, id: string): void {
    const mine = this.pending.get(reconcileKey);
    mine?.delete(id);
    if (mine?.size === 0) this.pending.delete(reconcileKey);
    const keys = this.byObject.get(id);
    keys?.delete(reconcileKey);
    if (keys?.size === 0) this.byObject.delete(id);
  }

  /** True when the cache has caught up with every write of the key's last reconcile. */
  satisfied(reconcileKey: string, lookup: CacheLookup): boolean {
    const mine = this.pending.get(reconcileKey);
    if (!mine) return true;
    const now = this.now();
    for (const [id, e] of mine) {
      const cached = now - e.at > EXPECTATION_TIMEOUT_MS ? "expired" : lookup(e.typeKey, e.objectKey);
      const met =
        typeof cached === "string" ||
        (e.gone
          ? !cached || (e.gone.uid !== undefined && cached.metadata?.uid !== e.gone.uid)
          : isAtLeast(cached?.metadata?.resourceVersion, e.resourceVersion));
      if (met) {
        this.settle(reconcileKey, id); // expired, unwatched, or caught up
      }
    }
    return !this.pending.has(reconcileKey);
  }

  /**
   * True when this exact version of the object is one a reconcile of this controller just wrote:
   * its watch event is an echo of our own write, already known, and must not wake the key again
   * (it would cut a retry's backoff short, or loop on status writes).
   */
  isOwnWrite(typeKey: string, objectKey: string, resourceVersion: string | undefined): boolean {
    if (!resourceVersion) return false;
    const id = objectId(typeKey, objectKey);
    let own = false;
    for (const reconcileKey of this.byObject.get(id) ?? []) {
      const expectation = this.pending.get(reconcileKey)?.get(id);
      if (expectation?.resourceVersion !== resourceVersion) continue;
      // The echo is here, so the cache holds this version: the expectation is met.
      this.settle(reconcileKey, id);
      if (expectation.quiet) own = true;
    }
    return own;
  }

  /** An object was deleted: expectations of it can never be met by the cache, so they end here. */
  observeDeleted(typeKey: string, objectKey: string): void {
    const id = objectId(typeKey, objectKey);
    for (const reconcileKey of this.byObject.get(id) ?? []) this.settle(reconcileKey, id);
  }
}

function objectId(typeKey: string, objectKey: string): string {
  return `${typeKey} ${objectKey}`;
}

export function typeKeyOf(apiVersion: string, kind: string): string {
  return `${apiVersion}/${kind}`;
}

function isAtLeast(cached: string | undefined, expected: string): boolean {
  if (!cached) return false;
  if (/^\d+$/.test(cached) && /^\d+$/.test(expected)) return BigInt(cached) >= BigInt(expected);
  return cached === expected;
}
