import { Conflict } from "../client/index.js";
import { sleep } from "../util/index.js";

/**
 * Read-modify-write loops retry on 409 Conflict: the object changed between our read and our write,
 * so read again and redo the change. Bounded, because a conflict that persists is contention a
 * reconcile should surface (and retry with backoff), not spin on.
 */

/** Attempts in all, client-go's `retry.DefaultRetry` (5 steps of ~10 ms). */
export const DEFAULT_CONFLICT_ATTEMPTS = 5;
/** Pause between attempts, ±10% jitter so racing writers spread out (client-go's `DefaultRetry`). */
export const CONFLICT_RETRY_PAUSE_MS = 10;

/**
 * Runs `attempt(n)` (n = 0, 1, …) until it returns or throws something other than a
 * {@link Conflict} (or what `retryable` accepts); after `attempts` tries the last error is thrown.
 */
export async function retryOnConflict<R>(
  attempt: (n: number) => Promise<R>,
  attempts: number = DEFAULT_CONFLICT_ATTEMPTS,
  retryable: (error: unknown) => boolean = (error) => error instanceof Conflict,
): Promise<R> {
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new RangeError(`attempts must be a whole number >= 1, got ${attempts}`);
  }
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!retryable(error) || n + 1 >= attempts) throw error;
      const pause = CONFLICT_RETRY_PAUSE_MS * (0.9 + Math.random() * 0.2);
      await sleep(pause);
    }
  }
}
