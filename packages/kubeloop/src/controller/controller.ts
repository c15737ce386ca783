import { randomUUID } from "node:crypto";
import { type Link, SpanStatusCode, TraceFlags, trace } from "@opentelemetry/api";
import type { Logger } from "pino";
import type { Informer, InformerRegistry, InformerScope, InformerView } from "../cache/index.js";
import type { Client } from "../client/index.js";
import { type KubeObject, objectKey, type ResourceType } from "../client/index.js";
import type { Clock, QueueMetrics } from "../queue/index.js";
import { LOW_PRIORITY, systemClock, WorkQueue } from "../queue/index.js";
import { type Condition, redactError, redactSecrets, setCondition } from "../resources/index.js";
import { groupOf } from "../resources/internal.js";
import { type AdaptiveConcurrency, type ApiPressure, adaptiveDefaults, decide } from "./adaptive-workers.js";
import {
  type CacheReader,
  createContext,
  type EventSink,
  patchPrimaryStatus,
  type ReconcileContext,
} from "./context.js";
import { type CacheLookup, Expectations, typeKeyOf } from "./expectations.js";
import type { Change, Predicate } from "./predicates.js";
import type { PolicyRule } from "./rbac.js";
import { type ReconcileResult, RetryableError, TerminalError } from "./result.js";

/**
 * A running controller: informers feed keys into a workqueue; workers take keys, read the latest
 * object from the cache and call the reconciler; its result decides what happens to the key.
 *
 * Guarantees (tested in controller.test.ts):
 * - a key is never reconciled by two workers at once, and changes during a reconcile cause exactly
 *   one more (the queue's dirty/processing rules);
 * - the reconciler always sees the cache's latest object, and never one older than its own last
 *   write (expectations.ts);
 * - a thrown error is caught, logged and retried with per-key backoff; it never kills the process
 *   or another reconcile;
 * - keys from the initial list go behind fresh changes (low priority), so a restart does not starve them.
 */

/** Where a key comes from: `{ namespace, name }` of the primary object. */
export interface Request {
  namespace?: string | undefined;
  name: string;
}

/** A reconciler with no return statement (`async () => {}`) is done, like one returning `done()`. */
// biome-ignore lint/suspicious/noConfusingVoidType: `void` is what a function without a return statement has.
type ReconcileReturn = ReconcileResult | undefined | void;

/**
 * Brings one object's world in line with it; returns (or resolves to) a {@link ReconcileResult}, or
 * nothing for `done()`. A throw is retried with backoff; a `terminal(error)` is not.
 */
export type Reconciler<T extends KubeObject> = (
  object: T,
  context: ReconcileContext<T>,
) => Promise<ReconcileReturn> | ReconcileReturn;

/** Maps a watched object to the primary objects to reconcile (none, one or several requests). */
export type MapFunc<U extends KubeObject> = (object: U) => Request[] | Request | undefined;

/** Something outside Kubernetes that asks for reconciles: an async iterable of requests. */
export type Source = (signal: AbortSignal) => AsyncIterable<Request>;

/** What a controller was built from: its name, primary type, owned and watched types, and reconciler. */
export interface ControllerSpec<T extends KubeObject> {
  name: string;
  primary: ResourceType<T>;
  owns: { type: ResourceType; metadataOnly: boolean; labelSelector?: string }[];
  watches: {
    type: ResourceType;
    map: MapFunc<KubeObject>;
    predicates: Predicate[];
    labelSelector?: string;
  }[];
  sources: Source[];
  predicates: Predicate<T>[];
  concurrency: number;
  /** Adaptive workers between bounds (`.adaptiveConcurrency`); `concurrency` is then the start. */
  adaptive?: AdaptiveConcurrency | undefined;
  /**
   * The namespaces this controller watches and reconciles in (`.inNamespace`, `.inNamespaces`);
   * `undefined` for the manager's (by default all namespaces).
   */
  namespaces: readonly string[] | undefined;
  /** RBAC rules beyond the declared types' (see `permits`). */
  permissions: PolicyRule[];
  /** The queue's clock (delays, backoff) and `ctx.now()`'s; see `ControllerBuilder.clock`. */
  clock?: Clock | undefined;
  /** How long one reconcile may run before `ctx.signal` aborts (`.reconcileTimeout`); none by default. */
  reconcileTimeoutMs?: number | undefined;
  reconcile: Reconciler<T>;
}

