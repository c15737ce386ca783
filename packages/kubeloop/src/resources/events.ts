import { randomInt } from "node:crypto";
import { hostname } from "node:os";
import type { ObjectReference } from "kubernetes-types/core/v1.js";
import type { Event as EventObject } from "kubernetes-types/events/v1.js";
import type { Client, KubeObject } from "../client/index.js";
import { keyOfRef, kindKeyOf, NotFound } from "../client/index.js";
import { typedKeyOf } from "../client/internal.js";
import { Event as EventResource } from "../k8s/index.js";
import { type Clock, systemClock, TokenBucket } from "../util/index.js";
import { InvalidEvent } from "./errors.js";
import { isQualifiedName } from "./names.js";

/** Events per object before the limit applies: client-go's spam filter burst. */
export const DEFAULT_EVENT_BURST = 25;
/** One more Event per object every 5 minutes once the burst is spent (client-go: qps 1/300). */
export const DEFAULT_EVENT_REFILL_MS = 5 * 60_000;
/** Repeats within 6 minutes extend a series; client-go's and kube-rs's series lifetime. */
export const DEFAULT_SERIES_WINDOW_MS = 6 * 60_000;
/** Series counts are written at most this often: kubectl shows current counts, the API sees little load. */
export const DEFAULT_FLUSH_INTERVAL_MS = 30_000;
/** Series and buckets remembered (least recently used beyond it forgotten), client-go's LRU size. */
export const MAX_TRACKED_EVENTS = 4096;
/** Creates in flight beyond which new Events are dropped, client-go's queue bound. */
export const MAX_PENDING_EVENT_WRITES = 1000;
/** The API's limit on `note`, in UTF-8 bytes; longer notes are cut to fit, ending in "…". */
export const MAX_EVENT_NOTE_BYTES = 1024;
/** The API's limit on `reason`, `action` and `reportingInstance`. */
export const MAX_EVENT_FIELD_LENGTH = 128;
/** Where Events about cluster-scoped objects go (the API accepts them only there or in ""). */
export const CLUSTER_EVENTS_NAMESPACE = "default";

/** An event's type: `Warning` for what a user should look at, `Normal` for the rest. */
export type EventType = "Normal" | "Warning";

/** One event about an object: type, reason, action, and a note for people. */
export interface EventInput {
  /** `Warning` for what a user should look at, `Normal` for the rest. */
  type: EventType;
  /** Why, in CamelCase: `FailedCreate`, `ScalingReplicaSet`. At most 128 characters. */
  reason: string;
  /** What the controller did or failed to do: `Create`, `Reconcile`. At most 128 characters. */
  action: string;
  /** For humans; cut to 1 KiB. */
  note?: string;
  /** A second object involved, e.g. the Pod a Deployment controller created. */
  related?: KubeObject;
}

/** Who reports the events, and where write failures go. */
export interface EventRecorderOptions {
  /** The controller's name, as a qualified name: `example.com/widget-controller`. Required. */
  reportingController: string;
  /** Which replica: default `<reportingController>-<hostname>` (the pod's name in a cluster), as client-go. */
  reportingInstance?: string;
  /** Told of every event that could not be written (never thrown into the caller). */
  onError?: (error: Error, event: EventObject | undefined) => void;
  /** Default {@link DEFAULT_EVENT_BURST}. */
  burst?: number;
  /** Default {@link DEFAULT_EVENT_REFILL_MS}. */
  refillIntervalMs?: number;
  /** Default {@link DEFAULT_SERIES_WINDOW_MS}. */
  seriesWindowMs?: number;
  /** Default {@link DEFAULT_FLUSH_INTERVAL_MS}. */
  flushIntervalMs?: number;
  /** Wall clock in epoch milliseconds, for tests that move time. Default `Date.now`. */
  now?: () => number;
}

/** Counters of what an `EventRecorder` wrote and dropped. */
export interface EventRecorderStats {
  /** Events created. */
  created: number;
  /** Series counts written to existing Events. */
  seriesUpdates: number;
  /** Events not written because of the rate limit or a full write queue. */
  dropped: number;
  /** Writes that failed (each also went to `onError`). */
  failed: number;
}

/** One Event on the server and the occurrences it stands for. */
interface Series {
  readonly key: string;
  readonly body: EventObject & { metadata: { name: string; namespace: string } };
  /** Occurrences seen. */
  count: number;
  /** Occurrences the server has; 0 until the create succeeds. */
  written: number;
  lastObserved: number;
}

