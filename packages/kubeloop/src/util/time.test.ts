import { describe, expect, it } from "vitest";
import { FakeClock } from "./clock.js";
import { PollTimeoutError, pollUntil, sleep } from "./time.js";

/** Lets pending promise callbacks run (a fake clock's timers fire synchronously). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("sleep", () => {
  it("resolves when the clock has moved by the delay, not before", async () => {
    const clock = new FakeClock();
    let done = false;
    void sleep(1000, undefined, clock).then(() => {
      done = true;
    });
    clock.advance(999);
    await settle();
    expect(done).toBe(false);
    clock.advance(1);
    await settle();
    expect(done).toBe(true);
  });

  it("rejects at once with the reason when the signal is already aborted, setting no timer", async () => {
    const clock = new FakeClock();
    const reason = new Error("stopped");
    await expect(sleep(60_000, AbortSignal.abort(reason), clock)).rejects.toBe(reason);
    expect(clock.pendingTimers).toBe(0);
  });

  it("rejects when the signal aborts mid-wait, clearing its timer and its listener", async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const waiting = sleep(60_000, controller.signal, clock);
    expect(clock.pendingTimers).toBe(1);
    controller.abort(new Error("shutdown"));
    await expect(waiting).rejects.toThrow("shutdown");
    expect(clock.pendingTimers).toBe(0);
  });

  it("removes its abort listener when it resolves, so a long-lived signal collects none", async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    let listeners = 0;
    const add = controller.signal.addEventListener.bind(controller.signal);
    const remove = controller.signal.removeEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      add(...args);
    }) as typeof add;
    controller.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners--;
      remove(...args);
    }) as typeof remove;
    for (let i = 0; i < 3; i++) {
      const waiting = sleep(10, controller.signal, clock);
      clock.advance(10);
      await waiting;
    }
    expect(listeners).toBe(0);
  });
});

describe("pollUntil", () => {
  it("returns the first truthy value, looking every intervalMs", async () => {
    const clock = new FakeClock();
    const looks: number[] = [];
    const found = pollUntil(
      () => {
        looks.push(clock.now());
        return looks.length === 3 ? "ready" : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 250, clock },
    );
    for (let i = 0; i < 3; i++) {
      await settle();
      clock.advance(250);
    }
    expect(await found).toBe("ready");
    expect(looks).toEqual([0, 250, 500]);
  });

  it("counts a throwing check as not yet, and names its last error when time runs out", async () => {
    const clock = new FakeClock();
    let calls = 0;
    const waiting = pollUntil(
      () => {
        calls++;
        throw new Error(`connection refused #${calls}`);
      },
      { timeoutMs: 300, intervalMs: 100, message: "the API server", clock },
    );
    const outcome = waiting.catch((error: unknown) => error);
    for (let i = 0; i < 4; i++) {
      await settle();
      clock.advance(100);
    }
    const error = (await outcome) as PollTimeoutError;
    expect(error).toBeInstanceOf(PollTimeoutError);
    expect(error.message).toBe(
      "timed out after 0.3s waiting for the API server (last error: connection refused #4)",
    );
    expect((error.cause as Error).message).toBe("connection refused #4");
    expect(calls).toBe(4);
  });

  it("looks once even with no time at all", async () => {
    expect(await pollUntil(() => 42, { timeoutMs: 0 })).toBe(42);
    await expect(pollUntil(() => false, { timeoutMs: 0 })).rejects.toThrow(
      "timed out after 0s waiting for the condition",
    );
  });

  it("stops with the signal's reason, and when abortIf throws", async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const waiting = pollUntil(() => false, { timeoutMs: 60_000, signal: controller.signal, clock });
    await settle();
    controller.abort(new Error("test over"));
    await expect(waiting).rejects.toThrow("test over");
    await expect(
      pollUntil(() => true, {
        timeoutMs: 1000,
        abortIf: () => {
          throw new Error("etcd exited with code 1");
        },
      }),
    ).rejects.toThrow("etcd exited with code 1");
  });

  it("refuses a negative or NaN timeout or interval, naming it", async () => {
    await expect(pollUntil(() => true, { timeoutMs: -1 })).rejects.toThrow("timeoutMs must be >= 0, got -1");
    await expect(pollUntil(() => true, { timeoutMs: 1, intervalMs: Number.NaN })).rejects.toThrow(
      "intervalMs must be >= 0, got NaN",
    );
  });
});