/** What the manager hands a controller when it starts it. */
export interface ControllerEnvironment {
  client: Client;
  registry: InformerRegistry;
  logger: Logger;
  /**
   * The manager's namespaces, for controllers that name none: one informer per namespace (Roles
   * suffice). `undefined` or empty: all namespaces.
   */
  namespaces?: readonly string[] | undefined;
  events?: EventSink;
  /** Metric hooks (the manager's Prometheus metrics). */
  metrics?: ControllerMetricsSink;
  /** This replica's share of the objects, when the manager is sharded (`manager/sharding/`). */
  shard?: ShardGate;
  /** The API server's 429s and latency, for adaptive workers (the manager's client feeds it). */
  apiPressure?: ApiPressure;
}

/**
 * Sharding as a controller sees it: which primary objects are this replica's. The manager's
 * sharding (`manager/sharding/`) implements it; a controller without one reconciles everything.
 */
export interface ShardGate {
  /** Selects this replica's objects server-side: added to the primary's and owned types' informers. */
  readonly labelSelector: string;
  /** `own`: reconcile it; `drain`: the sharder asks this replica to let it go; `foreign`: another's (it moved). */
  ownership(object: KubeObject): "own" | "drain" | "foreign";
  /**
   * Lets `object` go once its last reconcile here has ended: removes its assignment under an
   * optimistic lock (throws the client's Conflict if it changed meanwhile).
   */
  release(type: ResourceType, object: KubeObject): Promise<void>;
}

/**
 * Where a controller reports its measurements (the manager turns them into Prometheus series: see
 * `Metrics.controller` of `kubeloop/manager`).
 */
export interface ControllerMetricsSink {
  queue: QueueMetrics;
  reconciled(result: "success" | "error" | "requeue" | "requeue_after" | "terminal", seconds: number): void;
  /** The reconcile failed with a programming error (a `TypeError`, `ReferenceError`, …: Go's panic); also reported as `error`. */
  panicked(): void;
  /** The reconcile failed after its `reconcileTimeout` aborted `ctx.signal`; also reported as `error`. */
  timedOut(): void;
  activeWorkers(delta: number): void;
  maxConcurrent(value: number): void;
  registerQueue?(queue: WorkQueue<string>): void;
}

/**
 * Node runs reconciles concurrently on one thread; they mostly wait on the API server. One worker
 * (controller-runtime's default) leaves that waiting serial and slow; unbounded (kube-rs's default)
 * lets a burst of thousands of keys flood the API server's fair-queuing seats and the heap. Eight
 * overlap enough API latency to keep up with a few hundred changes a second, and stay polite.
 */
export const DEFAULT_CONCURRENCY = 8;
/** How long a reconcile whose read-your-writes expectation is not met yet waits before a retry. */
const EXPECTATION_RETRY_MS = 50;

const tracer = trace.getTracer("kubeloop");

/**
 * KEP-5915's annotation: whoever changed the object may leave that change's W3C `traceparent`
 * here; the reconcile it causes links to it (a link, not a parent: one change can cause many
 * reconciles, and a reconcile answers many changes).
 */
export const TRACEPARENT_ANNOTATION = "tracing.k8s.io/traceparent";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span link to the change recorded in the object's traceparent annotation, if it has a valid one. */
function linksOf(object: KubeObject): Link[] {
  const match = TRACEPARENT.exec(object.metadata?.annotations?.[TRACEPARENT_ANNOTATION] ?? "");
  if (!match || /^0+$/.test(match[1] ?? "0") || /^0+$/.test(match[2] ?? "0")) return [];
  const flags = Number.parseInt(match[3] ?? "0", 16) & TraceFlags.SAMPLED;
  return [
    { context: { traceId: match[1] ?? "", spanId: match[2] ?? "", traceFlags: flags, isRemote: true } },
  ];
}

/**
 * A running controller: informers for its types, a work queue of object keys, and workers that
 * call the reconciler. Built by `controller(Type)…reconcile(fn)` and started by the manager.
 */
