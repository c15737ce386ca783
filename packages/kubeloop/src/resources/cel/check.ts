import type { Expr } from "@bufbuild/cel-spec/cel/expr/syntax_pb.js";
import { UNSUPPORTED } from "./libraries.js";
import { type CelType, DYN, scalar, typeString } from "./types.js";

/**
 * A type check of a rule against the declared types of `self` and `oldSelf` (cel-go's checker as
 * kube-apiserver runs it when a CRD is written, for the mistakes a rule author makes: a field that
 * the schema does not have, an operator between types that have none, a function that does not
 * exist, a rule that is not a bool). Where a type is not known (dyn) it accepts, as cel-go does,
 * so it never refuses a rule the server compiles. The messages are cel-go's.
 */

const BOOL = scalar("bool");
const INT = scalar("int");
const STRING = scalar("string");
const NUMERIC = new Set(["int", "uint", "double"]);

const STRING_METHODS: Record<string, CelType> = {
  matches: BOOL,
  startsWith: BOOL,
  endsWith: BOOL,
  contains: BOOL,
  lowerAscii: STRING,
  upperAscii: STRING,
  trim: STRING,
  replace: STRING,
  substring: STRING,
  charAt: STRING,
  format: STRING,
  find: STRING,
  indexOf: INT,
  lastIndexOf: INT,
  split: { kind: "list", elem: STRING },
  findAll: { kind: "list", elem: STRING },
};
const GLOBALS: Record<string, CelType> = {
  size: INT,
  int: INT,
  uint: scalar("uint"),
  double: scalar("double"),
  string: STRING,
  bool: BOOL,
  bytes: scalar("bytes"),
  dyn: DYN,
  type: scalar("type"),
  duration: scalar("duration"),
  timestamp: scalar("timestamp"),
  isIP: BOOL,
  isCIDR: BOOL,
  isURL: BOOL,
  isQuantity: BOOL,
  isSemver: BOOL,
  matches: BOOL,
};
const ANY_METHODS = new Set([
  "size",
  "isSorted",
  "sum",
  "min",
  "max",
  "indexOf",
  "lastIndexOf",
  "join",
  "getSeconds",
  "getMinutes",
  "getHours",
  "getDate",
  "getDayOfMonth",
  "getDayOfWeek",
  "getDayOfYear",
  "getFullYear",
  "getMonth",
  "getMilliseconds",
]);

export class TypeCheckError extends Error {
  override name = "TypeCheckError";
}

type Scope = Map<string, CelType>;

const isDyn = (t: CelType) => t.kind === "dyn";
const same = (a: CelType, b: CelType) => typeString(a) === typeString(b);

function overload(fn: string, args: CelType[]): never {
  throw new TypeCheckError(
    `found no matching overload for '${fn}' applied to '(${args.map(typeString).join(", ")})'`,
  );
}

/** The type of an operator's call, or `undefined` when `fn` is not an operator. */
function checkOperator(fn: string, args: CelType[]): CelType | undefined {
  const [a, b] = args as [CelType, CelType];
  switch (fn) {
    case "_==_":
    case "_!=_":
      if (
        !isDyn(a) &&
        !isDyn(b) &&
        a.kind !== "null_type" &&
        b.kind !== "null_type" &&
        !same(a, b) &&
        !(NUMERIC.has(a.kind) && NUMERIC.has(b.kind)) &&
        !(a.kind === "object" && b.kind === "object")
      )
        overload(fn, args);
      return BOOL;
    case "_<_":
    case "_<=_":
    case "_>_":
    case "_>=_":
      if (
        !isDyn(a) &&
        !isDyn(b) &&
        !(NUMERIC.has(a.kind) && NUMERIC.has(b.kind)) &&
        !(same(a, b) && ["string", "bytes", "bool", "timestamp", "duration"].includes(a.kind))
      )
        overload(fn, args);
      return BOOL;
    case "_&&_":
    case "_||_":
    case "!_":
      for (const t of args) if (!isDyn(t) && t.kind !== "bool") overload(fn, args);
      return BOOL;
    case "_+_":
      if (isDyn(a) || isDyn(b)) return isDyn(a) ? b : a;
      if (same(a, b) && ["int", "uint", "double", "string", "bytes", "list", "duration"].includes(a.kind))
        return a;
      if (a.kind === "list" && b.kind === "list") return { kind: "list", elem: DYN };
      if (
        (a.kind === "timestamp" && b.kind === "duration") ||
        (a.kind === "duration" && b.kind === "timestamp")
      )
        return scalar("timestamp");
      return overload(fn, args);
    case "_-_":
    case "_*_":
    case "_/_":
    case "_%_":
    case "-_":
      if (
        args.every((t) => isDyn(t) || NUMERIC.has(t.kind) || t.kind === "timestamp" || t.kind === "duration")
      )
        return isDyn(a) && b ? b : a;
      return overload(fn, args);
    case "_?_:_": {
      const [, then, otherwise] = args as [CelType, CelType, CelType];
      if (!isDyn(a) && a.kind !== "bool") overload(fn, args);
      return same(then, otherwise) ? then : DYN;
    }
    case "_[_]":
      if (a.kind === "list") return a.elem;
      if (a.kind === "map") return a.value;
      if (isDyn(a)) return DYN;
      return overload(fn, args);
    case "@in":
      return BOOL;
    case "@not_strictly_false":
      return BOOL;
  }
  return undefined;
}

