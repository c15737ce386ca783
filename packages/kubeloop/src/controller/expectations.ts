import { type KubeObject, objectKey } from "../client/types.js";

/**
 * Read your own writes. A reconcile that writes an object (apply, status) leaves an expectation:
 * "the cache must show this object at this resourceVersion or newer". Before the next reconcile of
 * the same key, the controller checks them; until they hold, the key waits (briefly requeued), so it
 * never acts on a cache older than its own last write (and never, say, creates a child twice).
 *
 * resourceVersions are opaque to clients, but the API server's are etcd revisions: decimal integers
 * that grow. Where both are integers they are compared as numbers; otherwise only the same version
 * counts. An expectation older than {@link EXPECTATION_TIMEOUT_MS} is dropped: a watch that
 * is down must slow a controller, not stop it.
 *
 * Every watch event asks {@link Expectations.isOwnWrite}, so the pending writes are indexed by
 * object and version: a scan of them all made converging N objects cost O(N²). The echo of a write
 * also settles it (the cache holds that version by then), so expectations do not pile up for keys
 * that are not reconciled again.
 */

interface Expectation {
  typeKey: string;
  objectKey: string;
  resourceVersion: string;
  at: number;
}

/** Long enough for any healthy watch to deliver an event; short enough not to stall a key for long. */
export const EXPECTATION_TIMEOUT_MS = 10_000;

export type CacheLookup = (typeKey: string, objectKey: string) => KubeObject | undefined | "unwatched";

export class Expectations {
  private readonly pending = new Map<string, Expectation[]>();
  /** `type, object, resourceVersion` of every pending expectation → the reconcile keys expecting it. */
  private readonly byVersion = new Map<string, Set<string>>();
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

  constructor(private readonly now: () => number = Date.now) {}

  /** Records that the reconcile of `reconcileKey` wrote `written`. */
  expect(reconcileKey: string, written: KubeObject): void {
    const resourceVersion = written.metadata?.resourceVersion;
    if (!resourceVersion || !written.apiVersion || !written.kind) return;
    const list = this.pending.get(reconcileKey) ?? [];
    const entry = {
      typeKey: typeKeyOf(written.apiVersion, written.kind),
      objectKey: objectKey(written),
      resourceVersion,
      at: this.now(),
    };
    // One expectation per object: the latest write supersedes earlier ones.
    const others = list.filter((e) => e.typeKey !== entry.typeKey || e.objectKey !== entry.objectKey);
    this.replace(reconcileKey, [...others, entry]);
  }

  /** Sets (or with an empty list, clears) the key's expectations, keeping the index in step. */
  private replace(reconcileKey: string, list: Expectation[]): void {
    for (const e of this.pending.get(reconcileKey) ?? []) {
      const id = versionId(e.typeKey, e.objectKey, e.resourceVersion);
      const keys = this.byVersion.get(id);
      keys?.delete(reconcileKey);
      if (keys?.size === 0) this.byVersion.delete(id);
    }
    if (list.length === 0) {
      this.pending.delete(reconcileKey);
      return;
    }
    this.pending.set(reconcileKey, list);
    for (const e of list) {
      const id = versionId(e.typeKey, e.objectKey, e.resourceVersion);
      const keys = this.byVersion.get(id);
      if (keys) keys.add(reconcileKey);
      else this.byVersion.set(id, new Set([reconcileKey]));
    }
  }

  /** True when the cache has caught up with every write of the key's last reconcile. */
  satisfied(reconcileKey: string, lookup: CacheLookup): boolean {
    const list = this.pending.get(reconcileKey);
    if (!list) return true;
    const now = this.now();
    const open = list.filter((e) => {
      if (now - e.at > EXPECTATION_TIMEOUT_MS) return false;
      const cached = lookup(e.typeKey, e.objectKey);
      if (cached === "unwatched") return false;
      return !cached || !isAtLeast(cached.metadata?.resourceVersion, e.resourceVersion);
    });
    if (open.length !== list.length) this.replace(reconcileKey, open);
    return open.length === 0;
  }

  /**
   * True when this exact version of the object is one a reconcile of this controller just wrote:
   * its watch event is an echo of our own write, already known, and must not wake the key again
   * (it would cut a retry's backoff short, or loop on status writes).
   */
  isOwnWrite(typeKey: string, objectKey: string, resourceVersion: string | undefined): boolean {
    if (!resourceVersion) return false;
    const keys = this.byVersion.get(versionId(typeKey, objectKey, resourceVersion));
    if (!keys) return false;
    // The echo is here, so the cache holds this version: the expectation is met.
    for (const reconcileKey of [...keys]) {
      const list = this.pending.get(reconcileKey) ?? [];
      this.replace(
        reconcileKey,
        list.filter((e) => e.typeKey !== typeKey || e.objectKey !== objectKey),
      );
    }
    return true;
  }

  /** An object was deleted: expectations of it can never be met by the cache, so they end here. */
  observeDeleted(typeKey: string, objectKey: string): void {
    for (const [reconcileKey, list] of [...this.pending]) {
      const open = list.filter((e) => e.typeKey !== typeKey || e.objectKey !== objectKey);
      if (open.length !== list.length) this.replace(reconcileKey, open);
    }
  }

  forget(reconcileKey: string): void {
    this.replace(reconcileKey, []);
  }
}

function versionId(typeKey: string, objectKey: string, resourceVersion: string): string {
  return `${typeKey} ${objectKey} ${resourceVersion}`;
}

export function typeKeyOf(apiVersion: string, kind: string): string {
  return `${apiVersion}/${kind}`;
}

function isAtLeast(cached: string | undefined, expected: string): boolean {
  if (!cached) return false;
  if (/^\d+$/.test(cached) && /^\d+$/.test(expected)) return BigInt(cached) >= BigInt(expected);
  return cached === expected;
}
