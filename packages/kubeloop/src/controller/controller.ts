import type { Informer, InformerView } from "../cache/index.js";
import {
  type KubeObject,
  keyOfRef,
  kindKeyOf,
  type ObjectKey,
  type ObjectRef,
  objectKey,
  refOf,
  refOfKey,
} from "../client/index.js";
import { groupOf } from "../client/internal.js";
import { LOW_PRIORITY, WorkQueue } from "../queue/index.js";
import { ControllerCaches } from "./caches.js";
import { queueFairness, spareWorkers } from "./fairness.js";
import { ObjectRateLimiter } from "./object-cap.js";
import { ObjectTasks } from "./object-tasks.js";
import type { Change, Predicate } from "./predicates.js";
import { type ReconcileOutcome, ReconcileRunner } from "./runner.js";
import type {
  ControllerEnvironment,
  ControllerShard,
  ControllerSpec,
  ShardedController,
  Source,
} from "./spec.js";
import { WorkerPool } from "./workers.js";
import { WriteAwareness } from "./write-awareness.js";

export type { ReconcileOutcome } from "./runner.js";
export type {
  ControllerEnvironment,
  ControllerMetricsSink,
  ControllerShard,
  ControllerSpec,
  MapFunc,
  ReconcileOutcomeResult,
  Reconciler,
  ShardedController,
  ShardGate,
  Source,
} from "./spec.js";

/**
 * Node runs reconciles concurrently on one thread; they mostly wait on the API server. One worker
 * (controller-runtime's default) leaves that waiting serial and slow; unbounded (kube-rs's default)
 * lets a burst of thousands of keys flood the API server's fair-queuing seats and the heap. Eight
 * overlap enough API latency to keep up with a few hundred changes a second, and stay polite.
 */
export const DEFAULT_CONCURRENCY = 8;

/** What a prepared controller runs with. */
interface Prepared<T extends KubeObject> {
  env: ControllerEnvironment;
  queue: WorkQueue<ObjectKey>;
  caches: ControllerCaches;
  runner: ReconcileRunner<T>;
  pool: WorkerPool;
  shard: ControllerShard | undefined;
  /** Per-object timers and daemons, when the controller has any. */
  tasks: ObjectTasks<T> | undefined;
}

/**
 * A running controller: informers feed keys into a workqueue; workers take keys and hand each to
 * the reconcile runner (runner.ts), which reads the latest object from the cache, calls the
 * reconciler, and acts on its outcome. Built by `controller(Type)…reconcile(fn)`, started by the manager.
 *
 * Guarantees (tested in controller.test.ts):
 * - a key is never reconciled by two workers at once, and changes during a reconcile cause exactly
 *   one more (the queue's dirty/processing rules);
 * - the reconciler always sees the cache's latest object, and never one older than its own last
 *   write, with the exceptions write-awareness.ts states (an expectation expires after 10 s; a
 *   write of a kind this controller does not cache counts as met);
 * - the watch event of its own write (any path) does not wake it again; anyone else's change does;
 * - a thrown error is caught, logged and retried with per-key backoff; it never kills the process
 *   or another reconcile;
 * - keys from the initial list go behind fresh changes (low priority), so a restart does not starve them.
 */
export class Controller<T extends KubeObject> {
  readonly name: string;
  readonly spec: ControllerSpec<T>;
  private writes = new WriteAwareness();
  private abort = new AbortController();
  private readonly unsubscribe: (() => void)[] = [];
  /** From prepare() to the end of stop(): a controller runs in one manager at a time. */
  private running = false;
  private readonly primaryGroup: string;
  private prepared: Prepared<T> | undefined;

  constructor(spec: ControllerSpec<T>) {
    this.spec = spec;
    this.name = spec.name;
    this.primaryGroup = groupOf(spec.primary.apiVersion);
  }

