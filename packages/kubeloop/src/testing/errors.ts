/**
 * Errors of the testing layer. Each says what failed, shows the evidence (a log's tail), and what
 * the user can do about it.
 */

export { AssetsError, quoteLog } from "./assets/errors.js";

/** A control plane could not start, or a component failed while it ran. */
export class ControlPlaneError extends Error {
  override readonly name = "ControlPlaneError";
  /** The component that failed, when one did (e.g. `etcd`). */
  readonly component: string | undefined;
  /** The last lines of that component's log. */
  readonly logTail: string | undefined;

  constructor(message: string, options: { component?: string; logTail?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.component = options.component;
    this.logTail = options.logTail;
  }
}
