import { escapeName } from "./escape.js";

/**
 * The CEL types Kubernetes declares for `self` and `oldSelf` from a structural schema
 * (apiextensions `model.SchemaDeclType`): objects with properties are object types whose fields
 * are the escaped property names, maps are `map(string, V)`, arrays `list(E)`, int-or-string and
 * preserve-unknown-fields values `dyn`. Used to type-check rules before a CRD is written.
 */

type Schema = Record<string, unknown>;

/** The CEL types with no parameters. */
type ScalarKind =
  | "int"
  | "uint"
  | "double"
  | "string"
  | "bool"
  | "bytes"
  | "null_type"
  | "timestamp"
  | "duration"
  | "type";

export type CelType =
  | { kind: "dyn" | ScalarKind }
  | { kind: "list"; elem: CelType }
  | { kind: "map"; key: CelType; value: CelType }
  | { kind: "object"; name: string; fields: Map<string, CelType> };

export const DYN: CelType = { kind: "dyn" };
export const scalar = (kind: ScalarKind): CelType => ({ kind });

const isObject = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** The declared type of values of `schema`; `resourceRoot` adds apiVersion, kind and metadata. */
export function typeOfSchema(schema: Schema | undefined, name = "self", resourceRoot = false): CelType {
  if (!schema || schema["x-kubernetes-int-or-string"]) return DYN;
  const embedded = resourceRoot || schema["x-kubernetes-embedded-resource"] === true;
  switch (schema.type) {
    case "integer":
      return scalar("int");
    case "number":
      return scalar("double");
    case "boolean":
      return scalar("bool");
    case "string":
      // duration and date-time strings are durations and timestamps on the server; not typed here.
      return schema.format === "byte" ? scalar("bytes") : schema.format ? DYN : scalar("string");
    case "array":
      return { kind: "list", elem: typeOfSchema(schema.items as Schema | undefined, `${name}.@idx`) };
    case "object":
      break;
    default:
      return DYN;
  }
  const properties = schema.properties as Record<string, Schema> | undefined;
  if (!properties && isObject(schema.additionalProperties))
    return {
      kind: "map",
      key: scalar("string"),
      value: typeOfSchema(schema.additionalProperties, `${name}.@elem`),
    };
  if (!properties && !embedded)
    return schema["x-kubernetes-preserve-unknown-fields"] ? DYN : { kind: "object", name, fields: new Map() };
  if (schema["x-kubernetes-preserve-unknown-fields"] && !properties) return DYN;
  const fields = new Map<string, CelType>();
  for (const [key, child] of Object.entries(properties ?? {})) {
    const escaped = escapeName(key);
    if (escaped !== undefined) fields.set(escaped, typeOfSchema(child, `${name}.${key}`));
  }
  if (embedded) {
    fields.set("apiVersion", scalar("string"));
    fields.set("kind", scalar("string"));
    fields.set("metadata", {
      kind: "object",
      name: `${name}.metadata`,
      fields: new Map([
        ["name", scalar("string")],
        ["generateName", scalar("string")],
      ]),
    });
  }
  return { kind: "object", name, fields };
}

/** cel-go's rendering of a type in messages: `int`, `list(string)`, `map(string, int)`, the object's name. */
export function typeString(t: CelType): string {
  switch (t.kind) {
    case "list":
      return `list(${typeString(t.elem)})`;
    case "map":
      return `map(${typeString(t.key)}, ${typeString(t.value)})`;
    case "object":
      return t.name;
    default:
      return t.kind;
  }
}