  /**
   * Refuses a second manager while one runs this controller; after a stop (a test's first
   * manager), starts a run of its own, so nothing aborted or expected carries over.
   */
  private beginRun(): void {
    if (this.running)
      throw new Error(
        `controller "${this.name}" is already running in a manager; one controller runs in one manager at a time: build another with controller(...) for the second`,
      );
    if (this.abort.signal.aborted) {
      this.abort = new AbortController();
      this.writes = new WriteAwareness();
      this.unsubscribe.length = 0;
    }
  }

  /**
   * The informers this controller reads (primary, owned, watched), for the manager's health checks.
   * @internal
   */
  get allInformers(): Informer<KubeObject>[] {
    return this.prepared?.caches.informers ?? [];
  }

  /**
   * Why this controller's workers look stuck, or undefined: keys have waited `afterMs` with no
   * worker taking one (see `WorkQueue.stalledSeconds`). For the manager's liveness check.
   * @internal
   */
  stalled(afterMs: number): string | undefined {
    const queue = this.prepared?.queue;
    const stalled = queue?.stalledSeconds() ?? 0;
    if (!queue || stalled * 1000 < afterMs) return undefined;
    const { processing } = queue.counts();
    return `controller "${this.name}": ${queue.length} key(s) waiting, no worker took one for ${Math.round(stalled)} s (${processing} reconcile(s) running, the longest for ${Math.round(queue.longestRunningProcessorSeconds())} s)`;
  }

  /** The number of workers wanted now: `concurrency`, or where the adaptive limit stands. */
  get concurrency(): number {
    return this.prepared?.pool.size ?? 0;
  }

  /**
   * Subscribes to the informers (starting them through the shared registry). Workers start later.
   * The manager's wiring, as the next three are: a user gives the controller to a Manager.
   * @internal
   */
  prepare(env: ControllerEnvironment): void {
    this.beginRun();
    const { spec } = this;
    const queueMetrics = env.metrics?.queue;
    const queue = new WorkQueue<ObjectKey>({
      metrics: {
        ...queueMetrics,
        queueDuration: (seconds) => {
          queueMetrics?.queueDuration?.(seconds);
          pool.waitedFor(seconds);
        },
      },
      ...(spec.clock ? { clock: spec.clock } : {}),
      ...withFairness(spec),
    });
    env.metrics?.registerQueue?.(queue);
    env.metrics?.maxConcurrent(spec.concurrency);
    const namespaces = spec.namespaces ?? env.namespaces;
    const caches = new ControllerCaches(this.name, env.registry, namespaces?.length ? namespaces : undefined);
    const selector = env.shard?.labelSelector;
    const primary = caches.informerFor(spec.primary, selector ? { labelSelector: selector } : {});
    const cached = (key: ObjectKey) => primary.get(refOfKey(key)) as T | undefined;
    const shard = env.shard?.bind(this.sharded(env, queue, cached, () => pool));
    const clock = spec.clock;
    const runner = new ReconcileRunner<T>({
      controller: this.name,
      primary: spec.primary,
      reconcile: spec.reconcile,
      queue,
      cached,
      cache: caches.reader,
      lookup: caches.lookup,
      writes: this.writes,
      client: env.client,
      logger: env.logger,
      events: env.events,
      metrics: env.metrics,
      shard,
      signal: this.abort.signal,
      now: clock ? () => new Date(clock.now()) : () => new Date(),
      clock,
      timeoutMs: spec.reconcileTimeoutMs,
    });
    const pool = new WorkerPool({
      controller: this.name,
      queue,
      process: capped(spec, queue, env, (key) => runner.process(key)),
      logger: env.logger,
      metrics: env.metrics,
      apiPressure: env.apiPressure,
    });
    this.prepared = {
      env,
      queue,
      caches,
      runner,
      pool,
      shard,
      tasks: spec.tasks?.length
        ? new ObjectTasks<T>({
            controller: this.name,
            specs: spec.tasks,
            primary: primary as InformerView<T>,
            shard,
            client: env.client,
            logger: env.logger,
          })
        : undefined,
    };
    this.subscribe(primary, spec.predicates as Predicate[], (object) => [refOf(object)], true);
    this.subscribeSecondaries(caches, selector);
    this.running = true;
  }

