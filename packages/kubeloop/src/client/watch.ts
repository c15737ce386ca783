import { apiErrorFor, type Status } from "./errors.js";
import type { KubeObject, WatchEvent } from "./types.js";

/**
 * Decodes a watch response: one JSON event per line, where lines (and multi-byte characters) may be
 * split across chunks at any byte. An `ERROR` event (e.g. 410 Expired) becomes a thrown typed error.
 */
export async function* decodeWatchEvents<T extends KubeObject>(
  chunks: AsyncIterable<Uint8Array>,
  request = "WATCH",
): AsyncGenerator<WatchEvent<T>> {
  const decoder = new TextDecoder("utf-8");
  // Text after the last newline seen: the start of a line whose end has not arrived yet.
  let partial = "";
  for await (const chunk of chunks) {
    const text = partial + decoder.decode(chunk, { stream: true });
    let start = 0;
    // `partial` holds no newline: a line spread over many chunks is not scanned again for each one.
    let newline = text.indexOf("\n", partial.length);
    while (newline >= 0) {
      if (newline > start) yield parseEvent<T>(text.slice(start, newline), request);
      start = newline + 1;
      newline = text.indexOf("\n", start);
    }
    partial = start === 0 ? text : text.slice(start);
  }
  partial += decoder.decode();
  if (partial.trim()) yield parseEvent<T>(partial, request);
}

/**
 * Watch events a transport already holds as objects (an in-process server's: no JSON on either
 * side), checked as decoded ones are: an `ERROR` event becomes a thrown typed error.
 */
export async function* checkWatchEvents<T extends KubeObject>(
  events: AsyncIterable<{ type: string; object: unknown }>,
  request = "WATCH",
): AsyncGenerator<WatchEvent<T>> {
  for await (const event of events) yield checkedEvent<T>(event, request);
}

function parseEvent<T extends KubeObject>(line: string, request: string): WatchEvent<T> {
  return checkedEvent<T>(JSON.parse(line) as { type: string; object: unknown }, request);
}

function checkedEvent<T extends KubeObject>(
  event: { type: string; object: unknown },
  request: string,
): WatchEvent<T> {
  if (event.type === "ERROR") {
    const status = event.object as Status;
    throw apiErrorFor(status.code ?? 500, status, request);
  }
  return event as WatchEvent<T>;
}