/**
 * An event recorder for events.k8s.io/v1 Events: what `kubectl describe` and `kubectl events` show
 * users about their objects.
 *
 * How it writes, and why (client-go's `tools/events` is the model; where it differs, it says so):
 * - `event()` returns at once and never throws: writes happen in the background, and a failure
 *   (Forbidden, server down, an invalid event) goes to `onError`. An event is a courtesy to
 *   users; it must never fail or slow a reconcile.
 * - **Series.** The first occurrence of an event creates an Event. Repeats of the same event
 *   (same object, type, reason, action, note and related object) within
 *   {@link DEFAULT_SERIES_WINDOW_MS} of the previous one are counted in memory and written as the
 *   Event's `series` (`count`, `lastObservedTime`) by a merge patch, at most once per
 *   {@link DEFAULT_FLUSH_INTERVAL_MS} per series. A controller that retries every second for an hour
 *   writes ~120 patches to one Event, not 3600 Events. client-go patches on the 2nd occurrence, then
 *   only every 30 minutes (and when the series ends); we write sooner, so `series.count` in
 *   `kubectl describe` is at most 30 s behind, at one small patch per busy series per 30 s.
 *   The key leaves out the object's resourceVersion (client-go keeps it), so a series survives
 *   the object's own updates, which are what a controller's retries usually cause.
 * - **Rate limit.** A token bucket per regarding object ({@link DEFAULT_EVENT_BURST} Events, then one
 *   per {@link DEFAULT_EVENT_REFILL_MS}; client-go's EventSourceObjectSpamFilter numbers) limits new
 *   Events; repeats folded into a series are not charged, since they cost no new object. Events
 *   over the limit are dropped and counted in `stats.dropped`.
 * - `flush()` writes every pending create and series count; `close()` flushes and stops.
 *
 * @example
 * ```ts
 * const recorder = new EventRecorder(client, { reportingController: "example.com/widgets" });
 * recorder.event(widget, { type: "Warning", reason: "FailedCreate", action: "Create", note: error.message });
 * await recorder.close(); // on shutdown: writes pending counts
 * ```
 */
export class EventRecorder {
  /** {@link EventRecorderOptions.reportingController}: written to every Event. */
  readonly reportingController: string;
  /** {@link EventRecorderOptions.reportingInstance}, or its default: written to every Event. */
  readonly reportingInstance: string;
  private readonly client: Client;
  /** The controller's name, cut to the 128 characters a field manager may have. */
  private readonly fieldManager: string;
  private readonly onError: EventRecorderOptions["onError"];
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly windowMs: number;
  private readonly flushMs: number;
  private readonly now: () => number;
  /** The buckets' clock: {@link now} for the time. */
  private readonly clock: Clock;
  /** Insertion order is recency: a touched entry is deleted and set again. */
  private readonly series = new Map<string, Series>();
  /** Series replaced by a newer one (or evicted) whose final count is still to be written. */
  private readonly ending = new Set<Series>();
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly creates = new Set<Promise<void>>();
  private readonly counts: EventRecorderStats = { created: 0, seriesUpdates: 0, dropped: 0, failed: 0 };
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private closed: Promise<void> | undefined;

  constructor(client: Client, options: EventRecorderOptions) {
    const { reportingController } = options;
    if (typeof reportingController !== "string" || !isQualifiedName(reportingController)) {
      throw new TypeError(
        `reportingController ${JSON.stringify(reportingController)} is not a qualified name: ` +
          `use e.g. "example.com/widget-controller" (letters, digits, "-", "_", "."; an optional domain and "/")`,
      );
    }
    const instance =
      options.reportingInstance ?? `${reportingController}-${hostname()}`.slice(0, MAX_EVENT_FIELD_LENGTH);
    if (!instance || instance.length > MAX_EVENT_FIELD_LENGTH) {
      throw new TypeError(`reportingInstance must be 1 to ${MAX_EVENT_FIELD_LENGTH} characters`);
    }
    this.client = client;
    this.reportingController = reportingController;
    this.reportingInstance = instance;
    this.fieldManager = reportingController.slice(0, MAX_EVENT_FIELD_LENGTH);
    this.onError = options.onError;
    this.burst = positive("burst", options.burst ?? DEFAULT_EVENT_BURST);
    this.refillMs = positive("refillIntervalMs", options.refillIntervalMs ?? DEFAULT_EVENT_REFILL_MS);
    this.windowMs = positive("seriesWindowMs", options.seriesWindowMs ?? DEFAULT_SERIES_WINDOW_MS);
    this.flushMs = positive("flushIntervalMs", options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS);
    this.now = options.now ?? Date.now;
    this.clock = { ...systemClock, now: this.now };
  }

  /** Counters since the recorder was made (a copy). */
  get stats(): EventRecorderStats {
    return { ...this.counts };
  }

