import type { Logger } from "pino";
import { type Client, type KubeObject, objectKey, type ResourceType } from "../client/index.js";
import { type Condition, redactSecrets, setCondition } from "../resources/index.js";
import type { EventSink } from "./context.js";
import { patchPrimaryStatus } from "./context.js";
import { WriteTracker } from "./tracking-client.js";
import type { WriteAwareness } from "./write-awareness.js";

/**
 * A failed reconcile is shown where users look: a Warning event (repeats fold into one event's
 * series) and the Ready condition. Our own status write does not wake the key (its echo is
 * filtered, write-awareness.ts), so recording never cuts the backoff short.
 */
export class FailureRecorder<T extends KubeObject> {
  private statusSubresource: Promise<boolean> | undefined;

  constructor(
    private readonly client: Client,
    private readonly primary: ResourceType<T>,
    private readonly writes: WriteAwareness,
    private readonly events: EventSink | undefined,
  ) {}

  async record(object: T, reason: string, errorMessage: string, log: Logger): Promise<void> {
    const note = redactSecrets(errorMessage);
    this.events?.event(object, { type: "Warning", reason, action: "Reconcile", note });
    if (!(await this.hasStatus())) return;
    const conditions = (object as { status?: { conditions?: Condition[] } }).status?.conditions ?? [];
    const message = note.slice(0, 32_768);
    const ready = conditions.find((c) => c.type === "Ready");
    // Already recorded: nothing to write.
    if (ready?.status === "False" && ready.reason === reason && ready.message === message) return;
    const next = setCondition(conditions, {
      type: "Ready",
      status: "False",
      reason,
      message,
      observedGeneration: object.metadata?.generation,
    });
    try {
      const tracker = new WriteTracker(this.writes, objectKey(object));
      await patchPrimaryStatus(this.client, tracker, this.primary, object, { conditions: next });
    } catch (statusError) {
      log.warn({ err: statusError }, "could not record the failure in the Ready condition");
    }
  }

  /** Whether the primary type has a status subresource (custom resources may not; ConfigMaps do not). */
  private hasStatus(): Promise<boolean> {
    this.statusSubresource ??= this.client
      .resolve(this.primary)
      .then((info) => info.subresources.includes("status"))
      .catch(() => false);
    return this.statusSubresource;
  }
}

/**
 * Errors the engine throws for a bug in the code (reading a property of undefined, calling what is
 * not a function, unbounded recursion, bad JSON handed to `JSON.parse`): what a panic is in Go, so
 * they count in `controller_runtime_reconcile_panics_total` as controller-runtime's recovered panics do.
 */
export function isProgrammingError(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    error instanceof ReferenceError ||
    error instanceof RangeError ||
    error instanceof SyntaxError
  );
}
