import { isIP, prepareRules, UnsupportedRule } from "../../resources/internal.js";
import { clone } from "./clone.js";
import { validateComposition } from "./composition.js";
import { isEmbedded, pruneEmbedded, validateEmbedded } from "./embedded.js";
import type { FieldError } from "./errors.js";
import { NotEmulated } from "./errors.js";

/**
 * A custom resource's structural schema at work, as kube-apiserver applies it: unknown fields
 * pruned, defaults filled in, then validation with the server's messages. CEL rules
 * (`x-kubernetes-validations`) run in resources/cel; a rule using a part of CEL not emulated there
 * is refused when the CRD is served, naming the rule.
 */

type Schema = Record<string, unknown>;
type Json = unknown;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Refuses schemas with features not emulated, once, when the CRD is created. */
export function checkEmulated(schema: Schema, path = ""): void {
  try {
    prepareRules(schema, path);
  } catch (error) {
    if (error instanceof UnsupportedRule) throw new NotEmulated(error.message);
    throw error;
  }
}

/** Drops fields the schema does not know (pruning); returns the pruned value. */
export function prune(value: Json, schema: Schema | undefined): Json {
  if (isEmbedded(schema) && isObject(value) && schema?.["x-kubernetes-preserve-unknown-fields"]) {
    // Unknown fields stay, but metadata is ObjectMeta all the same.
    const { metadata: _metadata, ...rest } = value;
    const result: Record<string, unknown> = rest;
    pruneEmbedded(value, result);
    return result;
  }
  if (!schema || schema["x-kubernetes-preserve-unknown-fields"] || schema["x-kubernetes-int-or-string"])
    return value;
  if (Array.isArray(value)) {
    const items = schema.items as Schema | undefined;
    return value.map((v) => prune(v, items));
  }
  if (!isObject(value)) return value;
  const properties = schema.properties as Record<string, Schema> | undefined;
  const additional = schema.additionalProperties;
  const result: Record<string, unknown> = {};
  if (isEmbedded(schema)) pruneEmbedded(value, result);
  for (const [key, child] of Object.entries(value)) {
    // A null where the schema does not allow one is dropped (then defaulted), as the server does.
    if (child === null && properties?.[key] && !properties[key]?.nullable) continue;
    if (properties?.[key]) result[key] = prune(child, properties[key]);
    else if (isObject(additional)) result[key] = prune(child, additional as Schema);
    else if (additional === true) result[key] = child;
  }
  return result;
}

/** Fills in defaults where fields are missing (nested objects included), as the server does on every read and write. */
export function applyDefaults(value: Json, schema: Schema | undefined): Json {
  if (!schema) return value;
  if (Array.isArray(value)) {
    const items = schema.items as Schema | undefined;
    return value.map((v) => applyDefaults(v, items));
  }
  if (!isObject(value)) return value;
  const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
  for (const [key, child] of Object.entries(properties)) {
    if (value[key] === undefined && child.default !== undefined) value[key] = clone(child.default);
    if (value[key] !== undefined) value[key] = applyDefaults(value[key], child);
  }
  if (isObject(schema.additionalProperties))
    for (const key of Object.keys(value))
      if (!properties[key]) value[key] = applyDefaults(value[key], schema.additionalProperties as Schema);
  return value;
}

/** Go's %v rendering of a value in "Invalid value: …" messages. */
export function goValue(value: Json): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null || value === undefined) return "null";
  if (typeof value === "object") return `"${Array.isArray(value) ? "array" : "object"}"`;
  return String(value);
}