  /**
   * Records an event about `regarding` (an object as read from the server: its uid and
   * resourceVersion go into the reference). Returns at once; never throws. Ignored after `close()`.
   */
  event(regarding: KubeObject, input: EventInput): void {
    if (this.closed) return;
    try {
      this.record(regarding, input);
    } catch (error) {
      this.counts.failed++;
      this.report(error, undefined);
    }
  }

  /**
   * Writes what is pending: waits for creates in flight, then writes every series count not yet on
   * the server. Never rejects (failures go to `onError`).
   */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.flushOnce());
    this.flushing = run.catch(() => undefined);
    return this.flushing;
  }

  /** Stops recording (later events are ignored), then flushes. Safe to call twice. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      clearTimeout(this.timer);
      this.timer = undefined;
      await this.flush();
    })();
    return this.closed;
  }

  /** `close()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private record(regarding: KubeObject, input: EventInput): void {
    const subject = reference(regarding, "regarding");
    const related = input.related ? reference(input.related, "related") : undefined;
    validate(input);
    const note = truncateNote(input.note ?? "");
    const now = this.now();
    const key = JSON.stringify([
      identity(subject),
      input.type,
      input.reason,
      input.action,
      note,
      related ? identity(related) : null,
    ]);
    const existing = this.series.get(key);
    if (existing && now - existing.lastObserved <= this.windowMs) {
      existing.count++;
      existing.lastObserved = now;
      touch(this.series, key, existing);
      if (existing.written > 0) this.scheduleFlush();
      return;
    }
    if (existing) this.retire(existing);
    if (!this.take(identity(subject)) || this.creates.size >= MAX_PENDING_EVENT_WRITES) {
      this.counts.dropped++;
      return;
    }
    const series: Series = {
      key,
      body: {
        apiVersion: "events.k8s.io/v1",
        kind: "Event",
        metadata: {
          name: eventName(subject.name ?? "", now),
          namespace: subject.namespace || CLUSTER_EVENTS_NAMESPACE,
        },
        eventTime: microTime(now),
        type: input.type,
        reason: input.reason,
        action: input.action,
        ...(note ? { note } : {}),
        regarding: subject,
        ...(related ? { related } : {}),
        reportingController: this.reportingController,
        reportingInstance: this.reportingInstance,
      },
      count: 1,
      written: 0,
      lastObserved: now,
    };
    const evicted = touch(this.series, key, series);
    if (evicted) this.retire(evicted);
    const create = this.create(series);
    this.creates.add(create);
    void create.finally(() => this.creates.delete(create));
  }

  private async create(series: Series): Promise<void> {
    try {
      await this.client.create(series.body, { fieldManager: this.fieldManager });
      series.written = 1;
      this.counts.created++;
      if (series.count > 1) this.scheduleFlush(); // repeats arrived while it was being created
    } catch (error) {
      this.counts.failed++;
      this.forget(series);
      this.report(error, series.body);
    }
  }

  private async flushOnce(): Promise<void> {
    // A series count can be written only once its Event exists; creates may start meanwhile.
    while (this.creates.size > 0) await Promise.all(this.creates);
    const now = this.now();
    const writes: Promise<void>[] = [];
    for (const series of [...this.series.values(), ...this.ending]) {
      const ended = this.ending.has(series) || now - series.lastObserved > this.windowMs;
      if (series.written > 0 && series.count > series.written) writes.push(this.writeSeries(series, ended));
      else if (ended) this.forget(series);
    }
    await Promise.all(writes);
  }

  private async writeSeries(series: Series, ended: boolean): Promise<void> {
    const { count, lastObserved } = series;
    const { name, namespace } = series.body.metadata;
    const patch = { series: { count, lastObservedTime: microTime(lastObserved) } };
    try {
      await this.client.patch(EventResource, name, patch, {
        namespace,
        fieldManager: this.fieldManager,
      });
      series.written = Math.max(series.written, count);
      this.counts.seriesUpdates++;
      if (ended) this.forget(series);
    } catch (error) {
      // Deleted (by a user, or its TTL): the next repeat starts a new Event; nothing to report.
      if (error instanceof NotFound) return this.forget(series);
      this.counts.failed++;
      // A final count is tried once (as client-go does); a live series again at the next flush.
      if (ended) this.forget(series);
      else this.scheduleFlush();
      this.report(error, { ...series.body, series: patch.series });
    }
  }

  private scheduleFlush(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushMs);
    this.timer.unref(); // pending counts must not keep a process alive; close() writes them
  }

  /** Takes a token from the object's bucket; false when it is empty. */
  private take(subject: string): boolean {
    const bucket = this.buckets.get(subject) ?? TokenBucket.oneEvery(this.refillMs, this.burst, this.clock);
    touch(this.buckets, subject, bucket);
    return bucket.tryTake();
  }

  private forget(series: Series): void {
    if (this.series.get(series.key) === series) this.series.delete(series.key);
    this.ending.delete(series);
  }

  /** Out of the map; its final count is still written if the server has not seen it. */
  private retire(series: Series): void {
    this.forget(series);
    if (series.count > Math.max(series.written, 1)) {
      this.ending.add(series);
      this.scheduleFlush();
    }
  }

  private report(error: unknown, event: EventObject | undefined): void {
    if (!this.onError) return;
    try {
      this.onError(error instanceof Error ? error : new Error(String(error)), event);
    } catch {
      // onError's own failure must not reach the caller either.
    }
  }
}

