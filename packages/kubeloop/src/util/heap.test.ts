import { describe, expect, it } from "vitest";
import { seededRandom } from "../../test/random.js";
import { MinHeap } from "./heap.js";

interface Item {
  value: number;
  id: number;
  heapIndex: number;
}

const byValueThenId = (a: Item, b: Item) => a.value < b.value || (a.value === b.value && a.id < b.id);
const item = (value: number, id: number): Item => ({ value, id, heapIndex: -1 });

function popAll(heap: MinHeap<Item>): number[] {
  const out: number[] = [];
  for (let next = heap.pop(); next !== undefined; next = heap.pop()) out.push(next.value);
  return out;
}

describe("MinHeap", () => {
  it("pops items in ascending order", () => {
    const heap = new MinHeap<Item>(byValueThenId);
    [5, 3, 8, 1, 9, 2, 7].forEach((v, i) => {
      heap.push(item(v, i));
    });
    expect(heap.size).toBe(7);
    expect(heap.peek()?.value).toBe(1);
    expect(popAll(heap)).toEqual([1, 2, 3, 5, 7, 8, 9]);
    expect(heap.pop()).toBeUndefined();
    expect(heap.peek()).toBeUndefined();
  });

  it("breaks ties with the comparator, so equal keys come out in a stable order", () => {
    const heap = new MinHeap<Item>(byValueThenId);
    const items = [item(1, 2), item(1, 0), item(0, 5), item(1, 1)];
    for (const i of items) heap.push(i);
    const ids: number[] = [];
    for (let next = heap.pop(); next !== undefined; next = heap.pop()) ids.push(next.id);
    expect(ids).toEqual([5, 0, 1, 2]);
  });

  it("tracks each item's position: has, remove and update work on any item", () => {
    const heap = new MinHeap<Item>(byValueThenId);
    const items = [4, 1, 6, 3, 5].map(item);
    for (const i of items) heap.push(i);
    const [four, one, six, three] = items as [Item, Item, Item, Item, Item];
    expect(heap.remove(three)).toBe(true);
    expect(three.heapIndex).toBe(-1);
    expect(heap.has(three)).toBe(false);
    expect(heap.remove(three)).toBe(false);
    six.value = 0;
    heap.update(six);
    four.value = 10;
    heap.update(four);
    expect(heap.has(one)).toBe(true);
    expect(popAll(heap)).toEqual([0, 1, 5, 10]);
  });

  it("ignores update of an item it does not hold", () => {
    const heap = new MinHeap<Item>(byValueThenId);
    heap.push(item(1, 0));
    heap.update(item(0, 1));
    expect(popAll(heap)).toEqual([1]);
  });

  it("empties on clear and marks every item as out of the heap", () => {
    const heap = new MinHeap<Item>(byValueThenId);
    const items = [3, 1, 2].map(item);
    for (const i of items) heap.push(i);
    heap.clear();
    expect(heap.size).toBe(0);
    expect(items.every((i) => i.heapIndex === -1)).toBe(true);
  });

  it("agrees with sorting under random pushes, pops, removals and key changes", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rand = seededRandom(seed);
      const heap = new MinHeap<Item>(byValueThenId);
      const inside = new Set<Item>();
      let nextId = 0;
      for (let step = 0; step < 2000; step++) {
        const roll = rand();
        const members = [...inside];
        if (roll < 0.4 || members.length === 0) {
          const i = item(Math.floor(rand() * 100), nextId++);
          heap.push(i);
          inside.add(i);
        } else if (roll < 0.6) {
          const expected = [...inside].sort((a, b) => (byValueThenId(a, b) ? -1 : 1))[0];
          expect(heap.pop(), `seed ${seed} step ${step}`).toBe(expected);
          inside.delete(expected as Item);
        } else if (roll < 0.8) {
          const victim = members[Math.floor(rand() * members.length)] as Item;
          expect(heap.remove(victim)).toBe(true);
          inside.delete(victim);
        } else {
          const changed = members[Math.floor(rand() * members.length)] as Item;
          changed.value = Math.floor(rand() * 100);
          heap.update(changed);
        }
        expect(heap.size).toBe(inside.size);
      }
      const rest = [...inside].sort((a, b) => (byValueThenId(a, b) ? -1 : 1)).map((i) => i.value);
      expect(popAll(heap)).toEqual(rest);
    }
  });
});
