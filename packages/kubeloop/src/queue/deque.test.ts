import { describe, expect, it } from "vitest";
import { Deque } from "./deque.js";

describe("Deque", () => {
  it("returns items first in, first out", () => {
    const deque = new Deque<number>();
    deque.push(1);
    deque.push(2);
    deque.push(3);
    expect(deque.length).toBe(3);
    expect(deque.peek()).toBe(1);
    expect([deque.shift(), deque.shift(), deque.shift()]).toEqual([1, 2, 3]);
    expect(deque.shift()).toBeUndefined();
    expect(deque.peek()).toBeUndefined();
    expect(deque.length).toBe(0);
  });

  it("keeps the order when it grows while wrapped around the end of its buffer", () => {
    const deque = new Deque<number>();
    let next = 0;
    let expected = 0;
    // Interleave so the head walks around the ring before and across every growth.
    for (let round = 0; round < 200; round++) {
      for (let i = 0; i < 7; i++) deque.push(next++);
      for (let i = 0; i < 5; i++) expect(deque.shift()).toBe(expected++);
    }
    expect(deque.length).toBe(next - expected);
    expect(deque.toArray()).toEqual(Array.from({ length: next - expected }, (_, i) => expected + i));
  });

  it("empties on clear and is usable again", () => {
    const deque = new Deque<string>();
    for (let i = 0; i < 40; i++) deque.push(`k${i}`);
    deque.shift();
    deque.clear();
    expect(deque.length).toBe(0);
    expect(deque.shift()).toBeUndefined();
    deque.push("a");
    expect(deque.toArray()).toEqual(["a"]);
  });
});
