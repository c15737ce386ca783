import { isCelError } from "@bufbuild/cel";
import { CelCompileError, CelUnsupported, type CompiledExpression, compileExpression } from "./compile.js";
import {
  celGoError,
  errorForReason,
  invalidValue,
  normaliseFieldPath,
  type RuleError,
  type RuleSource,
  ruleErrorString,
  ruleMessageOrDefault,
} from "./messages.js";
import { type Memo, toCel } from "./values.js";

/**
 * `x-kubernetes-validations` evaluated as kube-apiserver 1.36 does (apiextensions-apiserver
 * `schema/cel/validation.go`): every rule on every non-null value its schema node covers, with
 * `self` the value there and, for a transition rule (one that reads `oldSelf`), `oldSelf` the old
 * value at the same place when there is one (object fields and map values by key, items of
 * `x-kubernetes-list-type: map` lists by their keys; elsewhere a transition rule is skipped,
 * unless `optionalOldSelf`). On an update, a failed rule that does not read `oldSelf` is ratcheted
 * (dropped) when its value, or its nearest correlatable ancestor, is unchanged.
 */

type Schema = Record<string, unknown>;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

interface CompiledRule {
  source: RuleSource;
  rule: CompiledExpression;
  message?: CompiledExpression;
}

const compiledRules = new WeakMap<Schema, CompiledRule[]>();

/** A rule that cannot be evaluated here: the memory server refuses the CRD naming it. */
export class UnsupportedRule extends Error {
  override name = "UnsupportedRule";
  constructor(
    readonly path: string,
    readonly rule: string,
    readonly reason: string,
  ) {
    super(`the CEL rule ${JSON.stringify(rule)} at ${path || "<root>"} (it uses ${reason})`);
  }
}

function rulesOf(schema: Schema, path: string): CompiledRule[] {
  let rules = compiledRules.get(schema);
  if (rules) return rules;
  const sources = (schema["x-kubernetes-validations"] as RuleSource[] | undefined) ?? [];
  rules = sources.map((source) => {
    // With optionalOldSelf, oldSelf is an optional value even on updates: optional types are not emulated.
    if (source.optionalOldSelf)
      throw new UnsupportedRule(path, source.rule, "optionalOldSelf (an optional oldSelf)");
    try {
      return {
        source,
        rule: compileExpression(source.rule),
        ...(source.messageExpression ? { message: compileExpression(source.messageExpression) } : {}),
      };
    } catch (error) {
      if (error instanceof CelUnsupported) throw new UnsupportedRule(path, source.rule, error.message);
      if (error instanceof CelCompileError)
        throw new UnsupportedRule(path, source.rule, `a rule that does not compile (${error.message})`);
      throw error;
    }
  });
  compiledRules.set(schema, rules);
  return rules;
}

/** Compiles every rule of a schema (once), throwing {@link UnsupportedRule} for the first it cannot run. */
export function prepareRules(schema: Schema, path = ""): void {
  rulesOf(schema, path);
  const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
  for (const [name, child] of Object.entries(properties))
    prepareRules(child, path ? `${path}.${name}` : name);
  if (isObject(schema.items)) prepareRules(schema.items, `${path}[*]`);
  if (isObject(schema.additionalProperties)) prepareRules(schema.additionalProperties, `${path}[*]`);
  for (const branch of (schema.allOf as Schema[] | undefined) ?? []) prepareRules(branch, path);
}

/** Whether a schema (or anything below it) has rules: objects without any skip the walk. */
const hasRulesCache = new WeakMap<Schema, boolean>();
function hasRules(schema: Schema | undefined): boolean {
  if (!schema) return false;
  const cached = hasRulesCache.get(schema);
  if (cached !== undefined) return cached;
  const children = [
    ...Object.values((schema.properties as Record<string, Schema> | undefined) ?? {}),
    ...(isObject(schema.items) ? [schema.items] : []),
    ...(isObject(schema.additionalProperties) ? [schema.additionalProperties] : []),
    ...((schema.allOf as Schema[] | undefined) ?? []),
  ];
  const result = Boolean(schema["x-kubernetes-validations"]) || children.some(hasRules);
  hasRulesCache.set(schema, result);
  return result;
}

/** Whether a CRD schema has any `x-kubernetes-validations` (the server builds no CEL validator without). */
export function hasValidationRules(schema: Schema): boolean {
  return hasRules(schema);
}

/** Ratcheting state: the correlated old value here (if any) and at the nearest correlatable ancestor. */
interface Correlation {
  current?: { old: unknown; value: unknown } | undefined;
  parent?: { old: unknown; value: unknown } | undefined;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => equal(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && equal(a[k], b[k]));
  }
  return false;
}

function shouldRatchet(c: Correlation): boolean {
  const node = c.current ?? c.parent;
  return node ? equal(node.old, node.value) : false;
}

function keyCorrelation(c: Correlation, key: string, atRoot: boolean): Correlation {
  if (!c.current) return c;
  if (atRoot && (key === "apiVersion" || key === "kind")) return {};
  const { old, value } = c.current;
  const child =
    isObject(old) && isObject(value) && key in old && key in value
      ? { old: old[key], value: value[key] }
      : undefined;
  return { current: child, parent: c.current };
}

function listKeyOf(schema: Schema, item: unknown): string | undefined {
  const keys = (schema["x-kubernetes-list-map-keys"] as string[] | undefined) ?? [];
  if (!isObject(item)) return undefined;
  return JSON.stringify(keys.map((k) => item[k] ?? null));
}

