import { type KubeObject, objectKey } from "../client/index.js";

/**
 * The cache's store: objects by `namespace/name`, plus indexes. The namespace index is built in;
 * users add their own ({@link IndexFunc}: an object → the values it is filed under).
 *
 * Every change keeps the indexes exact in O(values of the changed object), so a store of 50,000
 * objects updates as fast as one of 50 (an O(n) scan per event is the scale cliff of other caches).
 */

/** Maps an object to the index values it should be found under (e.g. its owner's name). */
export type IndexFunc<T> = (object: T) => string[];

/** The name of the index every store has: objects by namespace. */
export const NAMESPACE_INDEX = "namespace";

/** What a relist changed in a store: the objects added, updated, and vanished. */
export interface ReplaceResult<T> {
  added: T[];
  updated: { old: T; object: T }[];
  /**
   * Objects that were cached but are not in the new list: deleted while we were not watching, so
   * only their last known state is known (they reach delete handlers as tombstones).
   */
  vanished: T[];
  /** @deprecated Since 0.2: the same array as {@link ReplaceResult.vanished}, whose name says which "deleted" it is. */
  deleted: T[];
}

/** The objects of an informer by key (`namespace/name`), with named indexes to look them up by. */
export class Store<T extends KubeObject> {
  private readonly objects = new Map<string, T>();
  /** index name → its function, and value → keys */
  private readonly indexes = new Map<string, { fn: IndexFunc<T>; values: Map<string, Set<string>> }>();

  constructor(indexes: Record<string, IndexFunc<T>> = {}) {
    this.addIndex(NAMESPACE_INDEX, (object) => [object.metadata?.namespace ?? ""]);
    for (const [name, fn] of Object.entries(indexes)) this.addIndex(name, fn);
  }

  get size(): number {
    return this.objects.size;
  }

  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  /** Up to `count` objects, in insertion order, without copying the rest (for size estimates). */
  sample(count: number): T[] {
    const out: T[] = [];
    if (count <= 0) return out;
    for (const object of this.objects.values()) {
      out.push(object);
      if (out.length >= count) break;
    }
    return out;
  }

  keys(): string[] {
    return [...this.objects.keys()];
  }

  /** Objects filed under `value` in index `name`. */
  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`No index named "${name}" (have: ${[...this.indexes.keys()].join(", ")})`);
    const keys = index.values.get(value);
    if (!keys) return [];
    const result: T[] = [];
    for (const key of keys) {
      const object = this.objects.get(key);
      if (object) result.push(object);
    }
    return result;
  }

  /** Adds an index, filing every object already cached. */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexes.has(name)) throw new Error(`Index "${name}" already exists`);
    const values = new Map<string, Set<string>>();
    this.indexes.set(name, { fn, values });
    for (const [key, object] of this.objects) file(values, fn(object), key);
  }

  /** Inserts or replaces; returns the previous object, if any. */
  upsert(object: T): T | undefined {
    return this.put(objectKey(object), object);
  }

  /** Removes by key; returns the removed object, if it was cached. */
  remove(key: string): T | undefined {
    const old = this.objects.get(key);
    if (!old) return undefined;
    this.unindex(old, key);
    this.objects.delete(key);
    return old;
  }

  /** Replaces the whole content with a fresh list, and says what changed. */
  replace(objects: T[]): ReplaceResult<T> {
    const vanished: T[] = [];
    const result: ReplaceResult<T> = { added: [], updated: [], vanished, deleted: vanished };
    const seen = new Set<string>();
    for (const object of objects) {
      const key = objectKey(object);
      seen.add(key);
      const old = this.put(key, object);
      if (!old) result.added.push(object);
      else result.updated.push({ old, object });
    }
    for (const key of this.objects.keys()) {
      if (seen.has(key)) continue;
      const removed = this.remove(key);
      if (removed) result.vanished.push(removed);
    }
    return result;
  }

  private put(key: string, object: T): T | undefined {
    const old = this.objects.get(key);
    if (old) this.unindex(old, key);
    this.objects.set(key, object);
    this.index(object, key);
    return old;
  }

  private index(object: T, key: string): void {
    for (const { fn, values } of this.indexes.values()) file(values, fn(object), key);
  }

  private unindex(object: T, key: string): void {
    for (const { fn, values } of this.indexes.values()) {
      for (const value of fn(object)) {
        const keys = values.get(value);
        keys?.delete(key);
        if (keys?.size === 0) values.delete(value);
      }
    }
  }
}

function file(index: Map<string, Set<string>>, values: string[], key: string): void {
  for (const value of values) {
    let keys = index.get(value);
    if (!keys) {
      keys = new Set();
      index.set(value, keys);
    }
    keys.add(key);
  }
}
