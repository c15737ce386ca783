import { describe, expect, it } from "vitest";
import { seededRandom } from "../../test/random.js";
import { parseListStream } from "./list-stream.js";

async function* split(bytes: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    yield bytes.subarray(start, cut);
    start = cut;
  }
}

const list = {
  kind: "ConfigMapList",
  apiVersion: "v1",
  metadata: { resourceVersion: "4242", continue: "token" },
  items: [
    { metadata: { name: "plain" }, data: { a: "1" } },
    {
      metadata: { name: "tricky" },
      data: { braces: "}{][", quote: 'say "hi"\\', emoji: "☕ é", nested: "[{}]" },
    },
    { metadata: { name: "deep" }, data: { x: "y" }, spec: { list: [{ a: [1, 2, { b: {} }] }] } },
  ],
};
const bytes = new TextEncoder().encode(JSON.stringify(list));

async function parse(cuts: number[]) {
  const items: unknown[] = [];
  const head = await parseListStream(split(bytes, cuts), (item) => items.push(item));
  return { head, items };
}

describe("parseListStream", () => {
  it("hands out each item and the list's metadata", async () => {
    const { head, items } = await parse([]);
    expect(items).toEqual(list.items);
    expect(head).toEqual({ kind: "ConfigMapList", apiVersion: "v1", metadata: list.metadata, items: [] });
  });

  it("gives the same result however the bytes are split", async () => {
    for (let cut = 1; cut < bytes.length; cut++) {
      const { head, items } = await parse([cut]);
      expect(items).toEqual(list.items);
      expect(head.metadata.resourceVersion).toBe("4242");
    }
    const random = seededRandom(7);
    for (let round = 0; round < 50; round++) {
      const cuts = [...new Set(Array.from({ length: 20 }, () => Math.floor(random() * bytes.length)))].sort(
        (a, b) => a - b,
      );
      expect((await parse(cuts.filter((c) => c > 0))).items).toEqual(list.items);
    }
  });

  it("tells escaped quotes and backslash runs apart wherever a chunk ends", async () => {
    const pieces = ["\\", '\\"', '"', "a", "é", "{", "]", '"items"'];
    const random = seededRandom(11);
    for (let round = 0; round < 300; round++) {
      const items = Array.from({ length: 1 + (round % 4) }, (_, i) => ({
        name: `x${i}`,
        value: Array.from({ length: round % 13 }, () => pieces[Math.floor(random() * pieces.length)]).join(
          "",
        ),
      }));
      const body = new TextEncoder().encode(
        JSON.stringify({ kind: "L", items, metadata: { resourceVersion: "7" } }),
      );
      const cuts = [
        ...new Set(Array.from({ length: 8 }, () => 1 + Math.floor(random() * (body.length - 1)))),
      ];
      const seen: unknown[] = [];
      const head = await parseListStream(
        split(
          body,
          cuts.sort((a, b) => a - b),
        ),
        (item) => seen.push(item),
      );
      expect(seen).toEqual(items);
      expect(head.metadata.resourceVersion).toBe("7");
    }
  });

  it("finds the metadata after the items too, where custom resources' lists put it", async () => {
    const crList = new TextEncoder().encode(
      '{"apiVersion":"x.dev/v1","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}],"kind":"XList","metadata":{"continue":"","resourceVersion":"99"}}',
    );
    for (let cut = 1; cut < crList.length; cut += 7) {
      const names: string[] = [];
      const head = await parseListStream(split(crList, [cut]), (item) =>
        names.push((item as { metadata: { name: string } }).metadata.name),
      );
      expect(names).toEqual(["a", "b"]);
      expect(head).toEqual({
        apiVersion: "x.dev/v1",
        kind: "XList",
        metadata: { continue: "", resourceVersion: "99" },
        items: [],
      });
    }
  });

  it("reads an empty list, with or without an items array", async () => {
    const empty = new TextEncoder().encode(
      '{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[]}',
    );
    const none = new TextEncoder().encode('{"kind":"PodList","metadata":{"resourceVersion":"8"}}');
    const seen: unknown[] = [];
    expect((await parseListStream(split(empty, [5]), (i) => seen.push(i))).metadata.resourceVersion).toBe(
      "7",
    );
    expect((await parseListStream(split(none, []), (i) => seen.push(i))).metadata.resourceVersion).toBe("8");
    expect(seen).toEqual([]);
  });
});
