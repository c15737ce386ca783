import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { posix } from "node:path";
import { type Fault, injected } from "./fault.js";
import { ChaosError, type ChaosPlane, name, type PodTarget, runningContainer } from "./runtime.js";

/** A filled volume: how much was written, and whether the volume ran out of space first. */
export interface VolumeFillFault extends Fault {
  readonly kind: "volume-fill";
  readonly written: number;
  /** The write stopped at ENOSPC: the volume is full. */
  readonly full: boolean;
}

const CHUNK = 1 << 20;

/**
 * Fills a volume mounted in a pod: writes a file of up to `bytes` under `path` (the mount path in
 * the container) from the host, through the container's root (`/proc/<pid>/root`), stopping early
 * when the volume is full (a size-limited `emptyDir` with `medium: Memory`, a small filesystem).
 * `restore()` deletes the file through the container running then (a restarted one too).
 *
 * @example
 * ```ts
 * const fill = await fillVolume(plane, { namespace: "db", pod: "db-0", path: "/data", bytes: 64 << 20 });
 * expect(fill.full).toBe(true);
 * await fill.restore();
 * ```
 */
export async function fillVolume(
  plane: ChaosPlane,
  target: PodTarget & { container?: string; path: string; bytes: number },
): Promise<VolumeFillFault> {
  if (!posix.isAbsolute(target.path))
    throw new ChaosError(`fillVolume: path must be absolute, got ${target.path}`);
  const file = posix.join(target.path, ".kubeloop-chaos-fill");
  const hostPath = async () => {
    const { pid } = await runningContainer(plane, target, target.container);
    return `/proc/${pid}/root${file}`;
  };
  const path = await hostPath();
  const injectedAt = Date.now();
  let written = 0;
  let full = false;
  const fd = openSync(path, "w");
  try {
    const chunk = Buffer.alloc(CHUNK, 0x5a);
    while (written < target.bytes) {
      try {
        written += writeSync(fd, chunk, 0, Math.min(CHUNK, target.bytes - written));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
        full = true;
        break;
      }
    }
  } finally {
    closeSync(fd);
  }
  const fault = injected("volume-fill", `${name(target)}:${target.path}`, injectedAt, async () => {
    rmSync(await hostPath(), { force: true });
  });
  return Object.assign(fault, { kind: "volume-fill" as const, written, full });
}