function checkCall(node: Expr & { exprKind: { case: "callExpr" } }, scope: Scope): CelType {
  const call = node.exprKind.value;
  const fn = call.function;
  const target = call.target ? typeOf(call.target, scope) : undefined;
  const args = call.args.map((a) => typeOf(a, scope));
  const operator = checkOperator(fn, args);
  if (operator) return operator;
  // Kubernetes' libraries not emulated here (url(), quantity(), …): the server knows them; accept.
  if (UNSUPPORTED.has(fn)) return DYN;
  if (target) {
    if (target.kind === "string" && fn in STRING_METHODS) return STRING_METHODS[fn] as CelType;
    if (isDyn(target) || ANY_METHODS.has(fn)) {
      if (target.kind === "list" && ["sum", "min", "max"].includes(fn)) return target.elem;
      if (["size", "indexOf", "lastIndexOf"].includes(fn)) return INT;
      if (fn === "isSorted") return BOOL;
      if (fn === "join") return STRING;
      return fn in STRING_METHODS ? (STRING_METHODS[fn] as CelType) : DYN;
    }
    return overload(fn, [target, ...args]);
  }
  if (fn in GLOBALS) return GLOBALS[fn] as CelType;
  throw new TypeCheckError(`undeclared reference to '${fn}' (in container '')`);
}

function typeOf(node: Expr, scope: Scope): CelType {
  const kind = node.exprKind;
  switch (kind.case) {
    case "constExpr": {
      const c = kind.value.constantKind.case;
      if (c === "int64Value") return INT;
      if (c === "uint64Value") return scalar("uint");
      if (c === "doubleValue") return scalar("double");
      if (c === "stringValue") return STRING;
      if (c === "boolValue") return BOOL;
      if (c === "bytesValue") return scalar("bytes");
      if (c === "nullValue") return scalar("null_type");
      return DYN;
    }
    case "identExpr": {
      const t = scope.get(kind.value.name);
      if (t) return t;
      throw new TypeCheckError(`undeclared reference to '${kind.value.name}' (in container '')`);
    }
    case "selectExpr": {
      const operand = typeOf(kind.value.operand as Expr, scope);
      const field = kind.value.field;
      let result: CelType = DYN;
      if (operand.kind === "object") {
        const t = operand.fields.get(field);
        if (!t) throw new TypeCheckError(`undefined field '${field}'`);
        result = t;
      } else if (operand.kind === "map") result = operand.value;
      else if (!isDyn(operand))
        throw new TypeCheckError(`type '${typeString(operand)}' does not support field selection`);
      return kind.value.testOnly ? BOOL : result;
    }
    case "callExpr":
      return checkCall(node as Expr & { exprKind: { case: "callExpr" } }, scope);
    case "listExpr": {
      const elems = kind.value.elements.map((e) => typeOf(e, scope));
      const first = elems[0];
      return { kind: "list", elem: first && elems.every((e) => same(e, first)) ? first : DYN };
    }
    case "structExpr":
      for (const e of kind.value.entries) {
        if (e.keyKind.case === "mapKey") typeOf(e.keyKind.value, scope);
        if (e.value) typeOf(e.value, scope);
      }
      return { kind: "map", key: DYN, value: DYN };
    case "comprehensionExpr": {
      const c = kind.value;
      const range = typeOf(c.iterRange as Expr, scope);
      const iter = range.kind === "list" ? range.elem : range.kind === "map" ? range.key : DYN;
      if (!isDyn(range) && range.kind !== "list" && range.kind !== "map")
        throw new TypeCheckError(
          `expression of type '${typeString(range)}' cannot be range of a comprehension (must be list, map, or dynamic)`,
        );
      const inner = new Map(scope);
      inner.set(c.iterVar, iter);
      inner.set(c.accuVar, typeOf(c.accuInit as Expr, scope));
      if (c.loopCondition) typeOf(c.loopCondition, inner);
      const step = typeOf(c.loopStep as Expr, inner);
      inner.set(c.accuVar, step);
      return typeOf(c.result as Expr, inner);
    }
    default:
      return DYN;
  }
}

/** The type of `expr` with `variables` declared; throws {@link TypeCheckError} with cel-go's reason. */
export function checkExpression(expr: Expr, variables: Record<string, CelType>): CelType {
  return typeOf(expr, new Map(Object.entries(variables)));
}
