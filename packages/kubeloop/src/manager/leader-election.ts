import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Lease } from "kubernetes-types/coordination/v1.js";
import type { Client, RequestOptions } from "../client/index.js";
import { AlreadyExists, Conflict, keyOfRef, NotFound, refTo } from "../client/index.js";
import { Lease as Leases } from "../k8s/index.js";
import { microTime } from "../resources/internal.js";
import { sleep } from "../util/index.js";
import { type LeaseRecord, recordKey, recordOf, specOf } from "./lease-record.js";

/**
 * Leader election on a `coordination.k8s.io/v1` Lease: client-go's algorithm
 * (`tools/leaderelection/leaderelection.go`) and defaults, so one replica of an operator reconciles
 * while the others wait with warm caches.
 *
 * The rules:
 *
 * 1. **Acquire.** Every {@link DEFAULT_RETRY_PERIOD_MS} (jittered up to ×2.2): create the Lease if
 *    it does not exist; take it if its holder is empty, or if its record has not changed for the
 *    holder's `leaseDurationSeconds` *as observed here*. Expiry is judged by the local monotonic
 *    clock from the moment this process last saw the record change, never by the holder's
 *    `renewTime`: replicas' wall clocks may disagree, but each one's own stopwatch is right.
 * 2. **Write with optimistic concurrency.** Every update carries the resourceVersion last read or
 *    written: when two candidates race, one wins and the other gets a 409 Conflict (or
 *    AlreadyExists, racing to create) and stays a candidate. Taking the Lease from another holder
 *    increments `leaseTransitions` and sets a new `acquireTime`; renewals keep both.
 * 3. **Renew** every retry period: an update of `renewTime` from the object last written (on a
 *    failure, read the Lease and try the update again, client-go's slow path). If no renewal
 *    succeeds within {@link DEFAULT_RENEW_DEADLINE_MS} of the last successful one being *sent*,
 *    or the Lease turns out to name another holder, leadership is **lost at once** (a timer, not
 *    the end of a hung request): `isLeader` turns false, the leading signal aborts,
 *    `onStoppedLeading` runs, and `run()` returns. There is no second campaign: the manager stops
 *    reconciling and exits, and a fresh process becomes a candidate.
 * 4. **Stop.** `stop()` (or aborting the signal given to `run`) ends leadership the same way; with
 *    `releaseOnCancel` the Lease is then handed back (empty holder, `leaseDurationSeconds: 1`) so
 *    a standby takes over at its next retry instead of waiting for the lease to expire.
 *
 * Why two leaders never overlap: a candidate takes over only after it has seen the same record for
 * `leaseDuration`, so no sooner than `leaseDuration` after the holder's last successful write
 * reached the server, and that write was sent before it arrived. The holder gives up
 * `renewDeadline` after sending it. `leaseDuration > renewDeadline` (checked) leaves
 * `leaseDuration − renewDeadline` of margin (5 s by default) for clock-rate differences and late
 * timers, whatever the request latency. (client-go counts the deadline from the start of a renew
 * round, a retry period after the last success *returned*: up to 2 s + latency later than here.)
 */

/**
 * How long a candidate waits, after it last saw the Lease change, before taking it over. client-go's
 * and controller-runtime's default: after a holder dies, nothing reconciles for up to this long,
 * so shorter fails over faster, but every replica then has to renew more often and a long GC pause
 * or API-server hiccup costs leadership (15 s rides out both; `kube-controller-manager` uses it too).
 */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
/**
 * How long the leader keeps trying to renew before it gives up leadership. Shorter than the lease
 * duration by a safety margin (5 s): the old leader has stopped before any candidate may take over.
 */
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
/**
 * How often the leader renews and candidates try to acquire. Five tries fit in one renew deadline,
 * so a couple of failed requests do not cost leadership; each is one small write per replica.
 */
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/**
 * Candidates wait the retry period plus up to this factor of it more (client-go's `JitterFactor`),
 * so replicas started together do not hit the Lease in lockstep. The renew deadline must exceed
 * `JITTER_FACTOR × retryPeriod` (client-go's check), so at least one renewal fits in it.
 */
export const JITTER_FACTOR = 1.2;
/**
 * The floor of each Lease request's timeout; the timeout is `max(1 s, renewDeadline / 2)`
 * (controller-runtime's leader-election client), so one hung request cannot eat the whole deadline.
 */
export const MIN_REQUEST_TIMEOUT_MS = 1_000;

