import type { ListMeta } from "./types.js";

/**
 * Reads a List response (`{"kind":…,"metadata":{…},"items":[{…},{…}]}`) as it arrives, handing
 * out each item as soon as its closing brace is in, instead of waiting for the whole body and
 * parsing tens of megabytes at once. Parsing then overlaps the transfer, and the client never holds
 * the full response text: only the item being read and the current chunk.
 *
 * Measured on 50,000 ConfigMaps (69 MB): 0.78–0.94 s to the last item, against 1.06–1.61 s for
 * reading the body and `JSON.parse` of it whole, and 0.57–0.75 s for `kubectl get --raw` to read
 * the bytes only (bench/cache.mjs).
 */

/** A list's fields other than its items (wherever they stand: built-ins put metadata first, custom resources last). */
export interface ListHead {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
}

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;

/** Calls `onItem` with every parsed item, in order; resolves with the list's kind and metadata. */
export async function parseListStream(
  chunks: AsyncIterable<Uint8Array>,
  onItem: (item: unknown) => void,
): Promise<ListHead> {
  const decoder = new TextDecoder("utf-8");
  let text = "";
  let pos = 0; // next character to scan
  let depth = 0; // open braces and brackets around `pos`
  let inString = false;
  let escaped = false;
  let stringStart = -1; // where the current top-level string began (to read keys)
  let lastTopKey = ""; // the last string read at depth 1
  let itemsDepth = -1; // depth inside the `items` array, or -1 outside it
  let itemStart = -1; // where the item being read began
  let head = ""; // the text before `"items":[`
  let headDone = false;
  let tailStart = -1; // where the items array's `]` is in `text`, once it has closed

  const scan = () => {
    for (; pos < text.length; pos++) {
      const c = text.charCodeAt(pos);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) {
          inString = false;
          if (depth === 1 && stringStart >= 0) lastTopKey = text.slice(stringStart + 1, pos);
        }
        continue;
      }
      if (c === QUOTE) {
        inString = true;
        stringStart = depth === 1 ? pos : -1;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        depth++;
        if (c === OPEN_BRACKET && depth === 2 && lastTopKey === "items" && itemsDepth < 0) {
          itemsDepth = depth;
          if (!headDone) {
            head = text.slice(0, pos);
            headDone = true;
          }
        } else if (c === OPEN_BRACE && depth === itemsDepth + 1) {
          itemStart = pos;
        }
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (c === CLOSE_BRACE && depth === itemsDepth + 1 && itemStart >= 0) {
          onItem(JSON.parse(text.slice(itemStart, pos + 1)));
          itemStart = -1;
        } else if (c === CLOSE_BRACKET && depth === itemsDepth) {
          itemsDepth = -2; // done: `items` appears once
          tailStart = pos;
        }
        depth--;
      }
    }
  };

  for await (const chunk of chunks) {
    text += decoder.decode(chunk, { stream: true });
    scan();
    // Keep only what is still needed: the item being read, or nothing inside the items array;
    // before the array, everything (the head is small).
    if (headDone) {
      const keep = tailStart >= 0 ? tailStart : itemStart >= 0 ? itemStart : pos;
      if (keep > 0) {
        text = text.slice(keep);
        pos -= keep;
        if (itemStart >= 0) itemStart = 0;
        if (tailStart >= 0) tailStart = 0;
        stringStart = -1;
      }
    }
  }
  text += decoder.decode();
  scan();
  if (!headDone) {
    // No items array at all (an empty list may omit it): the whole body is the head.
    return JSON.parse(text || "{}") as ListHead;
  }
  // The list without its items: the head, an empty array, and the tail (which starts at `]`).
  // (Custom resources' lists put their metadata after the items, built-in ones before.)
  const tail = tailStart >= 0 ? text.slice(tailStart + 1) : "}";
  return JSON.parse(`${head}[]${tail}`) as ListHead;
}
