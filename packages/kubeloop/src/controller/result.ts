/**
 * What a reconcile returns: one explicit result, with no illegal combinations.
 *
 * - `done()`: the object is where it should be; forget its backoff. The next reconcile comes with
 *   the next change.
 * - `after(duration)`: look again after `duration` (a poll, e.g. while pods come up); resets the
 *   backoff, as controller-runtime's RequeueAfter does.
 * - a thrown error: retry with per-key exponential backoff (5 ms × 2ⁿ, capped at 1000 s).
 * - `throw terminal(error)` (or return it): no retry until the object changes; recorded in the
 *   `Ready` condition and a Warning event, and counted in `controller_runtime_terminal_reconcile_errors_total`.
 */

export type ReconcileResult =
  | { readonly kind: "done" }
  | { readonly kind: "after"; readonly delayMs: number };

/** A duration: milliseconds, or a Go-style string such as `"500ms"`, `"5s"`, `"1m30s"`, `"2h"`. */
export type Duration = number | string;

const DONE: ReconcileResult = Object.freeze({ kind: "done" });

/** The object is where it should be: forget its backoff; the next reconcile comes with the next change. */
export function done(): ReconcileResult {
  return DONE;
}

/**
 * Look again after `duration` (milliseconds or `"30s"`, `"1m30s"`): a poll while something comes up.
 * Resets the backoff, as controller-runtime's `RequeueAfter` does.
 */
export function after(duration: Duration): ReconcileResult {
  return { kind: "after", delayMs: parseDuration(duration) };
}

/** An error that retrying will not fix (bad input, a missing prerequisite the user must create). */
export class TerminalError extends Error {
  override name = "TerminalError";
  /** A CamelCase reason for the condition and event, e.g. `InvalidSpec`. */
  readonly reason: string;

  constructor(message: string, options: { reason?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options.reason ?? "ReconcileFailed";
  }
}

/**
 * A failure that retrying may fix (a server down, credentials being fixed), with a reason for the
 * `Ready` condition and the Warning event instead of the generic `ReconcileError`. Thrown, it is
 * retried with backoff like any error. Its message goes into the event and the condition: never
 * put a secret in it.
 *
 * @example
 * ```ts
 * throw new RetryableError(`server ${host}:${port} refused the connection`, { reason: "ServerUnreachable" });
 * ```
 */
export class RetryableError extends Error {
  override name = "RetryableError";
  /** A CamelCase reason, e.g. `AuthenticationFailed`. */
  readonly reason: string;

  constructor(message: string, options: { reason: string; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options.reason;
  }
}

/** Wraps an error (or a message) as terminal: no retry until the object changes. */
export function terminal(error: unknown, reason?: string): TerminalError {
  if (error instanceof TerminalError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new TerminalError(message, { ...(reason ? { reason } : {}), cause: error });
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a {@link Duration}; a RangeError names a malformed one. */
export function parseDuration(duration: Duration): number {
  if (typeof duration === "number") {
    if (!Number.isFinite(duration) || duration < 0) throw new RangeError(`Invalid duration ${duration}`);
    return duration;
  }
  const parts = [...duration.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== duration) {
    throw new RangeError(`Invalid duration "${duration}" (use e.g. "500ms", "5s", "1m30s", "2h")`);
  }
  return parts.reduce((total, [, amount, unit]) => total + Number(amount) * (UNITS[unit as string] ?? 0), 0);
}
