import { closeSync, openSync, readSync } from "node:fs";
import { ControlPlaneError } from "../errors.js";
import type { Exit, ManagedProcess } from "../process.js";

/**
 * The error for a component that died while the plane started: how it ended, its last log lines,
 * and, when the binary is at fault rather than the component, what is wrong with it and how to
 * get a good one.
 */
export function componentFailure(dead: ManagedProcess): ControlPlaneError {
  return new ControlPlaneError(
    dead.describeFailure("the control plane was starting") + diagnoseBinary(dead.binary, dead.exitStatus),
    { component: dead.name, logTail: dead.tail(25) },
  );
}

/**
 * Explains an early exit that is the binary's fault rather than the component's: missing, not a
 * program (a partial download, a text file), or crashing before it logs anything. Empty otherwise.
 */
function diagnoseBinary(path: string, exit: Exit | undefined): string {
  const rebuild =
    "Delete it and run `npx kubeloop assets build` (or start again, which rebuilds what is missing).";
  if (exit?.error?.code === "ENOENT") return `\n${path} does not exist.`;
  if (exit?.error?.code === "EACCES") return `\n${path} is not executable (chmod +x it, or rebuild it).`;
  const magic = Buffer.alloc(4);
  try {
    const fd = openSync(path, "r");
    readSync(fd, magic, 0, 4, 0);
    closeSync(fd);
  } catch {
    return `\n${path} cannot be read.`;
  }
  const isProgram = PROGRAM_MAGIC.some((m) => magic.subarray(0, m.length).equals(m));
  if (!isProgram) return `\n${path} is not a program (corrupt, or not a binary at all). ${rebuild}`;
  if (exit?.signal && CRASH_SIGNALS.has(exit.signal)) {
    return `\n${path} crashed (${exit.signal}); it may be truncated or built for another machine. ${rebuild}`;
  }
  return "";
}

/** ELF (Linux), Mach-O (macOS, both byte orders), and scripts. */
const PROGRAM_MAGIC = [
  Buffer.from([0x7f, 0x45, 0x4c, 0x46]),
  Buffer.from([0xcf, 0xfa, 0xed, 0xfe]),
  Buffer.from([0xfe, 0xed, 0xfa, 0xcf]),
  Buffer.from("#!"),
];
const CRASH_SIGNALS = new Set<string>(["SIGSEGV", "SIGBUS", "SIGILL", "SIGABRT", "SIGTRAP"]);
