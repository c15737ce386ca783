import { clone } from "./clone.js";
import type { Matcher } from "./selectors.js";

/**
 * One open watch: the events of one resource (one namespace or all) that pass its selectors,
 * queued as they are sent: newline-delimited JSON over HTTPS, as the API server streams them, or
 * as objects (copies) to an in-process client, which then parses no JSON. An object that stops
 * matching the selectors is sent as DELETED, one that starts matching as ADDED (as the server does).
 */

export interface StoredEvent {
  resourceVersion: number;
  resource: string;
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: Record<string, unknown>;
  /** The object before the change (MODIFIED, DELETED), to compute selector transitions and past states. */
  previous: Record<string, unknown> | undefined;
}

export interface WatchFilter {
  resource: string;
  namespace: string | undefined;
  labels: Matcher;
  fields: Matcher;
  /** The selectable values of an object (labels and fields). */
  valuesOf(object: Record<string, unknown>): {
    labels: Record<string, string>;
    fields: Record<string, string>;
  };
  allowBookmarks: boolean;
  /** Returns objects as PartialObjectMetadata. */
  metadataOnly: boolean;
  apiVersion: string;
  kind: string;
}

const encoder = new TextEncoder();

export class WatchStream {
  /** Events not read yet (stored objects never change: encoded or copied when read). */
  private queue: { type: string; object: object }[] = [];
  private waiting: (() => void) | undefined;
  private closed = false;

  constructor(
    readonly filter: WatchFilter,
    private readonly onClose: (watch: WatchStream) => void,
  ) {}

  private matches(object: Record<string, unknown> | undefined): boolean {
    if (!object) return false;
    const metadata = object.metadata as { namespace?: string };
    if (this.filter.namespace && metadata.namespace !== this.filter.namespace) return false;
    const values = this.filter.valuesOf(object);
    return this.filter.labels(values.labels) && this.filter.fields(values.fields);
  }

  /** Queues a stored event if it concerns this watch. */
  offer(event: StoredEvent): void {
    if (this.closed || event.resource !== this.filter.resource) return;
    const now = event.type !== "DELETED" && this.matches(event.object);
    const before = event.type !== "ADDED" && this.matches(event.previous);
    if (event.type === "DELETED") {
      if (before) this.push("DELETED", event.object);
    } else if (now && (before || event.type === "ADDED")) {
      this.push(event.type, event.object);
    } else if (now) {
      this.push("ADDED", event.object);
    } else if (before && event.previous) {
      // Leaving the selection: the last state that matched.
      this.push("DELETED", event.previous);
    }
  }

  push(type: string, object: Record<string, unknown>): void {
    if (this.closed) return;
    this.queue.push({ type, object: this.shape(object) });
    this.wake();
  }

  /** A BOOKMARK (only if the watch asked for them), carrying the resourceVersion and optional annotations. */
  bookmark(resourceVersion: number, annotations?: Record<string, string>): void {
    if (!this.filter.allowBookmarks) return;
    const object = {
      kind: this.filter.metadataOnly ? "PartialObjectMetadata" : this.filter.kind,
      apiVersion: this.filter.metadataOnly ? "meta.k8s.io/v1" : this.filter.apiVersion,
      metadata: { resourceVersion: String(resourceVersion), ...(annotations ? { annotations } : {}) },
    };
    this.queue.push({ type: "BOOKMARK", object });
    this.wake();
  }

  /** An ERROR event (e.g. 410 Expired), then the end of the stream. */
  error(status: object): void {
    this.queue.push({ type: "ERROR", object: status });
    this.close();
  }

  private shape(object: Record<string, unknown>): Record<string, unknown> {
    if (!this.filter.metadataOnly) return object;
    return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata };
  }

  /** Everything queued was taken, and the consumer waits for more (it has handled what it got). */
  get drained(): boolean {
    return this.closed || (this.queue.length === 0 && this.waiting !== undefined);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose(this);
    this.wake();
  }

  private wakeScheduled = false;

  /**
   * Hands queued events to the reader on the next turn of the event loop, not at once: the writer's
   * response reaches its caller first, as it does over a network (a watch event trails the write's
   * answer), so a controller's read-your-writes bookkeeping sees the usual order.
   */
  private wake(): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      const waiting = this.waiting;
      this.waiting = undefined;
      waiting?.();
    });
  }

  /** The stream's bytes: one event per line, until closed and drained. */
  async *body(): AsyncGenerator<Uint8Array> {
    for await (const batch of this.batches()) {
      let text = "";
      for (const event of batch) text += `${JSON.stringify(event)}\n`;
      yield encoder.encode(text);
    }
  }

  /** The stream's events as objects (copies: the reader may change them), until closed and drained. */
  async *events(): AsyncGenerator<{ type: string; object: unknown }> {
    for await (const batch of this.batches()) for (const event of batch) yield clone(event);
  }

  /** What was queued since the last batch, whenever there is some, until closed and drained. */
  private async *batches(): AsyncGenerator<{ type: string; object: object }[]> {
    try {
      for (;;) {
        if (this.queue.length) {
          const batch = this.queue;
          this.queue = [];
          yield batch;
          continue;
        }
        if (this.closed) return;
        await new Promise<void>((resolve) => {
          this.waiting = resolve;
        });
      }
    } finally {
      this.close();
    }
  }
}
