/**
 * A first-in, first-out ring buffer: `push` at the back, `shift` from the front, both O(1) and
 * allocation-free until the buffer is full (then it doubles). `Array.prototype.shift` is O(n) once
 * an array leaves V8's fast path, which a busy queue of thousands of keys does.
 *
 * The buffer keeps its high-water capacity: a workqueue holds at most one live entry per key, so
 * the capacity is bounded by the number of distinct keys, and keeping it avoids regrowing after
 * every burst.
 */

/** Slots allocated up front: small, since most priority levels hold a handful of keys. */
const INITIAL_CAPACITY = 16;

export class Deque<T> {
  private buffer: (T | undefined)[];
  private mask: number;
  private head = 0;
  private count = 0;

  constructor() {
    this.buffer = new Array<T | undefined>(INITIAL_CAPACITY).fill(undefined);
    this.mask = INITIAL_CAPACITY - 1;
  }

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.count === this.buffer.length) this.grow();
    this.buffer[(this.head + this.count) & this.mask] = item;
    this.count++;
  }

  /** Removes and returns the front item, or undefined when empty. */
  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.buffer[this.head];
    this.buffer[this.head] = undefined; // let the item be collected
    this.head = (this.head + 1) & this.mask;
    this.count--;
    return item;
  }

  /** The front item, left in place. */
  peek(): T | undefined {
    return this.count === 0 ? undefined : this.buffer[this.head];
  }

  clear(): void {
    while (this.count > 0) this.shift();
    this.head = 0;
  }

  /** The items front to back (a copy). */
  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.count; i++) out.push(this.buffer[(this.head + i) & this.mask] as T);
    return out;
  }

  private grow(): void {
    const old = this.buffer;
    const capacity = old.length * 2;
    const next = new Array<T | undefined>(capacity).fill(undefined);
    for (let i = 0; i < this.count; i++) next[i] = old[(this.head + i) & this.mask];
    this.buffer = next;
    this.mask = capacity - 1;
    this.head = 0;
  }
}
