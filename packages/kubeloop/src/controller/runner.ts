import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import {
  type Client,
  type KubeObject,
  type ObjectKey,
  type ResourceType,
  refOfKey,
} from "../client/index.js";
import type { Clock, WorkQueue } from "../queue/index.js";
import { systemClock } from "../queue/index.js";
import { redactError } from "../resources/index.js";
import { type CacheReader, createContext, type EventSink } from "./context.js";
import { FailureRecorder, isProgrammingError } from "./failures.js";
import { RetryableError, TerminalError } from "./result.js";
import type { ControllerMetricsSink, ControllerShard, ReconcileOutcomeResult, Reconciler } from "./spec.js";
import { endSpan, inReconcileSpan } from "./tracing.js";
import type { CacheLookup, WriteAwareness } from "./write-awareness.js";

/**
 * The reconcile runner: `process(key)` takes one key from the queue to an outcome. It reads the
 * latest object (or the last known one of a deleted object), skips keys that are not to run now,
 * calls the reconciler in a span, and hands the outcome to those who act on it: the queue (forget,
 * requeue after a delay, back off), the metrics, the logs, the span, and the failure recorder
 * (Warning event, Ready condition). The harness of `kubeloop/testing` reads the same outcome.
 */

/** How one key's turn ended. */
export interface ReconcileOutcome {
  /** `namespace/name` (or `name` for a cluster-scoped object). */
  key: ObjectKey;
  result: ReconcileOutcomeResult;
  /** `requeue_after`: the delay before the next reconcile. */
  afterMs?: number;
  /** How long the reconciler ran; 0 when skipped. */
  seconds: number;
  /** What the reconciler threw (`error`, `terminal`). */
  error?: unknown;
  /** The failure's reason, as the Ready condition and the Warning event show it. */
  reason?: string;
  /** The reconcile failed after its timeout aborted `ctx.signal`. */
  timedOut?: boolean;
}

/** How long a reconcile whose read-your-writes expectation is not met yet waits before a retry. */
const EXPECTATION_RETRY_MS = 50;

export interface RunnerDeps<T extends KubeObject> {
  controller: string;
  primary: ResourceType<T>;
  reconcile: Reconciler<T>;
  queue: WorkQueue<ObjectKey>;
  /** The cached primary object of a key. */
  cached(key: ObjectKey): T | undefined;
  cache: CacheReader;
  lookup: CacheLookup;
  writes: WriteAwareness;
  client: Client;
  logger: Logger;
  events: EventSink | undefined;
  metrics: ControllerMetricsSink | undefined;
  shard: ControllerShard | undefined;
  /** The controller's signal: aborted when it stops. */
  signal: AbortSignal;
  now: () => Date;
  clock: Clock | undefined;
  timeoutMs: number | undefined;
}

export class ReconcileRunner<T extends KubeObject> {
  /** The last state of deleted primary objects, until their reconcile has seen them go. */
  private readonly lastKnown = new Map<ObjectKey, T>();
  private readonly failures: FailureRecorder<T>;

  constructor(private readonly deps: RunnerDeps<T>) {
    this.failures = new FailureRecorder(deps.client, deps.primary, deps.writes, deps.events);
  }

  /** Keeps a deleted object's last state: its key's next reconcile gets it with `ctx.deleted`. */
  deleted(key: ObjectKey, object: T): void {
    this.lastKnown.set(key, object);
  }

  async process(key: ObjectKey): Promise<ReconcileOutcome> {
    const { queue, shard } = this.deps;
    const cached = this.deps.cached(key);
    // Sharded: ownership is checked again before any reconcile (a requeue may outlive it).
    if (shard && !shard.mayReconcile(key, cached)) return this.skip(key);
    const object = cached ?? this.lastKnown.get(key);
    // Never seen (deleted before we started): nothing to reconcile; its children go with it (GC).
    if (!object) return this.skip(key);
    // Read your writes: not before the cache shows this key's last writes (write-awareness.ts).
    if (!this.deps.writes.reads.caughtUp(key, this.deps.lookup)) {
      queue.addAfter(key, EXPECTATION_RETRY_MS);
      return { key, result: "skipped", seconds: 0 };
    }
    const { namespace, name } = refOfKey(key);
    const reconcileId = randomUUID();
    const subject = { controller: this.deps.controller, kind: this.deps.primary.kind, namespace, name };
    return inReconcileSpan({ ...subject, reconcileId, object }, async (span, traced) => {
      // With tracing on, every line of this reconcile names its trace: logs and traces join up.
      const log = this.deps.logger.child({
        controller: this.deps.controller,
        namespace,
        name,
        reconcileID: reconcileId,
        ...traced,
      });
      let outcome: ReconcileOutcome | undefined;
      try {
        outcome = await this.reconcile(key, object, !cached, reconcileId, log);
        if (outcome.result !== "error" && outcome.result !== "terminal" && !cached)
          this.lastKnown.delete(key);
        this.schedule(outcome);
        this.report(outcome, log);
        if (outcome.reason !== undefined) {
          const error = outcome.error as Error | undefined;
          await this.failures.record(object, outcome.reason, error?.message ?? String(error), log);
        }
        return outcome;
      } finally {
        endSpan(span, outcome?.reason !== undefined ? outcome.error : undefined);
      }
    });
  }