export class Controller<T extends KubeObject> {
  readonly name: string;
  readonly spec: ControllerSpec<T>;
  private queue: WorkQueue<string> | undefined;
  private readonly informers = new Map<string, InformerView<KubeObject>>();
  private readonly shared: { informers: Informer<KubeObject>[]; release(): Promise<void> }[] = [];
  private readonly lastKnown = new Map<string, T>();
  private readonly expectations = new Expectations();
  private primary: InformerView<T> | undefined;
  private namespaces: readonly string[] | undefined;
  private workers: Promise<void>[] = [];
  private abort = new AbortController();
  private env: ControllerEnvironment | undefined;
  private unsubscribe: (() => void)[] = [];
  private statusSubresource: Promise<boolean> | undefined;
  private readonly primaryGroup: string;
  /** Keys being reconciled now, and the end of that reconcile: a handover waits for it. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Sharded: keys this replica is letting go (`waiting` for their reconcile) or has let go (`released`). */
  private readonly handingOver = new Map<string, "waiting" | "released">();
  /** Workers wanted now (`concurrency`, or the adaptive limit), workers running, and reconciles under way. */
  private workerLimit = 0;
  private workerCount = 0;
  private activeCount = 0;
  /** Queue waits of the keys taken since the last adaptive tick. */
  private waited = { seconds: 0, count: 0 };
  private adaptiveTimer: NodeJS.Timeout | undefined;

  /** Wall-clock time for reconcilers (`ctx.now()`): the controller's clock when one is set. */
  private readonly now: () => Date;

  constructor(spec: ControllerSpec<T>) {
    this.spec = spec;
    const clock = spec.clock;
    this.now = clock ? () => new Date(clock.now()) : () => new Date();
    this.name = spec.name;
    this.primaryGroup = groupOf(spec.primary.apiVersion);
  }

  /** The informers this controller reads (primary, owned, watched), for the manager's health checks. */
  get allInformers(): Informer<KubeObject>[] {
    // Once each (`informers` holds each under two keys); a multi-namespace view is its informers.
    return this.shared.flatMap((s) => s.informers);
  }

  /** The namespaces watched (the controller's own, else the manager's); `undefined` for all. */
  get watchedNamespaces(): readonly string[] | undefined {
    return this.namespaces;
  }

  /** Subscribes to the informers (starting them through the shared registry). Workers start later. */
  prepare(env: ControllerEnvironment): void {
    this.env = env;
    const queueMetrics = env.metrics?.queue;
    this.queue = new WorkQueue<string>({
      metrics: {
        ...queueMetrics,
        queueDuration: (seconds) => {
          queueMetrics?.queueDuration?.(seconds);
          this.waited.seconds += seconds;
          this.waited.count++;
        },
      },
      ...(this.spec.clock ? { clock: this.spec.clock } : {}),
    });
    env.metrics?.registerQueue?.(this.queue);
    env.metrics?.maxConcurrent(this.spec.concurrency);
    const namespaces = this.spec.namespaces ?? env.namespaces;
    this.namespaces = namespaces?.length ? namespaces : undefined;
    const shard = env.shard?.labelSelector;
    this.primary = this.informerFor(
      this.spec.primary,
      shard ? { labelSelector: shard } : {},
    ) as unknown as InformerView<T>;
    this.subscribe(
      this.primary as unknown as InformerView<KubeObject>,
      this.spec.predicates as Predicate[],
      (object) => [requestOf(object)],
    );
    for (const owned of this.spec.owns) {
      // Sharded, children carry their owner's shard label (the sharder writes it), so each replica caches its own.
      const selector = [owned.labelSelector, shard].filter(Boolean).join(",");
      const informer = this.informerFor(owned.type, {
        metadataOnly: owned.metadataOnly,
        ...(selector ? { labelSelector: selector } : {}),
      });
      this.subscribe(informer, [], (object) => this.ownersOf(object));
    }
    for (const watched of this.spec.watches) {
      const informer = this.informerFor(watched.type, {
        ...(watched.labelSelector ? { labelSelector: watched.labelSelector } : {}),
      });
      this.subscribe(informer, watched.predicates, (object) => toArray(watched.map(object)));
    }
  }

  /** Starts the workers and the non-Kubernetes sources. Call once the informers have synced. */
  start(): void {
    const queue = this.requireQueue();
    for (const source of this.spec.sources) void this.pump(source, queue);
    this.resize(this.spec.adaptive ? adaptiveDefaults(this.spec.adaptive).min : this.spec.concurrency);
    if (this.spec.adaptive) this.adapt(adaptiveDefaults(this.spec.adaptive));
  }

  /** The number of workers wanted now: `concurrency`, or where the adaptive limit stands. */
  get concurrency(): number {
    return this.workerLimit;
  }