/** The old item matching `item` in a correlatable list (map lists by keys, sets by value). */
function oldItem(schema: Schema, item: unknown, oldList: unknown): unknown {
  if (!Array.isArray(oldList)) return undefined;
  const type = schema["x-kubernetes-list-type"];
  if (type === "map") {
    const key = listKeyOf(schema, item);
    return key === undefined ? undefined : oldList.find((o) => listKeyOf(schema, o) === key);
  }
  if (type === "set") return oldList.find((o) => equal(o, item));
  return undefined;
}

/** One validation: the errors found, and the values converted for CEL (new and old), reused by every rule. */
interface Pass {
  errors: RuleError[];
  memo: Memo;
  oldMemo: Memo;
}

export interface ValidateOptions {
  /** The old object on an update: transition rules and ratcheting apply. */
  old?: unknown;
  /** The schema is a resource's root: `self` has apiVersion, kind and metadata.name. */
  resourceRoot?: boolean;
}

/** Evaluates every rule of `schema` on `value`; returns the errors the API server would report. */
export function validateRules(value: unknown, schema: Schema, options: ValidateOptions = {}): RuleError[] {
  const errors: RuleError[] = [];
  if (!hasRules(schema)) return errors;
  const correlation: Correlation = options.old === undefined ? {} : { current: { old: options.old, value } };
  const pass: Pass = { errors, memo: new WeakMap(), oldMemo: new WeakMap() };
  walkNode(value, options.old, schema, "", correlation, options.resourceRoot ?? false, pass);
  return errors;
}

function walkNode(
  value: unknown,
  old: unknown,
  schema: Schema,
  path: string,
  correlation: Correlation,
  root: boolean,
  pass: Pass,
): void {
  if (value === null || value === undefined || !hasRules(schema)) return;
  evaluateRules(value, old, schema, path, correlation, root, pass);
  for (const branch of (schema.allOf as Schema[] | undefined) ?? [])
    evaluateRules(
      value,
      old,
      { ...branch, type: schema.type, properties: schema.properties },
      path,
      { parent: correlation.parent },
      root,
      pass,
    );
  const child = (key: string) => (path ? `${path}.${key}` : key);
  if (Array.isArray(value)) {
    const items = schema.items as Schema | undefined;
    if (!items) return;
    value.forEach((item, i) => {
      const previous = oldItem(schema, item, old);
      const next: Correlation = correlation.current
        ? {
            current: previous === undefined ? undefined : { old: previous, value: item },
            parent: correlation.current,
          }
        : correlation;
      walkNode(item, previous, items, `${path}[${i}]`, next, false, pass);
    });
    return;
  }
  if (!isObject(value)) return;
  const correlatable = schema["x-kubernetes-map-type"] !== "atomic";
  const oldMap = correlatable && isObject(old) ? old : undefined;
  const properties = schema.properties as Record<string, Schema> | undefined;
  const additional = isObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
  for (const [key, v] of Object.entries(value)) {
    const sub = properties?.[key];
    if (additional)
      walkNode(
        v,
        oldMap?.[key],
        additional,
        `${path}[${key}]`,
        keyCorrelation(correlation, key, root),
        false,
        pass,
      );
    if (sub) walkNode(v, oldMap?.[key], sub, child(key), keyCorrelation(correlation, key, root), false, pass);
  }
}

function typeName(schema: Schema): string {
  return (schema.type as string | undefined) ?? "";
}

function evaluateRules(
  value: unknown,
  old: unknown,
  schema: Schema,
  path: string,
  correlation: Correlation,
  root: boolean,
  pass: Pass,
): void {
  const rules = rulesOf(schema, path);
  if (rules.length === 0) return;
  const where = path || "<nil>";
  const type = typeName(schema);
  const embedded = root || schema["x-kubernetes-embedded-resource"] === true;
  const self = toCel(value, schema, embedded, pass.memo);
  const oldSelf = old === undefined || old === null ? undefined : toCel(old, schema, embedded, pass.oldMemo);
  for (const { source, rule, message } of rules) {
    const optional = source.optionalOldSelf === true;
    if (rule.usesOldSelf && oldSelf === undefined && !optional) continue;
    const bindings: Record<string, unknown> = { self };
    if (oldSelf !== undefined) bindings.oldSelf = oldSelf;
    const result = rule.evaluate(bindings);
    if (isCelError(result)) {
      const text = celGoError(result.message);
      pass.errors.push(
        invalidValue(
          where,
          type,
          text.startsWith("found no matching overload")
            ? `'no such overload': call arguments did not match a supported operator, function or macro signature for rule: ${ruleErrorString(source)}`
            : `${text} evaluating rule: ${ruleErrorString(source)}`,
        ),
      );
      continue;
    }
    if (result === true) continue;
    const at = source.fieldPath ? `${path ? `${path}.` : ""}${normaliseFieldPath(source.fieldPath)}` : where;
    let detail = ruleMessageOrDefault(source);
    if (message) {
      const text = message.evaluate(bindings);
      if (typeof text === "string" && text.trim() !== "" && !text.includes("\n")) detail = text.trim();
    }
    const error = errorForReason(at, value, detail, source.reason);
    if (!(rule.usesOldSelf || !shouldRatchet(correlation))) continue;
    pass.errors.push(error);
  }
}