  private skip(key: ObjectKey): ReconcileOutcome {
    this.deps.queue.forget(key);
    return { key, result: "skipped", seconds: 0 };
  }

  /** Calls the reconciler; its result or throw becomes the outcome. */
  private async reconcile(
    key: ObjectKey,
    object: T,
    deleted: boolean,
    reconcileId: string,
    log: Logger,
  ): Promise<ReconcileOutcome> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const deadline = this.deadline();
    try {
      const context = createContext<T>({
        controller: this.deps.controller,
        primaryType: this.deps.primary,
        object,
        deleted,
        reconcileId,
        client: this.deps.client,
        cache: this.deps.cache,
        log,
        signal: deadline?.signal ?? this.deps.signal,
        writes: this.deps.writes,
        events: this.deps.events,
        now: this.deps.now,
      });
      const result = (await this.deps.reconcile(object, context)) ?? undefined;
      if (result instanceof TerminalError) throw result;
      if (result?.kind === "after")
        return { key, result: "requeue_after", seconds: seconds(), afterMs: result.delayMs };
      return { key, result: "success", seconds: seconds() };
    } catch (error) {
      if (error instanceof TerminalError)
        return { key, result: "terminal", seconds: seconds(), error, reason: error.reason };
      const timedOut = deadline?.expired() === true;
      const reason =
        error instanceof RetryableError ? error.reason : timedOut ? "ReconcileTimeout" : "ReconcileError";
      return { key, result: "error", seconds: seconds(), error, reason, timedOut };
    } finally {
      deadline?.clear();
    }
  }

  /** The queue acts on the outcome: a success or a terminal failure is forgotten, an error backs off. */
  private schedule(outcome: ReconcileOutcome): void {
    const { queue } = this.deps;
    if (outcome.result === "error") {
      queue.addRateLimited(outcome.key);
      return;
    }
    queue.forget(outcome.key);
    if (outcome.afterMs !== undefined) queue.addAfter(outcome.key, outcome.afterMs);
  }

  /** Metrics and log lines of the outcome. */
  private report(outcome: ReconcileOutcome, log: Logger): void {
    const { metrics } = this.deps;
    const { result, error } = outcome;
    if (result === "skipped") return;
    metrics?.reconciled(result, outcome.seconds);
    if (result === "terminal") {
      const reason = (error as TerminalError).reason;
      log.error(
        { err: redactError(error), reason },
        "reconcile failed terminally; not retrying until the object changes",
      );
    } else if (result === "error") {
      if (outcome.timedOut) metrics?.timedOut();
      else if (isProgrammingError(error)) metrics?.panicked();
      const retries = this.deps.queue.retries(outcome.key);
      log.error(
        { err: redactError(error), reason: outcome.reason, retries },
        "reconcile failed; retrying with backoff",
      );
    } else {
      log.debug({ result: result === "requeue_after" ? "after" : "done" }, "reconciled");
    }
  }

  /**
   * The signal of one reconcile with a timeout: the controller's, aborted also when the timeout
   * passes. Like controller-runtime's context deadline, the reconciler must heed it: the key stays
   * taken until the reconcile returns, so one key never runs twice at once.
   */
  private deadline(): { signal: AbortSignal; expired(): boolean; clear(): void } | undefined {
    const timeoutMs = this.deps.timeoutMs;
    if (timeoutMs === undefined) return undefined;
    const clock = this.deps.clock ?? systemClock;
    const expiry = new AbortController();
    const timer = clock.setTimeout(() => {
      expiry.abort(new Error(`reconcile ran past its timeout of ${timeoutMs} ms (reconcileTimeout)`));
    }, timeoutMs);
    return {
      signal: AbortSignal.any([this.deps.signal, expiry.signal]),
      expired: () => expiry.signal.aborted,
      clear: () => clock.clearTimeout(timer),
    };
  }
}