function typeOf(value: Json): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** Validates against the structural schema; the errors carry kube-apiserver's wording. */
export function validate(value: Json, schema: Schema | undefined, path: string, errors: FieldError[]): void {
  if (!schema) return;
  const where = path;
  if (value === null) {
    if (!schema.nullable && schema.type)
      errors.push({
        type: "FieldValueTypeInvalid",
        field: where,
        message: `Invalid value: "null": ${where} in body must be of type ${schema.type}: "null"`,
      });
    return;
  }
  validateComposition(value, schema, where, errors, validate);
  if (schema["x-kubernetes-int-or-string"]) {
    if (typeof value !== "string" && !Number.isInteger(value))
      errors.push({
        type: "FieldValueTypeInvalid",
        field: where,
        message: `Invalid value: ${goValue(value)}: ${where} in body must be of type integer,string: ${JSON.stringify(typeOf(value))}`,
      });
    // A string is still checked against the string keywords (a Quantity's pattern).
    if (typeof value === "string") validateString(value, schema, where, errors);
    return;
  }
  const type = schema.type as string | undefined;
  const actual = typeOf(value);
  if (type && !(actual === type || (type === "number" && actual === "integer"))) {
    errors.push({
      type: "FieldValueTypeInvalid",
      field: where,
      message: `Invalid value: ${JSON.stringify(actual)}: ${where} in body must be of type ${type}: ${JSON.stringify(actual)}`,
    });
    // A fractional number for an integer is also reported by the format check, with no field.
    if (type === "integer" && actual === "number")
      errors.push({
        type: "FieldValueInvalid",
        field: "<nil>",
        message: `Invalid value: "": Checked value must be of type integer (default format) in ${where.replace(/^\./, "")}`,
      });
    return;
  }
  if (schema.enum && !(schema.enum as Json[]).some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    const supported = (schema.enum as Json[]).map((e) => JSON.stringify(e)).join(", ");
    errors.push({
      type: "FieldValueNotSupported",
      field: where,
      message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${supported}`,
    });
  }
  if (typeof value === "number") {
    const { minimum, maximum } = schema as { minimum?: number; maximum?: number };
    if (minimum !== undefined && (schema.exclusiveMinimum ? value <= minimum : value < minimum))
      errors.push({
        type: "FieldValueInvalid",
        field: where,
        message: `Invalid value: ${value}: ${where} in body should be greater than ${schema.exclusiveMinimum ? "" : "or equal to "}${minimum}`,
      });
    if (maximum !== undefined && (schema.exclusiveMaximum ? value >= maximum : value > maximum))
      errors.push({
        type: "FieldValueInvalid",
        field: where,
        message: `Invalid value: ${value}: ${where} in body should be less than ${schema.exclusiveMaximum ? "" : "or equal to "}${maximum}`,
      });
    if (schema.multipleOf !== undefined && value % (schema.multipleOf as number) !== 0)
      errors.push({
        type: "FieldValueInvalid",
        field: where,
        message: `Invalid value: ${value}: ${where} in body should be a multiple of ${schema.multipleOf}`,
      });
  }
  if (typeof value === "string") {
    validateString(value, schema, where, errors);
    validateFormat(value, schema, where, errors);
  }
  if (Array.isArray(value)) validateArray(value, schema, where, errors);
  if (isObject(value)) {
    if (isEmbedded(schema)) validateEmbedded(value, where, errors);
    validateObject(value, schema, where, errors);
  }
}

/** required, then each property (or map value). */
function validateObject(
  value: Record<string, unknown>,
  schema: Schema,
  where: string,
  errors: FieldError[],
): void {
  const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
  for (const name of (schema.required as string[] | undefined) ?? [])
    if (value[name] === undefined)
      errors.push({ type: "FieldValueRequired", field: `${where}.${name}`, message: "Required value" });
  for (const [name, child] of Object.entries(value)) {
    const childSchema =
      properties[name] ??
      (isObject(schema.additionalProperties) ? (schema.additionalProperties as Schema) : undefined);
    validate(child, childSchema, `${where}.${name}`, errors);
  }
}

/** minItems, maxItems, list-type duplicates, then each item. */
function validateArray(value: Json[], schema: Schema, where: string, errors: FieldError[]): void {
  if (schema.minItems !== undefined && value.length < (schema.minItems as number))
    errors.push({
      type: "FieldValueInvalid",
      field: where,
      message: `Invalid value: ${value.length}: ${where} in body should have at least ${schema.minItems} items`,
    });
  if (schema.maxItems !== undefined && value.length > (schema.maxItems as number))
    errors.push({
      type: "FieldValueTooMany",
      field: where,
      message: `Too many: ${value.length}: must have at most ${schema.maxItems} items`,
    });
  validateListType(value, schema, where, errors);
  for (const [i, item] of value.entries())
    validate(item, schema.items as Schema | undefined, `${where}[${i}]`, errors);
}

/**
 * `x-kubernetes-list-type: map` and `set`: an item whose keys (or, in a set, whose value) an
 * earlier item already has is a Duplicate at its index, as apiextensions' list-type validation
 * reports it (the keys shown as a JSON object).
 */
function validateListType(value: Json[], schema: Schema, where: string, errors: FieldError[]): void {
  const type = schema["x-kubernetes-list-type"];
  if (type !== "map" && type !== "set") return;
  const keys = (schema["x-kubernetes-list-map-keys"] as string[] | undefined) ?? [];
  const seen = new Set<string>();
  for (const [i, item] of value.entries()) {
    const identity =
      type === "map" && isObject(item)
        ? JSON.stringify(
            Object.fromEntries(
              keys
                .filter((k) => item[k] !== undefined)
                .sort()
                .map((k) => [k, item[k]]),
            ),
          )
        : JSON.stringify(item);
    if (seen.has(identity))
      errors.push({
        type: "FieldValueDuplicate",
        field: `${where}[${i}]`,
        message: `Duplicate value: ${identity}`,
      });
    seen.add(identity);
  }
}

/**
 * The string formats the server checks that kubeloop checks too (the others pass unchecked):
 * `ipv4` and `ipv6`, as Go's net.ParseIP with a dot or a colon in the text.
 */
const FORMATS: Record<string, (value: string) => boolean> = {
  ipv4: (v) => isIP(v) && v.includes("."),
  ipv6: (v) => isIP(v) && v.includes(":"),
};

function validateFormat(value: string, schema: Schema, where: string, errors: FieldError[]): void {
  const check = FORMATS[schema.format as string];
  if (check && !check(value))
    errors.push({
      type: "FieldValueTypeInvalid",
      field: where,
      message: `Invalid value: ${JSON.stringify(value)}: ${where} in body must be of type ${schema.format}: ${JSON.stringify(value)}`,
    });
}

/** maxLength, then minLength, then pattern: like kube-openapi, only the first that fails is reported. */
function validateString(value: string, schema: Schema, where: string, errors: FieldError[]): void {
  const length = [...value].length;
  if (schema.maxLength !== undefined && length > (schema.maxLength as number))
    errors.push({
      type: "FieldValueTooLong",
      field: where,
      message: `Too long: may not be more than ${schema.maxLength} bytes`,
    });
  else if (schema.minLength !== undefined && length < (schema.minLength as number))
    errors.push({
      type: "FieldValueInvalid",
      field: where,
      message: `Invalid value: ${JSON.stringify(value)}: ${where} in body should be at least ${schema.minLength} chars long`,
    });
  else if (schema.pattern !== undefined && !new RegExp(schema.pattern as string, "u").test(value))
    errors.push({
      type: "FieldValueInvalid",
      field: where,
      message: `Invalid value: ${JSON.stringify(value)}: ${where} in body should match '${schema.pattern}'`,
    });
}

/** The schema of the object's top-level field, e.g. `spec`, for status-only work. */
export function propertyOf(schema: Schema | undefined, name: string): Schema | undefined {
  return (schema?.properties as Record<string, Schema> | undefined)?.[name];
}