/** What the elector reports for `leader_election_*` metrics (see `Metrics.leaderElection`). */
export interface LeaderElectionMetrics {
  /** `leader_election_master_status{name}`: 1 while leading, 0 otherwise. */
  set(isLeader: boolean): void;
  /** `leader_election_slowpath_total{name}`: a renewal had to read the Lease first (its optimistic update failed). */
  slowpath?(): void;
}

/** Why leadership ended: a `stop()` (or the run's signal), or a loss. */
export type StoppedLeading = { lost: false } | { lost: true; error: LeadershipLost };

/** The Lease to campaign for, the timings (client-go's), and the callbacks on gaining and losing it. */
export interface LeaderElectorOptions {
  /** The client that reads and writes the Lease; it needs get, create and update on leases. */
  client: Client;
  /** The Lease's name, e.g. `nginx-operator` (controller-runtime's `LeaderElectionID`). */
  id: string;
  /** The Lease's namespace; explicit, like every namespaced call of the client. */
  namespace: string;
  /** Who this replica is, written into `holderIdentity`. Default `<hostname>_<random uuid>`. */
  identity?: string;
  /** Default {@link DEFAULT_LEASE_DURATION_MS}. Whole seconds are written to the Lease (at least 1). */
  leaseDurationMs?: number;
  /** Default {@link DEFAULT_RENEW_DEADLINE_MS}. Must be less than the lease duration. */
  renewDeadlineMs?: number;
  /** Default {@link DEFAULT_RETRY_PERIOD_MS}. The renew deadline must exceed 1.2 × this. */
  retryPeriodMs?: number;
  /**
   * On `stop()`, if leading, hand the Lease back (empty holder, `leaseDurationSeconds: 1`) so a
   * standby takes over within a retry period. Default false, like client-go: only safe when
   * everything the leader runs has stopped before `stop()` is called (the manager's order).
   */
  releaseOnCancel?: boolean;
  /**
   * Leadership began. `signal` aborts the moment it ends (lost or stopped): stop reconciling then.
   * Not awaited; a rejection is reported through `onError`.
   */
  onStartedLeading?: (signal: AbortSignal) => void | Promise<void>;
  /**
   * Leadership ended (only called if it began; client-go calls it on every exit of `Run`). On a
   * loss, the process should stop reconciling at once and exit non-zero.
   */
  onStoppedLeading?: (event: StoppedLeading) => void;
  /** The Lease names a new holder (this replica included); empty holders are not reported. */
  onNewLeader?: (identity: string) => void;
  /** Failed Lease requests (for logs). Conflicts of a candidate losing a race are expected and not reported. */
  onError?: (error: Error) => void;
  /** Hooks for the `leader_election_*` metrics. */
  metrics?: LeaderElectionMetrics;
  /**
   * Labels written on the Lease (kept on every write): shard Leases carry their ring's label so
   * the sharder finds a ring's members with one label selector (see `sharding/`).
   */
  labels?: Record<string, string>;
}

/** Leadership was lost without `stop()`: renewals failed for the renew deadline, or another replica holds the Lease. */
export class LeadershipLost extends Error {
  override name = "LeadershipLost";
}

/**
 * Elects one leader among the replicas that share a Lease. See the rules at the top of
 * `leader-election.ts`.
 *
 * @example
 * ```ts
 * const elector = new LeaderElector({
 *   client, id: "nginx-operator", namespace: "operators", releaseOnCancel: true,
 *   onStartedLeading: (signal) => startControllers(signal),
 *   onStoppedLeading: (event) => { if (event.lost) process.exitCode = 1; },
 * });
 * const running = elector.run();
 * // on SIGTERM, after the controllers have stopped:
 * await elector.stop(); // releases the Lease: a standby takes over at once
 * ```
 */
export class LeaderElector {
  readonly identity: string;
  /** The Lease's name. */
  readonly id: string;
  readonly namespace: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  private readonly options: LeaderElectorOptions;
  private readonly requestTimeoutMs: number;

  /** The Lease as last read or written: its resourceVersion makes the next update a compare-and-swap. */
  private lease: Lease | undefined;
  /** The record last seen and when (monotonic ms): the base of every expiry decision. */
  private observed: { record: LeaseRecord; key: string; at: number } | undefined;
  private reportedLeader = "";
  private leading = false;
  /** Aborts when leadership ends; handed to `onStartedLeading`. */
  private leadership: AbortController | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private lastError: Error | undefined;
  private stopper: AbortController | undefined;
  private stoppedWhileLeading = false;
  private running: Promise<void> | undefined;