  /** The owned and watched kinds' informers, each event mapped to the primaries it concerns. */
  private subscribeSecondaries(caches: ControllerCaches, shardSelector: string | undefined): void {
    const { spec } = this;
    for (const owned of spec.owns) {
      // Sharded, children carry their owner's shard label (the sharder writes it), so each replica caches its own.
      const labels = [owned.labelSelector, shardSelector].filter(Boolean).join(",");
      const informer = caches.informerFor(owned.type, {
        metadataOnly: owned.metadataOnly,
        ...(labels ? { labelSelector: labels } : {}),
      });
      this.subscribe(informer, [], (object) => this.ownersOf(object), false);
    }
    for (const watched of spec.watches) {
      const informer = caches.informerFor(watched.type, {
        ...(watched.labelSelector ? { labelSelector: watched.labelSelector } : {}),
      });
      this.subscribe(informer, watched.predicates, (object) => toArray(watched.map(object)), false);
    }
  }

  /**
   * Starts the workers and the non-Kubernetes sources. Call once the informers have synced.
   * @internal
   */
  start(): void {
    const { queue, pool } = this.require();
    for (const source of this.spec.sources) void this.pump(source, queue);
    const spare = this.spec.adaptive ? 0 : spareWorkers(this.spec.fairness);
    pool.start(this.spec.concurrency + spare, this.spec.adaptive);
    this.prepared?.tasks?.start();
  }

  /**
   * Reconciles the next ready key, if there is one, as a worker would, and returns its outcome
   * (undefined when none is ready). For step-by-step tests that start no workers (kubeloop/testing's
   * `ReconcileHarness`): one reconcile at a time, in queue order, so interleavings are chosen.
   * @internal
   */
  async reconcileNext(): Promise<ReconcileOutcome | undefined> {
    const { queue, runner } = this.require();
    if (queue.length === 0) return undefined;
    const key = await queue.get();
    if (key === undefined) return undefined;
    try {
      return await runner.process(key);
    } finally {
      queue.done(key);
    }
  }

  /**
   * Stops taking work and waits for reconciles in flight, up to `graceMs`; then aborts their
   * signal. Informers are released (the registry stops them when nobody else uses them).
   * @internal
   */
  async stop(graceMs: number): Promise<void> {
    const tasksEnded = this.prepared?.tasks?.stop(
      "the controller is stopping (shutdown, or leadership lost)",
      graceMs,
    );
    const workersEnded = this.prepared?.pool.stop();
    for (const off of this.unsubscribe) off();
    const queue = this.prepared?.queue;
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
    try {
      await workersEnded;
      await tasksEnded;
      await this.prepared?.caches.release();
    } finally {
      this.running = false;
    }
  }

  /** What the shard gate sees of this controller. */
  private sharded(
    env: ControllerEnvironment,
    queue: WorkQueue<ObjectKey>,
    cached: (key: ObjectKey) => T | undefined,
    pool: () => WorkerPool,
  ): ShardedController {
    return {
      name: this.name,
      primary: this.spec.primary,
      client: env.client,
      logger: env.logger,
      signal: this.abort.signal,
      cached,
      idle: (key) => pool().idle(key),
      requeue: (key) => queue.add(key),
      forget: (key) => queue.forget(key),
    };
  }

  /** Owned children map to their controller owner, if it is of the primary kind. */
  private ownersOf(object: KubeObject): ObjectRef[] {
    return (object.metadata?.ownerReferences ?? [])
      .filter(
        (ref) =>
          ref.controller &&
          ref.kind === this.spec.primary.kind &&
          groupOf(ref.apiVersion) === this.primaryGroup,
      )
      .map((ref) => ({ namespace: object.metadata?.namespace, name: ref.name }));
  }

  private async pump(source: Source, queue: WorkQueue<ObjectKey>): Promise<void> {
    const { signal } = this.abort;
    try {
      for await (const request of source(signal)) queue.add(keyOfRef(request));
    } catch (error) {
      if (!signal.aborted)
        this.require().env.logger.error({ controller: this.name, err: error }, "source failed");
    }
  }

