import { describe, expect, it } from "vitest";
import { Gone } from "./errors.js";
import { decodeWatchEvents } from "./watch.js";

async function* chunks(bytes: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    yield bytes.subarray(start, cut);
    start = cut;
  }
}

async function collect(iterable: AsyncIterable<{ type: string; object: { metadata?: { name?: string } } }>) {
  const out: string[] = [];
  for await (const event of iterable) out.push(`${event.type} ${event.object.metadata?.name}`);
  return out;
}

const events = [
  { type: "ADDED", object: { metadata: { name: "café-☕" } } },
  { type: "MODIFIED", object: { metadata: { name: "b" } } },
  { type: "DELETED", object: { metadata: { name: "c" } } },
];
const wire = new TextEncoder().encode(`${events.map((e) => JSON.stringify(e)).join("\n")}\n`);

describe("decodeWatchEvents", () => {
  it("decodes events split at every possible byte, multi-byte characters included", async () => {
    for (let cut = 1; cut < wire.length; cut++) {
      expect(await collect(decodeWatchEvents(chunks(wire, [cut])))).toEqual([
        "ADDED café-☕",
        "MODIFIED b",
        "DELETED c",
      ]);
    }
  });

  it("decodes a stream delivered one byte at a time, and a last line without a newline", async () => {
    const noTrailingNewline = wire.subarray(0, wire.length - 1);
    const cuts = Array.from({ length: noTrailingNewline.length - 1 }, (_, i) => i + 1);
    expect(await collect(decodeWatchEvents(chunks(noTrailingNewline, cuts)))).toHaveLength(3);
  });

  it("turns an ERROR event into the typed error of its Status", async () => {
    const status = {
      kind: "Status",
      status: "Failure",
      code: 410,
      reason: "Expired",
      message: "too old resource version: 1 (42)",
    };
    const bytes = new TextEncoder().encode(`${JSON.stringify({ type: "ERROR", object: status })}\n`);
    await expect(collect(decodeWatchEvents(chunks(bytes, [])))).rejects.toBeInstanceOf(Gone);
  });
});