  constructor(options: LeaderElectorOptions) {
    this.options = options;
    this.id = options.id;
    this.namespace = options.namespace;
    this.identity = options.identity ?? `${hostname()}_${randomUUID()}`;
    this.leaseDurationMs = options.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    this.renewDeadlineMs = options.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    this.retryPeriodMs = options.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    if (!this.id || !this.namespace)
      throw new TypeError("Leader election needs a Lease id (its name) and namespace");
    if (!this.identity) throw new TypeError("Leader election needs a non-empty identity");
    if (!(this.leaseDurationMs >= 1_000)) {
      throw new RangeError(`leaseDurationMs must be at least 1000 (got ${this.leaseDurationMs})`);
    }
    if (!(this.retryPeriodMs > 0))
      throw new RangeError(`retryPeriodMs must be positive (got ${this.retryPeriodMs})`);
    if (!(this.leaseDurationMs > this.renewDeadlineMs)) {
      throw new RangeError(
        `leaseDurationMs (${this.leaseDurationMs}) must be greater than renewDeadlineMs (${this.renewDeadlineMs}): ` +
          "the old leader must give up before a candidate may take over",
      );
    }
    if (!(this.renewDeadlineMs > JITTER_FACTOR * this.retryPeriodMs)) {
      throw new RangeError(
        `renewDeadlineMs (${this.renewDeadlineMs}) must be greater than ${JITTER_FACTOR} × retryPeriodMs ` +
          `(${this.retryPeriodMs}), so that a renewal fits in the deadline`,
      );
    }
    this.requestTimeoutMs = Math.max(MIN_REQUEST_TIMEOUT_MS, this.renewDeadlineMs / 2);
  }

  /** True while this replica leads: from a successful acquire until leadership is lost or stopped. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** The holder the Lease named when last read or written (`""` for none, `undefined` before the first read). */
  get leader(): string | undefined {
    return this.observed?.record.holderIdentity;
  }

