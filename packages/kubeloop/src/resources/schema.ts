/**
 * TypeBox (JSON Schema, draft 2020-12 style) → the structural OpenAPI v3.0 schema a
 * CustomResourceDefinition requires. Nothing is dropped silently: every keyword either maps to its
 * Kubernetes form or is refused with the path where it stands.
 *
 * | TypeBox | CRD schema |
 * |---|---|
 * | `Type.Integer`, `Type.Number` with bounds | `type`, `minimum`/`maximum`; `exclusiveMinimum: 5` → `minimum: 5, exclusiveMinimum: true` |
 * | `Type.String` with pattern/format/lengths | the same keywords |
 * | `Type.Union` of literals, `Type.Enum` | `type` + `enum` |
 * | `Type.Union([X, Type.Null()])` | X with `nullable: true` |
 * | `Type.Record(Type.String(), X)` | `type: object` + `additionalProperties: X` (a map) |
 * | `Type.Optional`, or a `default` | left out of `required` (the server fills a default in before validating) |
 * | `default`, `description`, `x-kubernetes-*` (CEL validations, list types, int-or-string, embedded resources, preserve-unknown-fields) | kept as they are |
 */

export type JsonSchema = Record<string, unknown>;

/** Keywords a structural schema keeps as they are. */
const PASS_THROUGH = new Set([
  "type",
  "description",
  "default",
  "format",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "multipleOf",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "enum",
  "nullable",
  "example",
  "title",
]);

/** A TypeBox schema that cannot become a structural CRD schema; the message names where and why. */
export class SchemaError extends Error {
  override name = "SchemaError";
}

/** Converts one TypeBox schema; `path` names where it stands, for errors. */
export function toStructuralSchema(schema: JsonSchema, path = "spec"): JsonSchema {
  const result: JsonSchema = {};
  const anyOf = schema.anyOf as JsonSchema[] | undefined;
  if (anyOf) return fromUnion(schema, anyOf, path);
  for (const [key, value] of Object.entries(schema)) {
    if (PASS_THROUGH.has(key) || key.startsWith("x-kubernetes-")) {
      result[key] = value;
    } else if (key === "const") {
      result.enum = [value];
    } else if (key === "exclusiveMinimum" || key === "exclusiveMaximum") {
      // JSON Schema 2019+ puts the bound here; OpenAPI v3.0 (what CRDs speak) uses a boolean flag.
      if (typeof value === "number") {
        result[key === "exclusiveMinimum" ? "minimum" : "maximum"] = value;
        result[key] = true;
      } else {
        result[key] = value;
      }
    } else if (key === "properties") {
      const properties: Record<string, JsonSchema> = {};
      for (const [name, property] of Object.entries(value as Record<string, JsonSchema>)) {
        properties[name] = toStructuralSchema(property, `${path}.${name}`);
      }
      result.properties = properties;
    } else if (key === "required") {
      // A field with a default is not required of the writer: the API server fills it in before
      // validating. Listing it would make clients that validate against the published schema
      // (kubectl's client-side check, editors, OLM's form) refuse what the server accepts.
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const required = (value as string[]).filter((name) => properties[name]?.default === undefined);
      if (required.length > 0) result.required = required;
    } else if (key === "items") {
      result.items = toStructuralSchema(value as JsonSchema, `${path}[*]`);
    } else if (key === "patternProperties") {
      const patterns = Object.entries(value as Record<string, JsonSchema>);
      if (patterns.length !== 1 || !["^.*$", "^(.*)$"].includes(patterns[0]?.[0] ?? "")) {
        throw new SchemaError(
          `${path}: only Type.Record(Type.String(), …) maps are supported, not pattern properties`,
        );
      }
      result.additionalProperties = toStructuralSchema(patterns[0]?.[1] as JsonSchema, `${path}[*]`);
    } else if (key === "additionalProperties") {
      // `false` is what a closed Type.Object says; structural schemas prune unknown fields anyway.
      if (typeof value === "object")
        result.additionalProperties = toStructuralSchema(value as JsonSchema, `${path}[*]`);
    } else if (key === "uniqueItems") {
      if (value) result["x-kubernetes-list-type"] ??= "set";
    } else if (key === "$id" || key === "$schema" || key === "examples") {
      // Identifiers and examples carry no validation.
    } else {
      throw new SchemaError(`${path}: the JSON Schema keyword "${key}" has no CRD equivalent`);
    }
  }
  if (result.enum && !result.type) result.type = typeOfValues(result.enum as unknown[], path);
  if (
    !result.type &&
    !result["x-kubernetes-int-or-string"] &&
    !result["x-kubernetes-preserve-unknown-fields"]
  ) {
    throw new SchemaError(
      `${path}: a structural schema needs a type (use Type.Unknown() only with x-kubernetes-preserve-unknown-fields)`,
    );
  }
  return result;
}

function fromUnion(schema: JsonSchema, members: JsonSchema[], path: string): JsonSchema {
  const { anyOf: _ignored, ...rest } = schema;
  const nonNull = members.filter((m) => m.type !== "null");
  const nullable = nonNull.length < members.length;
  let merged: JsonSchema;
  if (nonNull.length === 1) {
    merged = toStructuralSchema(nonNull[0] as JsonSchema, path);
  } else if (nonNull.every((m) => "const" in m)) {
    const values = nonNull.map((m) => m.const);
    merged = { type: typeOfValues(values, path), enum: values };
  } else if (isIntOrString(nonNull)) {
    merged = { "x-kubernetes-int-or-string": true };
  } else {
    throw new SchemaError(
      `${path}: unions other than literals, X | null and integer | string have no structural CRD form`,
    );
  }
  const own = Object.keys(rest).length > 0 ? toStructuralSchema({ type: merged.type, ...rest }, path) : {};
  return { ...merged, ...own, ...(nullable ? { nullable: true } : {}) };
}

function isIntOrString(members: JsonSchema[]): boolean {
  const types = members.map((m) => m.type).sort();
  return types.length === 2 && types[0] === "integer" && types[1] === "string";
}

function typeOfValues(values: unknown[], path: string): string {
  const types = new Set(values.map((v) => (Number.isInteger(v) ? "integer" : typeof v)));
  if (types.size !== 1) throw new SchemaError(`${path}: enum values must all be of one type`);
  const [type] = types;
  return type === "number" ? "number" : (type as string);
}
