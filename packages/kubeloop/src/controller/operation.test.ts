import { describe, expect, it } from "vitest";
import { nextAttempt, type OperationRecord, runOperation } from "./operation.js";

const now = new Date("2030-01-01T00:00:00Z");

describe("nextAttempt", () => {
  it("runs the first attempt of a new operation", () => {
    expect(nextAttempt(undefined, { maxAttempts: 3, now })).toEqual({
      kind: "run",
      attempt: 1,
      resumed: false,
      status: { phase: "Running", attempts: 1, startedAt: "2030-01-01T00:00:00.000Z" },
    });
  });

  it("starts over an attempt that a restart cut short, counting it", () => {
    const next = nextAttempt({ phase: "Running", attempts: 1 }, { maxAttempts: 3, now });
    expect(next).toMatchObject({ kind: "run", attempt: 2, resumed: true, status: { attempts: 2 } });
  });

  it("never runs a finished operation again", () => {
    expect(nextAttempt({ phase: "Completed", attempts: 1 }, { maxAttempts: 3, now })).toEqual({
      kind: "finished",
    });
    expect(nextAttempt({ phase: "Failed", attempts: 3 }, { maxAttempts: 3, now })).toEqual({
      kind: "finished",
    });
  });

  it("gives up once every attempt was used, with the last error", () => {
    expect(
      nextAttempt({ phase: "Running", attempts: 3, message: "disk full" }, { maxAttempts: 3, now }),
    ).toEqual({
      kind: "exhausted",
      status: {
        phase: "Failed",
        message: "Gave up after 3 attempt(s): disk full",
        completedAt: "2030-01-01T00:00:00.000Z",
      },
    });
  });

  it("rejects a maxAttempts that is not a whole number ≥ 1", () => {
    expect(() => nextAttempt(undefined, { maxAttempts: 0, now })).toThrow(
      /maxAttempts must be a whole number ≥ 1, got 0/,
    );
  });
});

describe("runOperation", () => {
  /** A status that `save` merges into, as a status merge patch does. */
  const harness = (initial?: OperationRecord) => {
    let status: Record<string, unknown> = { ...initial };
    const writes: Record<string, unknown>[] = [];
    return {
      get status() {
        return status;
      },
      writes,
      save: async (patch: Record<string, unknown>) => {
        writes.push(patch);
        status = { ...status, ...patch };
      },
    };
  };

  it("records Running before the work and Completed with its results after", async () => {
    const h = harness();
    let seenDuringWork: unknown;
    const outcome = await runOperation({
      record: undefined,
      maxAttempts: 3,
      now: () => now,
      save: h.save,
      starting: { path: "/backups/a.dump" },
      run: async () => {
        seenDuringWork = { ...h.status };
        return { sizeBytes: 42 };
      },
    });
    expect(outcome).toBe("completed");
    expect(seenDuringWork).toMatchObject({ phase: "Running", attempts: 1, path: "/backups/a.dump" });
    expect(h.status).toMatchObject({
      phase: "Completed",
      attempts: 1,
      sizeBytes: 42,
      completedAt: now.toISOString(),
    });
  });

  it("records a failed attempt's message and rethrows it, then fails for good after the last attempt", async () => {
    const h = harness();
    const failing = () =>
      runOperation({
        record: h.status as OperationRecord,
        maxAttempts: 2,
        now: () => now,
        save: h.save,
        run: async () => {
          throw new Error("connection refused");
        },
      });
    await expect(failing()).rejects.toThrow("connection refused");
    expect(h.status).toMatchObject({ phase: "Running", attempts: 1, message: "connection refused" });
    await expect(failing()).rejects.toThrow("connection refused");
    expect(await failing()).toBe("failed");
    expect(h.status).toMatchObject({
      phase: "Failed",
      message: "Gave up after 2 attempt(s): connection refused",
    });
    expect(await failing()).toBe("finished");
  });

  it("tells the work when it resumes a cut-short attempt", async () => {
    const h = harness({ phase: "Running", attempts: 1 });
    let resumed: boolean | undefined;
    await runOperation({
      record: h.status as OperationRecord,
      maxAttempts: 3,
      now: () => now,
      save: h.save,
      run: async (attempt) => {
        resumed = attempt.resumed;
        return undefined;
      },
    });
    expect(resumed).toBe(true);
    expect(h.status).toMatchObject({ phase: "Completed", attempts: 2 });
  });
});