  /**
   * Campaigns, leads, and renews until `signal` aborts, `stop()` is called, or leadership is lost.
   * Resolves then (after releasing the Lease, if asked); never rejects for server trouble, which
   * goes to `onError`. Only one run at a time.
   */
  run(signal?: AbortSignal): Promise<void> {
    if (this.running) throw new Error(`Leader election for lease ${this.describe()} is already running`);
    const stopper = new AbortController();
    this.stopper = stopper;
    const onAbort = () => stopper.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) stopper.abort();
    this.running = this.loop(stopper.signal).finally(() => {
      signal?.removeEventListener("abort", onAbort);
      this.running = undefined;
      this.stopper = undefined;
    });
    return this.running;
  }

  /** Ends the run: stops leading (releasing the Lease if `releaseOnCancel`). Resolves when `run()` has. */
  async stop(): Promise<void> {
    this.stopper?.abort();
    await this.running;
  }

  private async loop(stop: AbortSignal): Promise<void> {
    this.options.metrics?.set(false);
    this.lastError = undefined;
    this.stoppedWhileLeading = false;
    if (await this.acquire(stop)) await this.renew();
    // Leadership ended (synchronously, at the stop) before the Lease is freed: nothing of ours
    // runs by the time a standby can take over.
    if (this.stoppedWhileLeading && this.options.releaseOnCancel) await this.release();
  }

  /** Tries every retry period (jittered) until the Lease is ours; false if stopped first. */
  private async acquire(stop: AbortSignal): Promise<boolean> {
    while (!stop.aborted) {
      const sentAt = performance.now();
      let acquired = false;
      try {
        acquired = await this.attempt(stop);
      } catch (error) {
        if (!stop.aborted && !(error instanceof Conflict || error instanceof AlreadyExists)) {
          this.report(error);
        }
      }
      this.reportNewLeader();
      if (acquired && stop.aborted) {
        // Won the Lease just as the stop came: never lead, but free it if asked.
        this.stoppedWhileLeading = true;
        return false;
      }
      if (acquired) {
        this.startLeading(stop, sentAt);
        return true;
      }
      await pause(this.retryPeriodMs * (1 + Math.random() * JITTER_FACTOR), stop);
    }
    return false;
  }

  /** Renews every retry period while leading; returns when leadership ends (lost or stopped). */
  private async renew(): Promise<void> {
    const leadership = this.leadership?.signal;
    if (!leadership) return;
    while (this.leading) {
      await pause(this.retryPeriodMs, leadership);
      if (!this.leading) return;
      const sentAt = performance.now();
      try {
        const renewed = await this.attempt(leadership);
        this.reportNewLeader();
        if (!this.leading) return;
        if (renewed) {
          this.lastError = undefined;
          this.armDeadline(sentAt);
        } else {
          this.lose(new LeadershipLost(`Lease ${this.describe()} is now held by ${this.leader}`));
        }
      } catch (error) {
        if (!this.leading) return;
        this.lastError = toError(error);
        this.report(error);
      }
    }
  }

  /**
   * One attempt (client-go's `tryAcquireOrRenew`): true when the Lease is ours afterwards, false
   * when another holder's lease is still valid; throws on request errors (a Conflict included).
   */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = microTime();
    const record: LeaseRecord = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.floor(this.leaseDurationMs / 1000),
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 0,
    };

    // 1. Fast path: the leader updates the Lease it last wrote, assuming nobody else has.
    if (this.leading && this.lease && this.observed && this.leaseValid()) {
      record.acquireTime = this.observed.record.acquireTime;
      record.leaseTransitions = this.observed.record.leaseTransitions;
      try {
        await this.write("PUT", record, signal);
        return true;
      } catch (error) {
        if (signal.aborted) throw error;
        // Fall back to reading the Lease (someone else wrote it, or the request failed).
      }
    }

    // 2. Read the Lease, or create it.
    let current: Lease;
    try {
      current = await this.read(signal);
      if (signal.aborted) throw signal.reason;
    } catch (error) {
      if (!(error instanceof NotFound)) throw error;
      this.lease = undefined;
      await this.write("POST", record, signal);
      return true;
    }
    this.lease = current;
    const old = recordOf(current);
    // Only a change restarts the stopwatch: a holder that stopped renewing expires on our clock.
    if (recordKey(old) !== this.observed?.key) this.observe(old);

    // 3. Someone else holds it, and their lease has not expired on our clock.
    if (old.holderIdentity && old.holderIdentity !== this.identity && this.leaseValid()) return false;

    // 4. Take it over (a new transition), or renew it the slow way.
    if (old.holderIdentity === this.identity) {
      record.acquireTime = old.acquireTime;
      record.leaseTransitions = old.leaseTransitions;
      if (this.leading) this.options.metrics?.slowpath?.();
    } else {
      record.leaseTransitions = old.leaseTransitions + 1;
    }
    await this.write("PUT", record, signal);
    return true;
  }

  /**
   * Hands the Lease back (client-go's `release`): empty holder and a 1 s duration, so a standby
   * takes over at its next try. Read first: a renewal cut short by the stop may have landed and
   * moved the resourceVersion. Not ours any more, or a Conflict (written since): nothing to give.
   */
  private async release(): Promise<void> {
    try {
      await this.cancellable(new AbortController().signal, this.renewDeadlineMs, async (signal) => {
        this.lease = await this.read(signal);
        const current = recordOf(this.lease);
        if (current.holderIdentity !== this.identity) return;
        const now = microTime();
        const record: LeaseRecord = {
          holderIdentity: "",
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: current.leaseTransitions,
        };
        await this.write("PUT", record, signal);
      });
    } catch (error) {
      if (!(error instanceof Conflict || error instanceof NotFound)) this.report(error);
    }
  }

  /** Creates (POST) or updates (PUT, with the last resourceVersion) the Lease with `record`. */
  private async write(method: "POST" | "PUT", record: LeaseRecord, signal: AbortSignal): Promise<void> {
    const lease: Lease = {
      ...(this.lease ?? {}),
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        ...(this.lease?.metadata ?? {}),
        name: this.id,
        namespace: this.namespace,
        ...(this.options.labels
          ? { labels: { ...(this.lease?.metadata?.labels ?? {}), ...this.options.labels } }
          : {}),
      },
      spec: { ...(this.lease?.spec ?? {}), ...specOf(record) },
    };
    const client = this.options.client;
    const written =
      method === "POST"
        ? await client.create(lease, this.call(signal))
        : await client.update(lease, this.call(signal));
    // Given up meanwhile (stop, loss, timeout): the caller has moved on; the next read corrects us.
    if (signal.aborted) throw signal.reason;
    this.lease = written;
    this.observe(recordOf(written));
  }

  private read(signal: AbortSignal): Promise<Lease> {
    return this.options.client.get(refTo(Leases, this.id, this.namespace), this.call(signal));
  }

  /** Lease calls are cancellable (renew deadline, stop) and time out on their own. */
  private call(signal: AbortSignal): RequestOptions {
    // A little under the cancel's bound, so that a silent connection is seen as dead by the
    // transport (which moves to fresh connections and retries) before the call is abandoned.
    return { signal, timeoutMs: Math.max(500, Math.floor(this.requestTimeoutMs * 0.8)) };
  }

  private observe(record: LeaseRecord): void {
    this.observed = { record, key: recordKey(record), at: performance.now() };
  }

  /** The observed holder's lease has not run out since we saw its record change (client-go's `isLeaseValid`). */
  private leaseValid(): boolean {
    const observed = this.observed;
    return !!observed && observed.at + observed.record.leaseDurationSeconds * 1000 > performance.now();
  }

  private startLeading(stop: AbortSignal, sentAt: number): void {
    this.leading = true;
    this.leadership = new AbortController();
    stop.addEventListener(
      "abort",
      () => {
        if (!this.leading) return;
        this.stoppedWhileLeading = true;
        this.endLeadership({ lost: false });
      },
      { once: true },
    );
    this.armDeadline(sentAt);
    this.options.metrics?.set(true);
    try {
      const started = this.options.onStartedLeading?.(this.leadership.signal);
      if (started) started.catch((error: unknown) => this.report(error));
    } catch (error) {
      this.report(error);
    }
  }

  /** Leadership ends `renewDeadline` after the last successful write was sent, unless renewed. */
  private armDeadline(sentAt: number): void {
    clearTimeout(this.deadlineTimer);
    const delay = Math.max(0, sentAt + this.renewDeadlineMs - performance.now());
    this.deadlineTimer = setTimeout(() => {
      const last = this.lastError ? ` (last error: ${describeError(this.lastError)})` : "";
      this.lose(
        new LeadershipLost(
          `Lease ${this.describe()}: no renewal succeeded within ${this.renewDeadlineMs / 1000}s${last}`,
          this.lastError ? { cause: this.lastError } : undefined,
        ),
      );
    }, delay);
  }

  private lose(error: LeadershipLost): void {
    if (this.leading) this.endLeadership({ lost: true, error });
  }

  private endLeadership(event: StoppedLeading): void {
    this.leading = false;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.leadership?.abort(event.lost ? event.error : undefined);
    this.options.metrics?.set(false);
    try {
      this.options.onStoppedLeading?.(event);
    } catch (error) {
      this.report(error);
    }
  }

  /** client-go's `maybeReportTransition`: tell `onNewLeader` when the observed holder changes. */
  private reportNewLeader(): void {
    const holder = this.observed?.record.holderIdentity ?? "";
    if (!holder || holder === this.reportedLeader) return;
    this.reportedLeader = holder;
    try {
      this.options.onNewLeader?.(holder);
    } catch (error) {
      this.report(error);
    }
  }

  /** One {@link tryAcquireOrRenew}, given up when `signal` aborts (stop, lost leadership) or after the request timeout. */
  private attempt(signal: AbortSignal): Promise<boolean> {
    return this.cancellable(signal, this.requestTimeoutMs, (inner) => this.tryAcquireOrRenew(inner));
  }

  /**
   * Runs `work` with a signal that aborts when `signal` does or after `timeoutMs`, and settles the
   * moment it aborts: undici does not give up a request still waiting for its connection (a hung
   * TLS handshake waits for the 10 s connect timeout), and stop or loss must not wait for that.
   * The abandoned request may still finish; `write` then records nothing. (Not `AbortSignal.any`:
   * over days of renewals the long-lived parent would collect a composite signal per attempt.)
   */
  private async cancellable<T>(
    signal: AbortSignal,
    timeoutMs: number,
    work: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const controller = new AbortController();
    const abort = () => controller.abort(signal.reason);
    if (signal.aborted) abort();
    signal.addEventListener("abort", abort, { once: true });
    const timer = setTimeout(
      () => controller.abort(new Error(`Lease ${this.describe()}: no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    let onAbort = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(controller.signal.reason);
      controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    const running = work(controller.signal);
    running.catch(() => {}); // abandoned on abort: its late failure is of no interest
    aborted.catch(() => {});
    try {
      return await Promise.race([running, aborted]);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", abort);
      controller.signal.removeEventListener("abort", onAbort);
    }
  }

  private report(error: unknown): void {
    this.options.onError?.(toError(error));
  }

  private describe(): string {
    return keyOfRef({ namespace: this.namespace, name: this.id });
  }
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function describeError(error: Error): string {
  return error.name && error.name !== "Error" ? `${error.name}: ${error.message}` : error.message;
}

/** Waits `ms`, or less if `signal` aborts; never rejects: the loops check their signal themselves. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, signal).catch(() => undefined);
}
