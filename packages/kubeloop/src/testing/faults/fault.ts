import { pollUntil } from "../../util/index.js";

/** The faults {@link Fault} handles stand for. */
export type FaultKind = "pod-delete" | "container-kill" | "network-cut" | "node-stop" | "volume-fill";

/** How {@link Fault.recovered} polls the caller's predicate. */
export interface RecoveryOptions {
  /** Give up after this long (a `PollTimeoutError` naming the fault). Default 120 s. */
  timeoutMs?: number;
  /** The pause between two looks; the measured time is as fine as this. Default 100 ms. */
  intervalMs?: number;
}

/** When the system was whole again after a fault, as the caller's predicate saw it. */
export interface Recovery {
  kind: FaultKind;
  /** What was hit: `namespace/pod`, `namespace/pod/container`, a node's name. */
  target: string;
  /** When the fault was injected (epoch ms). */
  injectedAt: number;
  /** When {@link Fault.restore} ran, for faults that last until restored (network cut, node stop). */
  restoredAt?: number;
  /** When the look that first found the system whole began (epoch ms). */
  recoveredAt: number;
  /** `recoveredAt - injectedAt`: the time the system was not whole, to within the poll interval. */
  ms: number;
  /**
   * `recoveredAt - restoredAt`, for restored faults: how long the system took once the fault ended
   * (absent when it was whole before the restore, e.g. pods evicted from a stopped node).
   */
  sinceRestoreMs?: number;
  /**
   * Whether the predicate was ever seen false. A recovery that never looked broken may mean a
   * predicate that cannot tell (e.g. one that counts Ready replicas before the loss showed).
   */
  sawBroken: boolean;
}

/**
 * One injected fault. `restore()` ends a fault that lasts (a cut network, a stopped kubelet);
 * `recovered()` measures when the system was whole again, by polling a predicate over the
 * resources' status that the caller gives.
 */
export interface Fault {
  readonly kind: FaultKind;
  readonly target: string;
  /** When the fault was injected (epoch ms). */
  readonly injectedAt: number;
  /** When `restore()` ended the fault (epoch ms); undefined until then, and for one-shot faults. */
  readonly restoredAt: number | undefined;
  /** Ends the fault (idempotent). One-shot faults (a deleted pod, a killed process) have nothing to undo. */
  restore(): Promise<void>;
  /**
   * Polls `whole` until it returns true and reports when that was. Write `whole` so it cannot be
   * true before the system noticed the fault: e.g. a new pod's uid, a restart count that grew.
   */
  recovered(whole: () => boolean | Promise<boolean>, options?: RecoveryOptions): Promise<Recovery>;
}

/** A {@link Fault} whose injection already happened at `injectedAt`; `undo` (if any) ends it. */
export function injected(
  kind: FaultKind,
  target: string,
  injectedAt: number,
  undo?: () => Promise<void>,
): Fault {
  let restoredAt: number | undefined;
  let restoring: Promise<void> | undefined;
  return {
    kind,
    target,
    injectedAt,
    get restoredAt() {
      return restoredAt;
    },
    restore() {
      if (!undo) return Promise.resolve();
      restoring ??= undo().then(() => {
        restoredAt = Date.now();
      });
      return restoring;
    },
    async recovered(whole, options = {}) {
      let sawBroken = false;
      const recoveredAt = await pollUntil(
        async () => {
          const at = Date.now();
          if (await whole()) return at;
          sawBroken = true;
          return 0;
        },
        {
          timeoutMs: options.timeoutMs ?? 120_000,
          intervalMs: options.intervalMs ?? 100,
          message: `the system to be whole again after ${kind} of ${target}`,
        },
      );
      return {
        kind,
        target,
        injectedAt,
        ...(restoredAt === undefined ? {} : { restoredAt }),
        ...(restoredAt !== undefined && restoredAt <= recoveredAt
          ? { sinceRestoreMs: recoveredAt - restoredAt }
          : {}),
        recoveredAt,
        ms: recoveredAt - injectedAt,
        sawBroken,
      };
    },
  };
}
