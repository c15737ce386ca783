import type { Logger } from "pino";
import type { InformerRegistry } from "../cache/index.js";
import type { Client, KubeObject, ObjectKey, ObjectRef, ResourceType } from "../client/index.js";
import type { Clock, QueueMetrics, WorkQueue } from "../queue/index.js";
import type { AdaptiveConcurrency, ApiPressure } from "./adaptive-workers.js";
import type { EventSink, ReconcileContext } from "./context.js";
import type { FairnessOptions } from "./fairness.js";
import type { ObjectRateCap } from "./object-cap.js";
import type { ObjectTaskSpec } from "./object-tasks.js";
import type { Change, Predicate } from "./predicates.js";
import type { PolicyRule } from "./rbac.js";
import type { ReconcileResult } from "./result.js";

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

/** Maps a watched object to the primary objects to reconcile (none, one or several references). */
export type MapFunc<U extends KubeObject> = (object: U) => ObjectRef[] | ObjectRef | undefined;

/** Something outside Kubernetes that asks for reconciles: an async iterable of object references. */
export type Source = (signal: AbortSignal) => AsyncIterable<ObjectRef>;

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
  // --- fairness, per-object cap (issue 38) ---
  /** Fair turns among groups of keys (`.fairness`); undefined: by namespace; false: FIFO. */
  fairness?: FairnessOptions | false | undefined;
  /** At most `max` reconciles of one object per `window` (`.maxReconcilesPerObject`); none by default. */
  objectRateCap?: ObjectRateCap | undefined;
  /** Runs only while its kinds are served, started and stopped as their CRDs come and go (`.followsCrds`). */
  followCrds?: boolean | undefined;
  /** Per-object timers and daemons (`.timer`, `.daemon`); none by default. */
  tasks?: ObjectTaskSpec<T>[] | undefined;
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
 * Sharding as a controller sees it: which primary objects are this replica's, and the handover of
 * those it must let go. The manager's sharding (`manager/sharding/`) implements it and owns the
 * handover; a controller without one reconciles everything.
 */
export interface ShardGate {
  /** Selects this replica's objects server-side: added to the primary's and owned types' informers. */
  readonly labelSelector: string;
  /** The gate of one controller's primary objects. */
  bind(controller: ShardedController): ControllerShard;
}

/** What a shard gate may see and do of the controller it guards. */
export interface ShardedController {
  readonly name: string;
  readonly primary: ResourceType;
  readonly client: Client;
  readonly logger: Logger;
  /** Aborted when the controller stops. */
  readonly signal: AbortSignal;
  /** The cached primary object of `key`. */
  cached(key: ObjectKey): KubeObject | undefined;
  /** Resolves once no reconcile of `key` is under way. */
  idle(key: ObjectKey): Promise<void>;
  /** Queues `key` again. */
  requeue(key: ObjectKey): void;
  /** Drops `key`'s retries and delays. */
  forget(key: ObjectKey): void;
}

/** One controller's side of the shard gate. */
export interface ControllerShard {
  /** Whether a change of a primary object may wake its key (not while it is handed over, nor another's). */
  admit(change: Change): boolean;
  /** Whether `key` may be reconciled now: asked before every reconcile (a requeue may outlive ownership). */
  mayReconcile(key: ObjectKey, cached: KubeObject | undefined): boolean;
  /** A primary object's delete event: calls `deleted` when it is gone, not when it moved to another shard. */
  deleted(object: KubeObject, tombstone: boolean, deleted: () => void): void;
}

/** How one reconcile ended; `skipped` when no reconcile ran (another shard's, gone, or waiting for the cache). */
export type ReconcileOutcomeResult = "success" | "error" | "requeue_after" | "terminal" | "skipped";

/**
 * Where a controller reports its measurements (the manager turns them into Prometheus series: see
 * `Metrics.controller` of `kubeloop/manager`).
 */
export interface ControllerMetricsSink {
  queue: QueueMetrics;
  reconciled(result: Exclude<ReconcileOutcomeResult, "skipped">, seconds: number): void;
  /** The reconcile failed with a programming error (a `TypeError`, `ReferenceError`, …: Go's panic); also reported as `error`. */
  panicked(): void;
  /** The reconcile failed after its `reconcileTimeout` aborted `ctx.signal`; also reported as `error`. */
  timedOut(): void;
  activeWorkers(delta: number): void;
  maxConcurrent(value: number): void;
  /** A reconcile was deferred by the per-object cap (`kubeloop_reconcile_deferred_total`). */
  deferred?(): void;
  registerQueue?(queue: WorkQueue<ObjectKey>): void;
}
