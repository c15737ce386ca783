// The image's entrypoint: sizes V8's heap for an operator from the container's memory limit, then
// replaces itself (execve) with `node <flags> <main>`. Self-contained (Node built-ins only): the
// image holds this file as it is compiled, beside the bundle. Measured in docs/performance.md.
import { totalmem } from "node:os";
import { pathToFileURL } from "node:url";

/** The heap flags a launched operator gets, and why; from {@link heapFlags}. */
export interface HeapSizing {
  /** Node flags to add (none of those the user already set). */
  flags: string[];
  /** The memory limit the sizing used, in bytes; undefined when there is none. */
  limitBytes: number | undefined;
}

/**
 * V8 grows each semispace of its young generation up to a size it derives from the memory it
 * sees (64 MiB on a 24 GiB machine without a limit; about 3.5 MiB under a 512 MiB limit) and
 * keeps it committed: 65–110 MiB of an operator's RSS at 10,000 cached objects. At 4 MiB the same
 * operator holds 153 MiB instead of 210–255 (8: 161, 2: 145), with no CPU cost we could measure
 * (docs/performance.md, "where the memory goes").
 */
export const SEMI_SPACE_MIB = 4;
/** The old generation's share of a memory limit: the rest is Node itself, code, young generation, buffers. */
export const OLD_SPACE_SHARE = 0.75;
const MIB = 2 ** 20;

/**
 * The heap flags for a container with `limitBytes` of memory (undefined: no limit), leaving alone
 * any heap flag already in `NODE_OPTIONS` or node's own arguments: `--max-semi-space-size=4` and,
 * under a limit, `--max-old-space-size` at 75% of it (so V8 collects before the kernel kills; by
 * default Node sizes the heap as if the whole limit were its own). `--max-heap-size` given: none.
 *
 * @example
 * ```ts
 * heapFlags(512 * 2 ** 20, "");  // ["--max-semi-space-size=4", "--max-old-space-size=384"]
 * ```
 */
export function heapFlags(
  limitBytes: number | undefined,
  nodeOptions = "",
  execArgv: readonly string[] = [],
): string[] {
  const given = ` ${nodeOptions} ${execArgv.join(" ")}`.replaceAll("_", "-");
  const has = (flag: string) => given.includes(` --${flag}=`) || given.includes(` --${flag} `);
  if (has("max-heap-size")) return [];
  const flags: string[] = [];
  if (!has("max-semi-space-size")) flags.push(`--max-semi-space-size=${SEMI_SPACE_MIB}`);
  if (limitBytes !== undefined && !has("max-old-space-size"))
    flags.push(`--max-old-space-size=${Math.max(64, Math.floor((limitBytes / MIB) * OLD_SPACE_SHARE))}`);
  return flags;
}

/**
 * The container's memory limit in bytes: `$KUBELOOP_MEMORY_LIMIT` (the Deployment passes
 * `limits.memory` through the downward API), else the cgroup's (libuv reads cgroup v2's
 * `memory.max` and v1's `memory.limit_in_bytes`). Undefined when there is none: no figure, or one
 * at least the machine's memory (what an unlimited cgroup reports).
 */
export function memoryLimit(
  env: Record<string, string | undefined> = process.env,
  constrained: number = process.constrainedMemory?.() ?? 0,
  machine: number = totalmem(),
): number | undefined {
  const fromEnv = Number(env.KUBELOOP_MEMORY_LIMIT);
  const limit = Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : constrained;
  return limit > 0 && limit < machine ? limit : undefined;
}

/** Sizes the heap for this container; see {@link heapFlags} and {@link memoryLimit}. */
export function heapSizing(env: Record<string, string | undefined> = process.env): HeapSizing {
  const limitBytes = memoryLimit(env);
  return { flags: heapFlags(limitBytes, env.NODE_OPTIONS ?? "", process.execArgv), limitBytes };
}

/** `node launcher.js main.mjs [args…]`: runs main.mjs in a node started with the heap flags. */
async function launch(): Promise<void> {
  const [main, ...args] = process.argv.slice(2);
  if (!main) throw new Error("usage: node launcher.js <main module> [arguments]");
  const { flags } = heapSizing();
  if (flags.length && process.execve) {
    process.execve(process.execPath, [process.execPath, ...flags, ...process.execArgv, main, ...args]);
  }
  // Nothing to add, or a Node without execve (< 22.15): run the operator in this process.
  process.argv.splice(1, 2, main);
  await import(pathToFileURL(main).href);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await launch();
