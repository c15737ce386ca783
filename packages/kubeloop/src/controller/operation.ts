/**
 * Long-running operations (a backup, a restore, a migration) that must survive the operator's
 * restart: the operation's record lives in the object's status, and is written *before* the work
 * starts. A restarted operator reads `phase: Running` and starts the attempt over (so the work
 * must be idempotent: write to a temporary name and rename, drop what a cut-short attempt left),
 * instead of forgetting it or running it twice at once; finished operations are never redone; a
 * bounded number of attempts ends in `Failed` rather than retrying forever.
 *
 * The status fields are the conventional ones (CloudNativePG's Backup has the same): `phase`,
 * `attempts`, `startedAt`, `completedAt`, `message`; add them to the status schema.
 *
 * @example
 * ```ts
 * const outcome = await runOperation({
 *   record: backup.status,
 *   maxAttempts: 3,
 *   now: () => ctx.now(),
 *   save: (status) => ctx.status(status),
 *   run: async () => {
 *     const { size, sha256 } = await dump(path);        // idempotent: dump to path.partial, then rename
 *     return { sizeBytes: size, sha256 };              // recorded with phase Completed
 *   },
 * });
 * ```
 */

/** An operation's record, as kept in status. */
export interface OperationRecord {
  phase?: string | undefined;
  attempts?: number | undefined;
  startedAt?: string | undefined;
  completedAt?: string | undefined;
  message?: string | undefined;
}

/** What to do with an operation given its record. */
export type Attempt =
  /** Completed or Failed: never run again. */
  | { kind: "finished" }
  /** Every attempt was used: record `Failed` with the last error. */
  | { kind: "exhausted"; status: { phase: "Failed"; message: string; completedAt: string } }
  /**
   * Run attempt number `attempt`; record `status` first. `resumed`: an earlier attempt was cut
   * short (the record said Running), so clean up what it may have left.
   */
  | {
      kind: "run";
      attempt: number;
      resumed: boolean;
      status: { phase: "Running"; attempts: number; startedAt: string };
    };

/** Decides the next step of an operation from its record (a pure function of status and time). */
export function nextAttempt(
  record: OperationRecord | undefined,
  options: { maxAttempts: number; now: Date },
): Attempt {
  if (!Number.isInteger(options.maxAttempts) || options.maxAttempts < 1)
    throw new RangeError(`maxAttempts must be a whole number ≥ 1, got ${options.maxAttempts}`);
  if (record?.phase === "Completed" || record?.phase === "Failed") return { kind: "finished" };
  const attempts = record?.attempts ?? 0;
  if (attempts >= options.maxAttempts) {
    const why = record?.message ? `: ${record.message}` : "";
    return {
      kind: "exhausted",
      status: {
        phase: "Failed",
        message: `Gave up after ${attempts} attempt(s)${why}`,
        completedAt: options.now.toISOString(),
      },
    };
  }
  return {
    kind: "run",
    attempt: attempts + 1,
    resumed: record?.phase === "Running",
    status: { phase: "Running", attempts: attempts + 1, startedAt: options.now.toISOString() },
  };
}

/** What `runOperation` needs: the recorded attempt, the attempt limit, the clock, a status writer, and the work. */
export interface RunOperationOptions {
  record: OperationRecord | undefined;
  maxAttempts: number;
  /** The wall clock (a reconcile's `ctx.now`). */
  now: () => Date;
  /** Writes status fields (a reconcile's `ctx.status`). */
  save: (status: Record<string, unknown>) => Promise<unknown>;
  /** Fields recorded with `Running` besides the attempt (e.g. the target's deterministic name). */
  starting?: Record<string, unknown>;
  /** The work; what it returns is recorded with `Completed`. Throw to fail this attempt. */
  run: (attempt: { number: number; resumed: boolean }) => Promise<Record<string, unknown> | undefined>;
}

/**
 * Runs an operation's next attempt with its record kept in status: `Running` (and the attempt)
 * written first, `Completed` with the work's results after, the error's message on failure (then
 * rethrown, so the reconcile is retried with backoff), `Failed` once attempts run out.
 * Resolves with what happened.
 */
export async function runOperation(
  options: RunOperationOptions,
): Promise<"completed" | "finished" | "failed"> {
  const next = nextAttempt(options.record, { maxAttempts: options.maxAttempts, now: options.now() });
  if (next.kind === "finished") return "finished";
  if (next.kind === "exhausted") {
    await options.save(next.status);
    return "failed";
  }
  await options.save({ ...options.starting, ...next.status, message: "" });
  let results: Record<string, unknown> | undefined;
  try {
    results = await options.run({ number: next.attempt, resumed: next.resumed });
  } catch (error) {
    await options.save({ message: error instanceof Error ? error.message : String(error) });
    throw error;
  }
  await options.save({
    ...results,
    phase: "Completed",
    completedAt: options.now().toISOString(),
    message: "",
  });
  return "completed";
}