/** Moves `key` to the most recent end; forgets and returns the least recent beyond the bound. */
function touch<V>(map: Map<string, V>, key: string, value: V): V | undefined {
  map.delete(key);
  map.set(key, value);
  if (map.size <= MAX_TRACKED_EVENTS) return undefined;
  const [oldest, evicted] = map.entries().next().value ?? [];
  if (oldest !== undefined) map.delete(oldest);
  return evicted;
}

function reference(object: KubeObject, field: string): ObjectReference {
  const { apiVersion, kind } = object;
  const metadata = object.metadata ?? {};
  if (!kind || !metadata.name) {
    throw new InvalidEvent(
      `The ${field} object needs kind and metadata.name (objects from lists of built-in kinds lack kind; set it)`,
    );
  }
  return {
    ...(apiVersion ? { apiVersion } : {}),
    kind,
    name: metadata.name,
    ...(metadata.namespace ? { namespace: metadata.namespace } : {}),
    ...(metadata.uid ? { uid: metadata.uid } : {}),
    ...(metadata.resourceVersion ? { resourceVersion: metadata.resourceVersion } : {}),
  };
}

/** The object, not its version: a uid when known, else its coordinates. */
function identity(ref: ObjectReference): string {
  return (
    ref.uid ??
    typedKeyOf(
      kindKeyOf({ apiVersion: ref.apiVersion ?? "", kind: ref.kind ?? "" }),
      keyOfRef({ namespace: ref.namespace, name: ref.name ?? "" }),
    )
  );
}

function validate(input: EventInput): void {
  if (input.type !== "Normal" && input.type !== "Warning") {
    throw new InvalidEvent(`Event type must be "Normal" or "Warning", got ${JSON.stringify(input.type)}`);
  }
  for (const field of ["reason", "action"] as const) {
    const value = input[field];
    if (typeof value !== "string" || value.length === 0 || value.length > MAX_EVENT_FIELD_LENGTH) {
      throw new InvalidEvent(
        `Event ${field} must be 1 to ${MAX_EVENT_FIELD_LENGTH} characters, got ${JSON.stringify(value)}`,
      );
    }
  }
}

const encoder = new TextEncoder();

/** Cut to {@link MAX_EVENT_NOTE_BYTES} UTF-8 bytes on a character boundary, ending in "…". */
export function truncateNote(note: string): string {
  if (note.length * 3 <= MAX_EVENT_NOTE_BYTES || encoder.encode(note).length <= MAX_EVENT_NOTE_BYTES)
    return note;
  const ellipsis = "…"; // 3 bytes
  const { read } = encoder.encodeInto(note, new Uint8Array(MAX_EVENT_NOTE_BYTES - 3));
  return note.slice(0, read) + ellipsis;
}

/**
 * metav1.MicroTime: RFC 3339 with exactly six fractional digits, UTC (`…T23:00:00.123456Z`); default now.
 *
 * @internal for leader election and sharding (`kubeloop/manager`).
 */
export function microTime(epochMs: number = performance.timeOrigin + performance.now()): string {
  const micros = Math.floor(epochMs * 1000);
  const iso = new Date(Math.floor(micros / 1000)).toISOString(); // …T23:00:00.123Z
  return `${iso.slice(0, -1)}${String(micros % 1000).padStart(3, "0")}Z`;
}

/**
 * `<object name>.<hex time+random>`, like client-go's `<name>.<hex UnixNano>`: unique, and sorted by
 * time. The object's name is made a valid DNS subdomain (some, like RBAC's `system:…`, are not).
 */
function eventName(objectName: string, now: number): string {
  const suffix = (BigInt(Math.floor(now)) * 1_000_000n + BigInt(randomInt(1_000_000))).toString(16);
  const base = objectName
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, "-")
    .split(".")
    .map((label) => label.replace(/^-+|-+$/g, ""))
    .filter(Boolean)
    .join(".")
    .slice(0, 253 - suffix.length - 1)
    .replace(/[^a-z0-9]+$/, "");
  return `${base || "event"}.${suffix}`;
}

function positive(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value))
    throw new RangeError(`${name} must be a number > 0, got ${value}`);
  return value;
}
