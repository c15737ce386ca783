import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/** The folder of the package-lock.json that governs `root`: its own, or its workspace's. */
export function lockRootOf(root: string): string {
  for (let dir = root; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package-lock.json"))) return dir;
    if (dirname(dir) === dir) return root;
  }
}
