import type { ListMeta } from "./types.js";

/**
 * Reads a List response (`{"kind":…,"metadata":{…},"items":[{…},{…}]}`) as it arrives, handing
 * out each item as soon as its closing brace is in, instead of waiting for the whole body and
 * parsing tens of megabytes at once. Parsing then overlaps the transfer, and the client never holds
 * the full response: only the item being read and the current chunk.
 *
 * The structure is found by scanning bytes, not decoded text: JSON's structural characters are
 * ASCII, and no byte of a multi-byte UTF-8 character is below 0x80, so they cannot be mistaken for
 * one. Only each item's bytes are decoded, once, right before `JSON.parse`. (Scanning the decoded
 * string instead cost one more full copy of the body and was about 25% slower on 50,000 ConfigMaps.)
 */

/** A list's fields other than its items (wherever they stand: built-ins put metadata first, custom resources last). */
export interface ListHead {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const ITEMS_KEY = Buffer.from('"items"');

/** Calls `onItem` with every parsed item, in order; resolves with the list's kind and metadata. */
export async function parseListStream(
  chunks: AsyncIterable<Uint8Array>,
  onItem: (item: unknown) => void,
): Promise<ListHead> {
  const scanner = new ListScanner(onItem);
  for await (const chunk of chunks) scanner.push(chunk);
  return scanner.end();
}

/** The scan's state between chunks: where it stands in the JSON, and the bytes it still needs. */
class ListScanner {
  private buffer: Buffer = Buffer.alloc(0); // unconsumed bytes
  private pos = 0; // next byte to scan in `buffer`
  private depth = 0; // open braces and brackets around `pos`
  private inString = false;
  private escaped = false;
  private keyStart = -1; // where the current depth-1 string began (keys are read there)
  private lastKeyIsItems = false;
  private itemsDepth = -1; // depth inside the `items` array, or -1 before it (-2 after it)
  private itemStart = -1; // where the item being read began
  private readonly outside: Buffer[] = []; // the bytes that are not items: head and tail
  private outsideStart = 0; // where the not-yet-saved outside bytes begin in `buffer`

  private readonly onItem: (item: unknown) => void;

  constructor(onItem: (item: unknown) => void) {
    this.onItem = onItem;
  }

  push(chunk: Uint8Array): void {
    this.buffer =
      this.buffer.length === 0
        ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        : Buffer.concat([this.buffer, chunk]);
    this.scan();
    // Drop what is consumed. Inside the items array keep only the item being read; outside it,
    // save the scanned bytes (the head and tail are small), except a key still being read.
    let keep: number;
    if (this.itemsDepth >= 0) {
      keep = this.itemStart >= 0 ? this.itemStart : this.pos;
    } else {
      keep = this.keyStart >= 0 ? this.keyStart : this.pos;
      this.outside.push(Buffer.from(this.buffer.subarray(this.outsideStart, keep)));
    }
    if (keep > 0) {
      this.buffer = this.buffer.subarray(keep);
      this.pos -= keep;
      if (this.itemStart >= 0) this.itemStart -= keep;
      if (this.keyStart >= 0) this.keyStart -= keep;
    }
    this.outsideStart = 0;
  }

  /** The list without its items: `…"items":[` + `]…` (or the whole body if it had no items array). */
  end(): ListHead {
    if (this.itemsDepth < 0) this.outside.push(this.buffer.subarray(this.outsideStart));
    return JSON.parse(Buffer.concat(this.outside).toString("utf8") || "{}") as ListHead;
  }

  // Runs once per byte of every list: the loop works on locals, written back once per chunk.
  private scan(): void {
    const bytes = this.buffer;
    const length = bytes.length;
    let { pos, depth, inString, escaped, keyStart, lastKeyIsItems, itemsDepth, itemStart } = this;
    for (; pos < length; pos++) {
      const c = bytes[pos] as number;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) {
          inString = false;
          if (keyStart >= 0) {
            lastKeyIsItems =
              pos + 1 - keyStart === ITEMS_KEY.length &&
              bytes.compare(ITEMS_KEY, 0, ITEMS_KEY.length, keyStart, pos + 1) === 0;
            keyStart = -1;
          }
        }
        continue;
      }
      if (c === QUOTE) {
        inString = true;
        keyStart = depth === 1 ? pos : -1;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        depth++;
        if (c === OPEN_BRACKET && depth === 2 && lastKeyIsItems && itemsDepth === -1) {
          itemsDepth = depth;
          this.outside.push(bytes.subarray(this.outsideStart, pos + 1)); // …"items":[
        } else if (c === OPEN_BRACE && depth === itemsDepth + 1) {
          itemStart = pos;
        }
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (c === CLOSE_BRACE && depth === itemsDepth + 1 && itemStart >= 0) {
          this.onItem(JSON.parse(bytes.toString("utf8", itemStart, pos + 1)));
          itemStart = -1;
        } else if (c === CLOSE_BRACKET && depth === itemsDepth) {
          itemsDepth = -2; // `items` appears once
          this.outsideStart = pos; // the tail starts with this `]`
        }
        depth--;
      }
    }
    this.pos = pos;
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    this.keyStart = keyStart;
    this.lastKeyIsItems = lastKeyIsItems;
    this.itemsDepth = itemsDepth;
    this.itemStart = itemStart;
  }
}
