import { ControlPlaneError } from "./errors.js";

export interface WaitOptions {
  timeoutMs: number;
  /** How often to look again. envtest polls every 100 ms; so do we. */
  intervalMs?: number;
  /** Checked before each poll: throw to stop waiting (e.g. a process died). */
  abortIf?: () => void;
}

/**
 * Polls `check` until it returns true. Errors thrown by `check` count as "not yet" (the server may
 * still be coming up) and the last one is reported if time runs out.
 */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  options: WaitOptions,
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 100;
  let lastError: unknown;
  for (;;) {
    options.abortIf?.();
    try {
      if (await check()) return;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const because = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new ControlPlaneError(
        `Timed out after ${options.timeoutMs / 1000}s waiting for ${what}${because}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
