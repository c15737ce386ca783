import type { FieldError } from "./errors.js";

/**
 * `allOf`, `anyOf`, `oneOf` and `not` in a CRD schema, as kube-apiserver's OpenAPI validator
 * (kube-openapi's fork of go-openapi's `schemaPropsValidator`) applies them: each branch validates
 * the same value; a failure is a composite error with no field (`<nil>`) naming the path, followed
 * by the errors of the branch that came closest (the most properties it accepted, the first on a
 * tie), as the server picks its "best failures".
 */

type Schema = Record<string, unknown>;
type Validate = (value: unknown, schema: Schema | undefined, path: string, errors: FieldError[]) => void;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function composite(path: string, text: string): FieldError {
  return {
    type: "FieldValueInvalid",
    field: "<nil>",
    message: `Invalid value: "": ${JSON.stringify(path.replace(/^\./, ""))} ${text}`,
  };
}

interface Branch {
  errors: FieldError[];
  /** How many of the branch's properties the value satisfied: go-openapi's MatchCount, roughly. */
  matched: number;
}

function run(value: unknown, branch: Schema, path: string, validate: Validate): Branch {
  const errors: FieldError[] = [];
  validate(value, branch, path, errors);
  let matched = 0;
  if (isObject(value))
    for (const [name, child] of Object.entries(
      (branch.properties as Record<string, Schema> | undefined) ?? {},
    )) {
      if (value[name] === undefined) continue;
      const own: FieldError[] = [];
      validate(value[name], child, `${path}.${name}`, own);
      if (own.length === 0) matched++;
    }
  return { errors, matched };
}

/** The closest failing branch: most matches, the first on a tie. */
function best(branches: Branch[]): Branch | undefined {
  return branches.reduce<Branch | undefined>(
    (b, x) => (b === undefined || x.matched > b.matched ? x : b),
    undefined,
  );
}

/** Adds the errors of `schema`'s allOf / anyOf / oneOf / not for `value` at `path`. */
export function validateComposition(
  value: unknown,
  schema: Schema,
  path: string,
  errors: FieldError[],
  validate: Validate,
): void {
  const allOf = schema.allOf as Schema[] | undefined;
  if (allOf?.length) {
    const results = allOf.map((b) => run(value, b, path, validate));
    const valid = results.filter((r) => r.errors.length === 0).length;
    for (const r of results) errors.push(...r.errors);
    if (valid !== allOf.length)
      errors.push(
        composite(path, `must validate all the schemas (allOf)${valid === 0 ? ". None validated" : ""}`),
      );
  }
  const anyOf = schema.anyOf as Schema[] | undefined;
  if (anyOf?.length && !isIntOrStringAnyOf(schema)) {
    const results = anyOf.map((b) => run(value, b, path, validate));
    if (!results.some((r) => r.errors.length === 0)) {
      errors.push(composite(path, "must validate at least one schema (anyOf)"));
      errors.push(...(best(results)?.errors ?? []));
    }
  }
  const oneOf = schema.oneOf as Schema[] | undefined;
  if (oneOf?.length) {
    const results = oneOf.map((b) => run(value, b, path, validate));
    const valid = results.filter((r) => r.errors.length === 0).length;
    if (valid !== 1) {
      errors.push(
        composite(
          path,
          `must validate one and only one schema (oneOf). ${valid === 0 ? "Found none valid" : `Found ${valid} valid alternatives`}`,
        ),
      );
      if (valid === 0) errors.push(...(best(results)?.errors ?? []));
    }
  }
  const not = schema.not as Schema | undefined;
  if (isObject(not) && run(value, not, path, validate).errors.length === 0)
    errors.push(composite(path, "must not validate the schema (not)"));
}

/**
 * `anyOf: [{type: integer}, {type: string}]` beside `x-kubernetes-int-or-string`: what kubebuilder
 * writes for every IntOrString and Quantity field. It says what int-or-string says, and is left to
 * the int-or-string check.
 */
export function isIntOrStringAnyOf(schema: Schema): boolean {
  const anyOf = schema.anyOf as Schema[];
  return (
    schema["x-kubernetes-int-or-string"] === true &&
    anyOf.length === 2 &&
    anyOf.every((s) => Object.keys(s).length === 1) &&
    anyOf
      .map((s) => s.type)
      .sort()
      .join(",") === "integer,string"
  );
}
