/** The errors of the binaries' cache, and how they show a log as evidence. */

/** A control-plane binary is missing, cannot be built, or is not runnable. */
export class AssetsError extends Error {
  override readonly name = "AssetsError";
}

/** Indents a block of log lines under a message, so it reads as evidence. */
export function quoteLog(tail: string): string {
  const lines = tail.trimEnd().split("\n");
  return lines.map((line) => `    | ${line}`).join("\n");
}