  /** Sets the number of workers: more start at once; extra ones stop after their current reconcile. */
  private resize(limit: number): void {
    const queue = this.requireQueue();
    this.workerLimit = limit;
    this.env?.metrics?.maxConcurrent(limit);
    while (this.workerCount < limit) {
      this.workerCount++;
      this.workers.push(this.work(queue));
    }
  }

  /** Adaptive workers: a tick that reads the load and resizes (see adaptive-workers.ts). */
  private adapt(options: Required<AdaptiveConcurrency>): void {
    let previousWaitMs = 0;
    let idleFor = 0;
    this.adaptiveTimer = setInterval(() => {
      const queue = this.requireQueue();
      const pressure = this.env?.apiPressure?.recent() ?? { throttled: 0, p90Ms: 0 };
      const waitMs = this.waited.count ? (this.waited.seconds / this.waited.count) * 1000 : 0;
      this.waited = { seconds: 0, count: 0 };
      const sample = {
        queued: queue.length,
        active: this.activeCount,
        waitMs,
        throttled: pressure.throttled,
        apiLatencyMs: pressure.p90Ms,
      };
      idleFor = sample.queued === 0 && sample.active <= this.workerLimit / 2 ? idleFor + 1 : 0;
      const decision = decide(this.workerLimit, sample, previousWaitMs, idleFor, options);
      previousWaitMs = waitMs;
      if (decision.limit === this.workerLimit) return;
      if (decision.reason === "shrink") idleFor = 0;
      this.requireEnv().logger.info(
        {
          controller: this.name,
          from: this.workerLimit,
          to: decision.limit,
          decision: decision.reason,
          ...sample,
        },
        `workers ${this.workerLimit} → ${decision.limit}: ${decision.because}`,
      );
      this.resize(decision.limit);
    }, options.tickMs);
    this.adaptiveTimer.unref();
  }

  /**
   * Reconciles the next ready key, if there is one, as a worker would, and returns it (undefined
   * when none is ready). For step-by-step tests that start no workers (kubeloop/testing's
   * `ReconcileHarness`): one reconcile at a time, in queue order, so interleavings are chosen.
   */
  async reconcileNext(): Promise<string | undefined> {
    const queue = this.requireQueue();
    if (queue.length === 0) return undefined;
    const key = await queue.get();
    if (key === undefined) return undefined;
    try {
      await this.process(key, queue);
    } finally {
      queue.done(key);
    }
    return key;
  }

