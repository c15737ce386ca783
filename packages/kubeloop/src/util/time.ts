import { type Clock, systemClock } from "./clock.js";

/**
 * Waits `ms` milliseconds on `clock`; rejects with the signal's reason as soon as `signal` aborts,
 * at once if it already has. The abort listener goes when the wait ends: `signal` may be
 * long-lived (an informer's) and waited on again at every retry.
 *
 * @example
 * ```ts
 * await sleep(backoffMs, signal); // throws signal.reason when the informer stops
 * ```
 */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = systemClock): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** How envtest and client-go's test helpers poll: every 100 ms. */
export const DEFAULT_POLL_INTERVAL_MS = 100;

/** How long {@link pollUntil} waits, how often it looks, and what stops it early. */
export interface PollOptions {
  /** How long to keep looking before giving up with a {@link PollTimeoutError}. */
  timeoutMs: number;
  /** The pause between two looks. Default {@link DEFAULT_POLL_INTERVAL_MS} (100 ms). */
  intervalMs?: number;
  /** Stops the wait: `pollUntil` rejects with the signal's reason. */
  signal?: AbortSignal;
  /** What is awaited, for the timeout error: "waiting for <message>". Default "the condition". */
  message?: string;
  /** Called before each look: throw to stop waiting at once (e.g. a process that was to serve died). */
  abortIf?: () => void;
  /** Default {@link systemClock}. */
  clock?: Clock;
}

/** A {@link pollUntil} that ran out of time; `cause` is the last error the check threw, if any. */
export class PollTimeoutError extends Error {
  override name = "PollTimeoutError";
}

/**
 * Calls `check` until it returns a truthy value, and returns that value. A throwing check counts
 * as "not yet" (the server may still be coming up); its last error is named if time runs out. The
 * check runs at least once, even with `timeoutMs: 0`.
 *
 * @example
 * ```ts
 * const pod = await pollUntil(() => cache.get({ namespace: ns, name: "web-0" }), { timeoutMs: 10_000, message: "pod web-0" });
 * ```
 */
export async function pollUntil<T>(
  check: () => T | Promise<T>,
  options: PollOptions,
): Promise<Exclude<T, false | 0 | "" | null | undefined>> {
  const { timeoutMs, intervalMs = DEFAULT_POLL_INTERVAL_MS, signal, clock = systemClock } = options;
  if (!(timeoutMs >= 0)) throw new RangeError(`pollUntil: timeoutMs must be >= 0, got ${timeoutMs}`);
  if (!(intervalMs >= 0)) throw new RangeError(`pollUntil: intervalMs must be >= 0, got ${intervalMs}`);
  const deadline = clock.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    options.abortIf?.();
    try {
      const value = await check();
      if (value) return value as Exclude<T, false | 0 | "" | null | undefined>;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (clock.now() >= deadline) {
      const because = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new PollTimeoutError(
        `timed out after ${timeoutMs / 1000}s waiting for ${options.message ?? "the condition"}${because}`,
        { cause: lastError },
      );
    }
    await sleep(intervalMs, signal, clock);
  }
}
