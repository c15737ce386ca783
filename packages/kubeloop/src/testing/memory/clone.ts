/**
 * A deep copy of a JSON document (objects, arrays, strings, numbers, booleans, null). Objects here
 * are JSON: they come from and go to the wire. A plain walk is faster than a JSON round trip or
 * `structuredClone` for them; `undefined` properties are dropped, as JSON would.
 */
export function clone<T>(value: T): T {
  return copy(value) as T;
}

function copy(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copy(value[i]);
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    const child = (value as Record<string, unknown>)[key];
    if (child !== undefined) out[key] = copy(child);
  }
  return out;
}
