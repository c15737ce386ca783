/**
 * The API server's wording for a rule that failed (k8s.io/apiextensions-apiserver
 * `schema/cel/validation.go`): the detail (message, messageExpression, or `failed rule: …`), the
 * error kind from `reason`, and cel-go's words for runtime errors in place of the evaluator's.
 */

export type FieldErrorType =
  | "FieldValueInvalid"
  | "FieldValueRequired"
  | "FieldValueForbidden"
  | "FieldValueDuplicate";

/** One failed rule, as a cause of the 422 the API server returns. */
export interface RuleError {
  type: FieldErrorType;
  /** Where: `spec.rules[0]`, or `<nil>` for a rule at the root. */
  field: string;
  /** The cause's message: `Invalid value: "http": must be a port number`. */
  message: string;
}

export interface RuleSource {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

/** `message`, else the rule: what the server names a rule by in errors. */
export function ruleErrorString(rule: RuleSource): string {
  return rule.message ? rule.message.trim() : rule.rule.trim();
}

export function ruleMessageOrDefault(rule: RuleSource): string {
  return rule.message ? rule.message.trim() : `failed rule: ${ruleErrorString(rule)}`;
}

/**
 * How field.Error shows the value of a failed rule in 1.36: a string quoted, a number or bool as
 * it is, an object or a list not at all.
 */
function shown(value: unknown): string | undefined {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
}

/** field.Error for a failed rule, by `reason` (Invalid when none); `value` is the value the rule saw. */
export function errorForReason(
  field: string,
  value: unknown,
  detail: string,
  reason: string | undefined,
): RuleError {
  const v = shown(value);
  switch (reason) {
    case "FieldValueForbidden":
      return { type: reason, field, message: `Forbidden: ${detail}` };
    case "FieldValueRequired":
      return { type: reason, field, message: `Required value: ${detail}` };
    case "FieldValueDuplicate":
      return { type: reason, field, message: v === undefined ? "Duplicate value" : `Duplicate value: ${v}` };
    default:
      return {
        type: "FieldValueInvalid",
        field,
        message: v === undefined ? `Invalid value: ${detail}` : `Invalid value: ${v}: ${detail}`,
      };
  }
}

/** An evaluation error: the server names the schema type (`"object"`) as the value. */
export function invalidValue(field: string, type: string, detail: string): RuleError {
  return { type: "FieldValueInvalid", field, message: `Invalid value: ${JSON.stringify(type)}: ${detail}` };
}

/** The evaluator's runtime error in cel-go's words (what the server shows). */
export function celGoError(message: string): string {
  const field = /^field not found: (.*)$/.exec(message);
  if (field) return `no such key: ${field[1]}`;
  const key = /^key not found: (.*)$/.exec(message);
  if (key) return `no such key: ${key[1]}`;
  const index = /^index (-?\d+) out of bounds/.exec(message);
  if (index) return `index out of bounds: ${index[1]}`;
  if (/divide by zero/.test(message)) return "division by zero";
  if (/modulus by zero|modulo by zero/.test(message)) return "modulus by zero";
  return message;
}

/** A rule's fieldPath (`.spec.x`, `.m['a.b']`) as the path segment the server appends. */
export function normaliseFieldPath(fieldPath: string): string {
  const parts: string[] = [];
  const token = /\.([^.[\]]+)|\['((?:[^'\\]|\\.)*)'\]/gy;
  let match = token.exec(fieldPath);
  while (match) {
    parts.push(match[1] ?? (match[2] ?? "").replace(/\\(.)/g, "$1"));
    match = token.exec(fieldPath);
  }
  return parts.join(".");
}