  private subscribe(
    informer: InformerView<KubeObject>,
    predicates: Predicate[],
    toRequests: (object: KubeObject) => ObjectRef[],
    primary: boolean,
  ): void {
    const { queue, shard, runner } = this.require();
    const enqueue = (change: Change, initial: boolean) => {
      if (primary && shard && !shard.admit(change)) return;
      if (!predicates.every((p) => p(change))) return;
      const keys = new Set(toRequests(change.object).map(keyOfRef));
      // An update can move an object between owners (or mapped keys): both must hear of it. (Not
      // pushed onto the mapped array: a map function may return one it keeps.)
      if (change.old && change.type === "updated")
        for (const r of toRequests(change.old)) keys.add(keyOfRef(r));
      for (const key of keys) queue.add(key, initial ? LOW_PRIORITY : 0);
    };
    // The informer's type, not the object's: listed built-ins lack apiVersion and kind, and
    // metadata-only objects are PartialObjectMetadata, while writes name the written type.
    const kind = kindKeyOf(informer.type);
    this.unsubscribe.push(
      informer.on({
        added: (object, { initial }) => {
          this.writes.added(kind, object);
          enqueue({ type: "added", object }, initial);
        },
        updated: (old, object, { initial }) => {
          const wake = () => enqueue({ type: "updated", object, old }, initial);
          // A relist's update spans every change made while the watch was down, so reaching the
          // version we wrote does not make it only ours: a reconcile from the stale cache may have
          // written on top of someone else's change (a spec edit during an API server restart),
          // which then comes in this same update. Taking it for our echo lost that change for
          // good, so a relist's update always wakes the key (one reconcile more after a rare
          // relist); only a watch event, which is one change, can be told to be our echo.
          if (initial) {
            wake();
            return;
          }
          // Our echo (the version a write of ours returned) is dropped; anything else wakes.
          this.writes.updated(kind, object, wake);
        },
        deleted: (object, { tombstone }) => {
          const deleted = () => {
            if (primary) runner.deleted(objectKey(object), object as T);
            this.writes.deleted(kind, object);
            enqueue({ type: "deleted", object }, false);
          };
          // Sharded, the gate tells a deletion from an object that moved to another shard.
          if (primary && shard) shard.deleted(object, tombstone, deleted);
          else deleted();
        },
      }),
    );
  }

  private require(): Prepared<T> {
    if (!this.prepared) throw new Error(`controller "${this.name}" is not prepared`);
    return this.prepared;
  }
}

/** The queue's fairness option, when the controller has fairness (by default it does). */
function withFairness<T extends KubeObject>(spec: ControllerSpec<T>) {
  const fairness = queueFairness(spec.fairness, spec.adaptive ? undefined : spec.concurrency);
  return fairness ? { fairness } : {};
}

/**
 * `process` behind the per-object cap, when the controller has one: a reconcile over the cap goes
 * back to the queue for when the window allows (merged with any later change), and is counted.
 */
function capped<T extends KubeObject>(
  spec: ControllerSpec<T>,
  queue: WorkQueue<ObjectKey>,
  env: ControllerEnvironment,
  process: (key: ObjectKey) => Promise<unknown>,
): (key: ObjectKey) => Promise<unknown> {
  if (!spec.objectRateCap) return process;
  const limiter = new ObjectRateLimiter(spec.objectRateCap, spec.clock ?? { now: () => performance.now() });
  return (key) => {
    const waitMs = limiter.admit(key);
    if (waitMs === 0) return process(key);
    queue.addAfter(key, waitMs);
    env.metrics?.deferred?.();
    return Promise.resolve(undefined);
  };
}

/** What a map function returns: none, one or several objects to reconcile. */
function toArray(value: ObjectRef[] | ObjectRef | undefined): ObjectRef[] {
  if (!value) return [];
  return Array.isArray(value) ? value : [value];
}
