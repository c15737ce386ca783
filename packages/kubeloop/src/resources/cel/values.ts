import { celList, celMap } from "@bufbuild/cel";
import { escapeName } from "./escape.js";

/**
 * A JSON value and its structural schema → the value a CEL rule sees, with the types Kubernetes
 * gives it: `integer` fields are CEL ints (bigint), `number` fields doubles, objects with
 * `properties` keep only the declared fields under their escaped names (unknown ones are not
 * there), maps (`additionalProperties`) keep their keys, int-or-string is an int or a string, and
 * a string with `format: byte` is bytes. The root of a resource (and an embedded resource) sees
 * `apiVersion`, `kind` and `metadata.name` / `metadata.generateName` only.
 *
 * Lists and maps are built as the evaluator's own CelList and CelMap (it would otherwise rebuild a
 * map from a plain object on every access), and a value converted once in a validation is reused
 * by the rules of the nodes above and below it (`memo`): a rule on `spec` and a rule on
 * `spec.rules[0]` see the same converted subtree.
 */

/** Converted values of one validation pass, by the JSON value they came from. */
export type Memo = WeakMap<object, unknown>;

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A value whose schema says nothing (preserve-unknown-fields): ints where JSON has whole numbers. */
function untyped(value: unknown): unknown {
  if (typeof value === "number") return Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return celList(value.map(untyped) as never);
  if (isObject(value))
    return celMap(new Map(Object.entries(value).map(([k, v]) => [k, untyped(v)])) as never);
  return value;
}

function metaOf(value: Record<string, unknown>): Record<string, unknown> {
  const meta = isObject(value.metadata) ? value.metadata : {};
  const out: Record<string, unknown> = {};
  if (typeof meta.name === "string") out.name = meta.name;
  if (typeof meta.generateName === "string") out.generateName = meta.generateName;
  return out;
}

/** Converts `value` as `schema` types it; `resourceRoot` adds the type and object metadata fields. */
export function toCel(
  value: unknown,
  schema: Schema | undefined,
  resourceRoot = false,
  memo?: Memo,
): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value !== "object") return convert(value, schema, resourceRoot, memo);
  const known = memo?.get(value);
  if (known !== undefined) return known;
  const converted = convert(value, schema, resourceRoot, memo);
  memo?.set(value, converted);
  return converted;
}

function convert(
  value: unknown,
  schema: Schema | undefined,
  resourceRoot: boolean,
  memo: Memo | undefined,
): unknown {
  if (!schema) return untyped(value);
  if (schema["x-kubernetes-int-or-string"])
    return typeof value === "number" && Number.isInteger(value) ? BigInt(value) : value;
  const type = schema.type as string | undefined;
  if (type === "integer" && typeof value === "number") return BigInt(Math.trunc(value));
  if (type === "number" && typeof value === "number") return value;
  if (type === "string" && typeof value === "string" && schema.format === "byte")
    return new Uint8Array(Buffer.from(value, "base64"));
  if (Array.isArray(value))
    return celList(value.map((v) => toCel(v, schema.items as Schema | undefined, false, memo)) as never);
  if (!isObject(value)) return value;
  const properties = schema.properties as Record<string, Schema> | undefined;
  const additional = schema.additionalProperties;
  const embedded = resourceRoot || schema["x-kubernetes-embedded-resource"] === true;
  const out = new Map<string, unknown>();
  if (properties) {
    for (const [key, child] of Object.entries(value)) {
      const childSchema = properties[key];
      const name = escapeName(key);
      if (childSchema && name !== undefined) out.set(name, toCel(child, childSchema, false, memo));
    }
  } else if (isObject(additional)) {
    for (const [key, child] of Object.entries(value)) out.set(key, toCel(child, additional, false, memo));
  } else if (schema["x-kubernetes-preserve-unknown-fields"]) {
    for (const [key, child] of Object.entries(value)) {
      const name = escapeName(key);
      if (name !== undefined) out.set(name, untyped(child));
    }
  }
  if (embedded) {
    if (typeof value.apiVersion === "string") out.set("apiVersion", value.apiVersion);
    if (typeof value.kind === "string") out.set("kind", value.kind);
    // An embedded resource may have no metadata: then a rule reading it fails, as on the server.
    if (isObject(value.metadata))
      out.set("metadata", celMap(new Map(Object.entries(metaOf(value))) as never));
  }
  return celMap(out as never);
}