  /**
   * Stops taking work and waits for reconciles in flight, up to `graceMs`; then aborts their
   * signal. Informers are released (the registry stops them when nobody else uses them).
   */
  async stop(graceMs: number): Promise<void> {
    clearInterval(this.adaptiveTimer);
    for (const off of this.unsubscribe) off();
    const queue = this.queue;
    if (queue) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([queue.shutDownWithDrain(), deadline]);
      clearTimeout(timer);
      queue.shutDown();
    }
    this.abort.abort();
    await Promise.allSettled(this.workers);
    await Promise.all(this.shared.map((s) => s.release()));
  }

  /**
   * The cache of one type, in the watched namespaces: one informer for all namespaces or for one;
   * one per namespace, read as one, for several. Cluster-scoped types (`namespaced: false`) are
   * watched cluster-wide whatever the namespaces (that takes a ClusterRole).
   */
  private informerFor(type: ResourceType, scope: Omit<InformerScope, "namespace">): InformerView<KubeObject> {
    const namespaces = type.namespaced === false ? undefined : this.namespaces;
    const key = JSON.stringify([
      type.apiVersion,
      type.kind,
      namespaces ?? [],
      scope.labelSelector ?? "",
      scope.metadataOnly ?? false,
    ]);
    const existing = this.informers.get(key);
    if (existing) return existing;
    const registry = this.requireEnv().registry;
    let view: InformerView<KubeObject>;
    if (namespaces && namespaces.length > 1) {
      const shared = registry.acquireNamespaces(type, namespaces, scope);
      this.shared.push({ informers: shared.view.informers, release: shared.release });
      view = shared.view;
    } else {
      const shared = registry.acquire(type, namespaces ? { ...scope, namespace: namespaces[0] } : scope);
      this.shared.push({ informers: [shared.informer], release: shared.release });
      view = shared.informer;
    }
    this.informers.set(key, view);
    this.informers.set(typeKeyOf(type.apiVersion, type.kind), view);
    return view;
  }

  private subscribe(
    informer: InformerView<KubeObject>,
    predicates: Predicate[],
    toRequests: (object: KubeObject) => Request[],
  ): void {
    const enqueue = (change: Change, initial: boolean) => {
      if (primaryType && this.requireEnv().shard && !this.admitShardChange(change)) return;
      if (!predicates.every((p) => p(change))) return;
      const keys = new Set(toRequests(change.object).map(keyOf));
      // An update can move an object between owners (or mapped keys): both must hear of it. (Not
      // pushed onto the mapped array: a map function may return one it keeps.)
      if (change.old && change.type === "updated") for (const r of toRequests(change.old)) keys.add(keyOf(r));
      for (const key of keys) this.requireQueue().add(key, initial ? LOW_PRIORITY : 0);
    };
    const primaryType = informer === (this.primary as unknown as InformerView<KubeObject>);
    // The informer's type, not the object's: listed built-ins lack apiVersion and kind, and
    // metadata-only objects are PartialObjectMetadata, while expectations name the written type.
    const typeKey = typeKeyOf(informer.type.apiVersion, informer.type.kind);
    this.unsubscribe.push(
      informer.on({
        added: (object, { initial }) => enqueue({ type: "added", object }, initial),
        updated: (old, object, { initial }) => {
          if (this.isEchoOfOwnWrite(typeKey, old, object, primaryType)) return;
          const wake = () => enqueue({ type: "updated", object, old }, initial);
          // Our apply of this object is still waiting for its response: this may be its echo.
          const version = object.metadata?.resourceVersion;
          if (this.expectations.holdIfWriting(typeKey, objectKey(object), version, wake)) return;
          wake();
        },
        deleted: (object, { tombstone }) => {
          const deleted = () => {
            if (primaryType) this.lastKnown.set(objectKey(object), object as T);
            this.expectations.observeDeleted(typeKey, objectKey(object));
            enqueue({ type: "deleted", object }, false);
          };
          const shard = primaryType ? this.env?.shard : undefined;
          if (!shard) return deleted();
          // Sharded, an object that left this replica's label selector moved away: not a deletion.
          const moved = () => {
            this.handingOver.delete(objectKey(object));
            this.queue?.forget(objectKey(object));
          };
          if (shard.ownership(object) === "foreign") return moved();
          // Gone from a relist, it shows its last state here, which still carries our label: it
          // may have moved while the watch was down. Only the server can tell (if it cannot answer,
          // the object is taken as moved: finalizers, not delete events, are how no deletion is missed).
          if (tombstone) {
            const { name = "", namespace } = object.metadata ?? {};
            void this.requireEnv()
              .client.get(this.spec.primary, name, namespace ? { namespace } : {})
              .then(
                (current) => (shard.ownership(current) === "own" ? deleted() : moved()),
                (error: Error) => (error.name === "NotFound" ? deleted() : moved()),
              );
            return;
          }
          deleted();
        },
      }),
    );
  }

  /**
   * The watch event of a write this controller made is not news: reacting to it would loop on
   * status writes and cut retry backoff short. It is ours if it has the resourceVersion we wrote,
   * or if it changes only the primary's status while we are writing that status.
   */
  private isEchoOfOwnWrite(typeKey: string, old: KubeObject, object: KubeObject, primary: boolean): boolean {
    const key = objectKey(object);
    if (this.expectations.isOwnWrite(typeKey, key, object.metadata?.resourceVersion)) return true;
    return primary && this.expectations.isWriting(key) && statusOnlyChange(old, object);
  }

  /**
   * Sharded: whether a change of a primary object may wake its key. A drain request starts the
   * handover instead (the object must not be reconciled here again); an object that is ours again
   * after a handover is reconciled as new.
   */
  private admitShardChange(change: Change): boolean {
    const gate = this.requireEnv().shard;
    if (!gate || change.type === "deleted") {
      if (change.type === "deleted") this.handingOver.delete(objectKey(change.object));
      return true;
    }
    const key = objectKey(change.object);
    const ownership = gate.ownership(change.object);
    if (ownership === "drain") {
      this.handOver(key);
      return false;
    }
    if (ownership === "foreign") return false;
    const state = this.handingOver.get(key);
    if (state === "waiting") return false; // the handover sees the drain was called off, and requeues
    if (state === "released") this.handingOver.delete(key);
    return true;
  }

  /**
   * Drain-then-assign: once the key's reconcile in flight (if any) has ended, and with no new one
   * allowed to start, the assignment is removed under an optimistic lock; only then can the
   * sharder give the object to its new shard. A Conflict means it changed: look again.
   */
  private handOver(key: string): void {
    if (this.handingOver.has(key)) return;
    this.handingOver.set(key, "waiting");
    void this.runHandOver(key);
  }

  private async runHandOver(key: string): Promise<void> {
    const env = this.requireEnv();
    const gate = env.shard;
    if (!gate) return;
    const [namespace, name] = splitKey(key);
    while (!this.abort.signal.aborted && this.handingOver.get(key) === "waiting") {
      while (this.inFlight.has(key)) await this.inFlight.get(key);
      const object = this.primary?.get(name, namespace);
      const ownership = object ? gate.ownership(object) : "foreign";
      if (ownership !== "drain") {
        // Deleted, moved, or the sharder called the drain off: back to normal.
        this.handingOver.delete(key);
        if (ownership === "own") this.queue?.add(key);
        return;
      }
      try {
        await gate.release(this.spec.primary, object as KubeObject);
        this.handingOver.set(key, "released");
        this.queue?.forget(key);
        env.logger.debug({ controller: this.name, namespace, name }, "handed over to another shard");
        return;
      } catch (error) {
        // A Conflict: the object changed; wait for the cache to show it, then decide again.
        const conflict = (error as Error).name === "Conflict";
        if (!conflict)
          env.logger.warn(
            { err: error, controller: this.name, namespace, name },
            "could not hand over; retrying",
          );
        await new Promise((resolve) => setTimeout(resolve, conflict ? 100 : 1_000));
      }
    }
  }

  /** Owned children map to their controller owner, if it is of the primary kind. */
  private ownersOf(object: KubeObject): Request[] {
    return (object.metadata?.ownerReferences ?? [])
      .filter(
        (ref) =>
          ref.controller &&
          ref.kind === this.spec.primary.kind &&
          groupOf(ref.apiVersion) === this.primaryGroup,
      )
      .map((ref) => ({ namespace: object.metadata?.namespace, name: ref.name }));
  }

  private async pump(source: Source, queue: WorkQueue<string>): Promise<void> {
    try {
      for await (const request of source(this.abort.signal)) queue.add(keyOf(request));
    } catch (error) {
      if (!this.abort.signal.aborted)
        this.requireEnv().logger.error({ controller: this.name, err: error }, "source failed");
    }
  }

  private async work(queue: WorkQueue<string>): Promise<void> {
    for (;;) {
      // Fewer workers wanted (adaptive): this one stops between reconciles.
      if (this.workerCount > this.workerLimit) {
        this.workerCount--;
        return;
      }
      const key = await queue.get();
      if (key === undefined) return;
      this.activeCount++;
      this.env?.metrics?.activeWorkers(1);
      const processing = this.process(key, queue);
      const ended = processing.then(
        () => {},
        () => {},
      );
      this.inFlight.set(key, ended);
      try {
        await processing;
      } finally {
        this.inFlight.delete(key);
        this.activeCount--;
        this.env?.metrics?.activeWorkers(-1);
        queue.done(key);
      }
    }
  }

  private async process(key: string, queue: WorkQueue<string>): Promise<void> {
    const env = this.requireEnv();
    const [namespace, name] = splitKey(key);
    const cached = this.primary?.get(name, namespace);
    const gate = env.shard;
    // Sharded: ownership is checked again before any reconcile (a requeue may outlive it).
    if (gate && (this.handingOver.has(key) || (cached && gate.ownership(cached) !== "own"))) {
      queue.forget(key);
      return;
    }
    const object = cached ?? this.lastKnown.get(key);
    if (!object) {
      // Never seen (deleted before we started): nothing to reconcile; its children go with it (GC).
      queue.forget(key);
      return;
    }
    if (!this.expectations.satisfied(key, this.lookup)) {
      queue.addAfter(key, EXPECTATION_RETRY_MS);
      return;
    }
    const reconcileId = randomUUID();
    const started = performance.now();
    const deadline = this.deadline();
    await tracer.startActiveSpan(`reconcile ${this.name}`, { links: linksOf(object) }, async (span) => {
      span.setAttributes({
        "k8s.controller": this.name,
        "k8s.namespace": namespace ?? "",
        "k8s.name": name,
        "k8s.kind": this.spec.primary.kind,
        "kubeloop.reconcile_id": reconcileId,
      });
      // With tracing on, every line of this reconcile names its trace: logs and traces join up.
      const traced = span.isRecording() ? span.spanContext() : undefined;
      const log = env.logger.child({
        controller: this.name,
        namespace,
        name,
        reconcileID: reconcileId,
        ...(traced ? { trace_id: traced.traceId, span_id: traced.spanId } : {}),
      });
      try {
        const context = createContext<T>({
          controller: this.name,
          primaryType: this.spec.primary,
          object,
          deleted: !cached,
          reconcileId,
          client: env.client,
          cache: this.cacheReader,
          log,
          signal: deadline?.signal ?? this.abort.signal,
          expectations: this.expectations,
          events: env.events,
          now: this.now,
        });
        const result = (await this.spec.reconcile(object, context)) ?? undefined;
        if (result instanceof TerminalError) throw result;
        if (!cached) this.lastKnown.delete(key);
        queue.forget(key);
        if (result?.kind === "after") {
          queue.addAfter(key, result.delayMs);
          this.observe("requeue_after", started);
        } else {
          this.observe("success", started);
        }
        log.debug({ result: result?.kind ?? "done" }, "reconciled");
      } catch (error) {
        // Secrets the operator registered never reach traces, logs, events or conditions.
        span.recordException(redactError(error) as Error);
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: redactSecrets((error as Error).message ?? ""),
        });
        if (error instanceof TerminalError) {
          queue.forget(key);
          this.observe("terminal", started);
          log.error(
            { err: redactError(error), reason: error.reason },
            "reconcile failed terminally; not retrying until the object changes",
          );
          await this.recordFailure(object, error.reason, error.message, log);
        } else {
          queue.addRateLimited(key);
          this.observe("error", started);
          const timedOut = deadline?.expired() === true;
          if (timedOut) env.metrics?.timedOut();
          else if (isProgrammingError(error)) env.metrics?.panicked();
          const retries = queue.retries(key);
          const reason =
            error instanceof RetryableError ? error.reason : timedOut ? "ReconcileTimeout" : "ReconcileError";
          log.error({ err: redactError(error), reason, retries }, "reconcile failed; retrying with backoff");
          await this.recordFailure(object, reason, (error as Error).message ?? String(error), log);
        }
      } finally {
        deadline?.clear();
        span.end();
      }
    });
  }

  /**
   * The signal of one reconcile with a timeout: the controller's, aborted also when the timeout
   * passes. Like controller-runtime's context deadline, the reconciler must heed it: the key stays
   * taken until the reconcile returns, so one key never runs twice at once.
   */
  private deadline(): { signal: AbortSignal; expired(): boolean; clear(): void } | undefined {
    const timeoutMs = this.spec.reconcileTimeoutMs;
    if (timeoutMs === undefined) return undefined;
    const clock = this.spec.clock ?? systemClock;
    const expiry = new AbortController();
    const timer = clock.setTimeout(() => {
      expiry.abort(new Error(`reconcile ran past its timeout of ${timeoutMs} ms (reconcileTimeout)`));
    }, timeoutMs);
    return {
      signal: AbortSignal.any([this.abort.signal, expiry.signal]),
      expired: () => expiry.signal.aborted,
      clear: () => clock.clearTimeout(timer),
    };
  }

  /**
   * A failure is shown where users look: a Warning event (repeats fold into one event's series) and
   * the Ready condition. Our own status write does not wake the key (see expectations.isOwnWrite),
   * so recording never cuts the backoff short.
   */
  private async recordFailure(object: T, reason: string, errorMessage: string, log: Logger): Promise<void> {
    const env = this.requireEnv();
    const note = redactSecrets(errorMessage);
    env.events?.event(object, { type: "Warning", reason, action: "Reconcile", note });
    if (!(await this.hasStatus())) return;
    const conditions = (object as { status?: { conditions?: Condition[] } }).status?.conditions ?? [];
    const message = note.slice(0, 32_768);
    const ready = conditions.find((c) => c.type === "Ready");
    // Already recorded: nothing to write.
    if (ready?.status === "False" && ready.reason === reason && ready.message === message) return;
    const next = setCondition(conditions, {
      type: "Ready",
      status: "False",
      reason,
      message,
      observedGeneration: object.metadata?.generation,
    });
    try {
      await patchPrimaryStatus(env.client, this.expectations, this.spec.primary, object, {
        conditions: next,
      });
    } catch (statusError) {
      log.warn({ err: statusError }, "could not record the failure in the Ready condition");
    }
  }

  /** Whether the primary type has a status subresource (custom resources may not; ConfigMaps do not). */
  private async hasStatus(): Promise<boolean> {
    this.statusSubresource ??= this.requireEnv()
      .client.resolve(this.spec.primary)
      .then((info) => info.subresources.includes("status"))
      .catch(() => false);
    return this.statusSubresource;
  }

  private observe(result: "success" | "error" | "requeue_after" | "terminal", started: number): void {
    this.env?.metrics?.reconciled(result, (performance.now() - started) / 1000);
  }

  private readonly lookup: CacheLookup = (typeKey, key) => {
    const informer = this.informers.get(typeKey);
    if (!informer) return "unwatched";
    const [namespace, name] = splitKey(key);
    return informer.get(name, namespace);
  };

  private readonly cacheReader: CacheReader = {
    get: <U extends KubeObject>(type: ResourceType<U>, name: string, namespace?: string) =>
      this.watchedInformer(type, namespace).get(name, namespace) as U | undefined,
    list: <U extends KubeObject>(
      type: ResourceType<U>,
      filter?: { namespace?: string; labels?: Record<string, string> },
    ) => this.watchedInformer(type, filter?.namespace).list(filter) as U[],
  };

  /**
   * The cache of a type the reconciler reads. A read in a namespace this controller does not watch
   * is an error, not an empty answer: nothing there is cached, and a silent "none" would be acted on.
   */
  private watchedInformer(type: ResourceType, namespace: string | undefined): InformerView<KubeObject> {
    const informer = this.informers.get(typeKeyOf(type.apiVersion, type.kind));
    if (!informer) {
      throw new Error(
        `${type.kind} is not cached by controller "${this.name}": add .owns(${type.kind}) or .watches(${type.kind}, …) ` +
          "so that its changes also trigger reconciles, or read it with ctx.client.",
      );
    }
    const watched = this.namespaces;
    if (namespace && watched && type.namespaced !== false && !watched.includes(namespace)) {
      throw new Error(
        `${type.kind} in namespace "${namespace}" is not cached by controller "${this.name}": it watches ` +
          `${watched.map((ns) => `"${ns}"`).join(", ")} only (its .inNamespace(s), or the Manager's namespaces / ` +
          "WATCH_NAMESPACE). Read it with ctx.client, or watch that namespace too.",
      );
    }
    return informer;
  }

  private requireQueue(): WorkQueue<string> {
    if (!this.queue) throw new Error(`controller "${this.name}" is not prepared`);
    return this.queue;
  }

  private requireEnv(): ControllerEnvironment {
    if (!this.env) throw new Error(`controller "${this.name}" is not prepared`);
    return this.env;
  }
}

