import { checkExpression, TypeCheckError } from "./check.js";
import { CelCompileError, CelUnsupported, compileExpression } from "./compile.js";
import type { RuleSource } from "./messages.js";
import { type CelType, typeOfSchema } from "./types.js";

/**
 * Every `x-kubernetes-validations` rule of a schema compiled and type-checked against the types the
 * schema declares for `self` and `oldSelf`, as kube-apiserver does when the CRD is written; what
 * `kubeloop generate` runs so that a rule that would not compile fails before any cluster sees it.
 */

type Schema = Record<string, unknown>;
const isObject = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

export interface RuleProblem {
  /** Where the rule stands: `spec.ports[*]`, or `<root>`. */
  path: string;
  rule: string;
  /** cel-go's reason: `undefined field 'prot'`, `found no matching overload for '_==_' …`. */
  reason: string;
}

function checkOne(
  source: string,
  variables: Record<string, CelType>,
  want: "bool" | "string",
): string | undefined {
  try {
    const compiled = compileExpression(source);
    const type = checkExpression(compiled.ast, variables);
    if (type.kind !== "dyn" && type.kind !== want)
      return want === "bool"
        ? "cel expression must evaluate to a bool"
        : "messageExpression must evaluate to a string";
    return undefined;
  } catch (error) {
    if (error instanceof CelUnsupported) return undefined;
    if (error instanceof CelCompileError || error instanceof TypeCheckError) return error.message;
    throw error;
  }
}

/** Type-checks every rule at and below `schema`; returns the problems (empty when all compile). */
export function checkRules(schema: Schema, path = "", resourceRoot = true): RuleProblem[] {
  const problems: RuleProblem[] = [];
  const self = typeOfSchema(schema, "self", resourceRoot);
  for (const rule of (schema["x-kubernetes-validations"] as RuleSource[] | undefined) ?? []) {
    const variables = { self, oldSelf: self };
    const where = path || "<root>";
    const reason = checkOne(rule.rule, variables, "bool");
    if (reason) problems.push({ path: where, rule: rule.rule, reason });
    if (rule.messageExpression) {
      const messageReason = checkOne(rule.messageExpression, variables, "string");
      if (messageReason) problems.push({ path: where, rule: rule.messageExpression, reason: messageReason });
    }
  }
  for (const [name, child] of Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {}))
    problems.push(...checkRules(child, path ? `${path}.${name}` : name, false));
  if (isObject(schema.items)) problems.push(...checkRules(schema.items, `${path}[*]`, false));
  if (isObject(schema.additionalProperties))
    problems.push(...checkRules(schema.additionalProperties, `${path}[*]`, false));
  return problems;
}
