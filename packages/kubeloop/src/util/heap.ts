/**
 * A binary min-heap whose items remember their own position, so that removing an item or moving it
 * after its key changed costs O(log n) instead of a linear search. The delaying queue keeps one
 * entry per waiting key here, ordered by ready time; the fake clock keeps its timers here.
 */

/** An element of a {@link MinHeap}. The heap owns `heapIndex`: -1 when the item is not in a heap. */
export interface HeapItem {
  heapIndex: number;
}

export class MinHeap<T extends HeapItem> {
  private readonly items: T[] = [];
  private readonly less: (a: T, b: T) => boolean;

  /** @param less strict order: true when `a` must come out before `b`. */
  constructor(less: (a: T, b: T) => boolean) {
    this.less = less;
  }

  get size(): number {
    return this.items.length;
  }

  /** The least item, left in place. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** Adds an item that is in no heap. */
  push(item: T): void {
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  /** Removes and returns the least item. */
  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    if (top === undefined) return undefined;
    const last = items.pop() as T;
    if (last !== top) {
      items[0] = last;
      last.heapIndex = 0;
      this.down(0);
    }
    top.heapIndex = -1;
    return top;
  }

  /** True when `item` is in this heap. */
  has(item: T): boolean {
    return item.heapIndex >= 0 && this.items[item.heapIndex] === item;
  }

  /** Removes `item` if it is in this heap; returns whether it was. */
  remove(item: T): boolean {
    if (!this.has(item)) return false;
    const items = this.items;
    const index = item.heapIndex;
    const last = items.pop() as T;
    if (last !== item) {
      items[index] = last;
      last.heapIndex = index;
      this.fix(index);
    }
    item.heapIndex = -1;
    return true;
  }

  /** Restores the order after `item`'s key changed (either way). */
  update(item: T): void {
    if (this.has(item)) this.fix(item.heapIndex);
  }

  /** Empties the heap (every item's `heapIndex` goes back to -1). */
  clear(): void {
    for (const item of this.items) item.heapIndex = -1;
    this.items.length = 0;
  }

  private fix(index: number): void {
    if (!this.up(index)) this.down(index);
  }

  /** Moves the item at `index` towards the root; returns whether it moved. */
  private up(index: number): boolean {
    const items = this.items;
    const item = items[index] as T;
    let i = index;
    while (i > 0) {
      const parentIndex = (i - 1) >> 1;
      const parent = items[parentIndex] as T;
      if (!this.less(item, parent)) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = parentIndex;
    }
    if (i === index) return false;
    items[i] = item;
    item.heapIndex = i;
    return true;
  }

  private down(index: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[index] as T;
    let i = index;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      let childItem = items[left] as T;
      if (right < n) {
        const rightItem = items[right] as T;
        if (this.less(rightItem, childItem)) {
          child = right;
          childItem = rightItem;
        }
      }
      if (!this.less(childItem, item)) break;
      items[i] = childItem;
      childItem.heapIndex = i;
      i = child;
    }
    items[i] = item;
    item.heapIndex = i;
  }
}