/** Only `status` (and bookkeeping) differs: no spec, label, annotation, owner or finalizer change. */
function statusOnlyChange(old: KubeObject, object: KubeObject): boolean {
  const a = old.metadata ?? {};
  const b = object.metadata ?? {};
  return (
    a.generation === b.generation &&
    a.deletionTimestamp === b.deletionTimestamp &&
    JSON.stringify([a.labels, a.annotations, a.finalizers, a.ownerReferences]) ===
      JSON.stringify([b.labels, b.annotations, b.finalizers, b.ownerReferences])
  );
}

export function keyOf(request: Request): string {
  return request.namespace ? `${request.namespace}/${request.name}` : request.name;
}

function splitKey(key: string): [string | undefined, string] {
  const slash = key.indexOf("/");
  return slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
}

function requestOf(object: KubeObject): Request {
  return { namespace: object.metadata?.namespace, name: object.metadata?.name ?? "" };
}

function toArray(value: Request[] | Request | undefined): Request[] {
  if (!value) return [];
  return Array.isArray(value) ? value : [value];
}

/**
 * Errors the engine throws for a bug in the code (reading a property of undefined, calling what is
 * not a function, unbounded recursion, bad JSON handed to `JSON.parse`): what a panic is in Go, so
 * they count in `controller_runtime_reconcile_panics_total` as controller-runtime's recovered panics do.
 */
function isProgrammingError(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    error instanceof ReferenceError ||
    error instanceof RangeError ||
    error instanceof SyntaxError
  );
}
