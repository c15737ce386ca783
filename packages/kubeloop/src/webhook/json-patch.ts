/**
 * The JSON Patch (RFC 6902) that turns `before` into `after`: what a defaulting webhook returns.
 * Objects are compared key by key; arrays that differ are replaced whole (simpler for the API
 * server and reviewers than index-by-index edits, and what controller-runtime's defaulter does too).
 */

/** One JSON Patch operation, of the kinds `jsonPatch` writes. */
export type PatchOperation =
  | { op: "add" | "replace"; path: string; value: unknown }
  | { op: "remove"; path: string };

/** The JSON Patch (RFC 6902) from `before` to `after`; see above for how arrays are handled. */
export function jsonPatch(before: unknown, after: unknown, path = ""): PatchOperation[] {
  if (isObject(before) && isObject(after)) {
    const operations: PatchOperation[] = [];
    for (const key of Object.keys(before)) {
      if (!(key in after) || after[key] === undefined) {
        if (before[key] !== undefined)
          operations.push({ op: "remove", path: `${path}/${escapePointer(key)}` });
      }
    }
    for (const [key, value] of Object.entries(after)) {
      if (value === undefined) continue;
      const child = `${path}/${escapePointer(key)}`;
      if (!(key in before) || before[key] === undefined) operations.push({ op: "add", path: child, value });
      else operations.push(...jsonPatch(before[key], value, child));
    }
    return operations;
  }
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  return [{ op: "replace", path, value: after }];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 6901: `~` → `~0`, `/` → `~1`. */
function escapePointer(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}
