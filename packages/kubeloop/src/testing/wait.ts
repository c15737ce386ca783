import { PollTimeoutError, pollUntil } from "../util/index.js";
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
 * still be coming up) and the last one is reported if time runs out, as a {@link ControlPlaneError}.
 */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  options: WaitOptions,
): Promise<void> {
  try {
    await pollUntil(check, { ...options, message: what });
  } catch (error) {
    if (!(error instanceof PollTimeoutError)) throw error;
    throw new ControlPlaneError(error.message, { cause: error.cause });
  }
}
