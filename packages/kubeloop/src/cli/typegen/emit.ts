/**
 * OpenAPI v3 / structural schemas → TypeScript declarations: the one writer behind the built-in
 * kinds' types (`npm run generate:k8s`) and `kubeloop generate types` for any CRD. Objects with
 * properties become named interfaces (nested ones named after their parent and field, as kopium
 * does), everything else a type expression.
 */

/** The schema keywords the writer reads. */
export interface Schema {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  required?: string[];
  enum?: unknown[];
  $ref?: string;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  nullable?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
}

export interface WriterOptions {
  /** The type a `$ref` names (and whatever import that needs). */
  ref?: (ref: string) => string;
  /** String enums as unions of literals (CRDs); off for built-ins, which `kubernetes-types` typed as string. */
  enums?: boolean;
  /** Extra TSDoc lines for a property (e.g. `@since 1.35`). */
  propertyTags?: (typeName: string, property: string) => string[];
  /**
   * The type of an object whose schema names no field (default `{ [key: string]: unknown }`); the
   * built-ins use `object`, which kubernetes-types' empty interfaces (FieldsV1, RawExtension) are
   * assignable to, both ways.
   */
  opaqueObject?: string;
  /** The type of a root's `metadata` when its schema says only `type: object` (CRDs). */
  metadataType?: string;
}

/** A TSDoc block, `*\/` escaped, or "" when there is nothing to say. */
export function doc(lines: (string | undefined)[], indent = ""): string {
  const text = lines
    .filter((l): l is string => !!l)
    .join("\n\n")
    .replaceAll("*/", "*\\/")
    .trim();
  if (!text) return "";
  const body = text.split("\n").map((l) => `${indent} *${l ? ` ${l}` : ""}`);
  return body.length === 1 ? `${indent}/** ${text} */\n` : `${indent}/**\n${body.join("\n")}\n${indent} */\n`;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (name: string) => (IDENTIFIER.test(name) ? name : JSON.stringify(name));
/** `web-hooks.v2` → `WebHooksV2` */
export const pascal = (name: string): string =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((p) => p[0]?.toUpperCase() + p.slice(1))
    .join("");

export class TypeWriter {
  /** Declarations in the order written: each `export interface` or `export type`. */
  readonly declarations: string[] = [];
  private readonly taken = new Set<string>();

  constructor(private readonly options: WriterOptions = {}) {}

  /** Reserves a name (one declared elsewhere), so hoisted types do not take it. */
  reserve(name: string): void {
    this.taken.add(name);
  }

  /**
   * Declares `name` for `schema`: an interface when it has properties, a type alias otherwise.
   * `literals` pins properties to one value (a root's `apiVersion` and `kind`); `tags` adds TSDoc.
   */
  declare(name: string, schema: Schema, literals: Record<string, string> = {}, tags: string[] = []): string {
    this.taken.add(name);
    const head = doc([schema.description, ...tags]);
    // The slot is taken first: a type comes before the nested types declared while writing it.
    const slot = this.declarations.push("") - 1;
    if (!schema.properties || Object.keys(schema.properties).length === 0) {
      this.declarations[slot] = `${head}export type ${name} = ${this.expression(schema, name, true)};\n`;
      return name;
    }
    const required = new Set(schema.required ?? []);
    const lines: string[] = [];
    for (const [field, property] of Object.entries(schema.properties)) {
      const literal = literals[field];
      const type =
        literal !== undefined
          ? JSON.stringify(literal)
          : field === "metadata" && this.options.metadataType && !property.$ref && !property.properties
            ? this.options.metadataType
            : this.expression(property, `${name}${pascal(field)}`);
      const extra = this.options.propertyTags?.(name, field) ?? [];
      const optional = required.has(field) ? "" : "?";
      lines.push(`${doc([property.description, ...extra], "  ")}  ${key(field)}${optional}: ${type};`);
    }
    if (schema["x-kubernetes-preserve-unknown-fields"]) lines.push("  [key: string]: unknown;");
    this.declarations[slot] = `${head}export interface ${name} {\n${lines.join("\n")}\n}\n`;
    return name;
  }

  /** The type of a schema; a nested object with properties is declared as `hint` (made unique). */
  expression(schema: Schema, hint: string, root = false): string {
    const nullable = schema.nullable ? " | null" : "";
    return `${this.bare(schema, hint, root)}${nullable}`;
  }

  private bare(schema: Schema, hint: string, root: boolean): string {
    if (schema.$ref) return this.ref(schema.$ref);
    if (schema.allOf?.length) {
      const parts = schema.allOf.map((s) => this.expression(s, hint));
      return parts.length === 1 ? (parts[0] ?? "unknown") : parts.map(group).join(" & ");
    }
    if (schema["x-kubernetes-int-or-string"] || schema.format === "int-or-string") return "number | string";
    if (this.options.enums && schema.enum?.length && schema.enum.every((v) => v !== undefined))
      return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
    switch (schema.type) {
      case "string":
        return "string";
      case "integer":
      case "number":
        return "number";
      case "boolean":
        return "boolean";
      case "array":
        return `Array<${schema.items ? this.expression(schema.items, hint) : "unknown"}>`;
      case "object":
        return this.object(schema, hint, root);
    }
    const alternatives = schema.oneOf ?? schema.anyOf;
    if (alternatives?.every((s) => s.type || s.$ref))
      return [...new Set(alternatives.map((s) => this.expression(s, hint)))].map(group).join(" | ");
    if (schema.properties) return this.object(schema, hint, root);
    return "unknown";
  }

  private object(schema: Schema, hint: string, root: boolean): string {
    if (schema.properties && Object.keys(schema.properties).length && !root)
      return this.declare(this.unique(hint), schema);
    const extra = schema.additionalProperties;
    if (typeof extra === "object") return `{ [key: string]: ${this.expression(extra, `${hint}Value`)} }`;
    if (extra === undefined && !schema["x-kubernetes-preserve-unknown-fields"] && this.options.opaqueObject)
      return this.options.opaqueObject;
    return "{ [key: string]: unknown }";
  }

  private ref(ref: string): string {
    const name = this.options.ref?.(ref);
    if (!name) throw new Error(`no type for $ref ${ref}`);
    return name;
  }

  private unique(name: string): string {
    let candidate = name;
    for (let n = 2; this.taken.has(candidate); n++) candidate = `${name}${n}`;
    this.taken.add(candidate);
    return candidate;
  }
}

const group = (type: string) => (type.includes(" ") && !type.startsWith("{") ? `(${type})` : type);
