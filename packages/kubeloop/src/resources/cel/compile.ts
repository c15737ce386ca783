import { type CelEnv, type CelResult, celEnv, parse, plan } from "@bufbuild/cel";
import type { Expr } from "@bufbuild/cel-spec/cel/expr/syntax_pb.js";
import { kubernetesLibraries, re2, UNSUPPORTED } from "./libraries.js";

/**
 * One CEL expression of a CRD (a rule or a messageExpression), parsed and planned once with the
 * Kubernetes libraries. Evaluation is `@bufbuild/cel`'s; what is Kubernetes' (the libraries, the
 * variables `self` and `oldSelf`) is added here.
 */

export interface CompiledExpression {
  readonly source: string;
  /** Whether the expression reads `oldSelf` (a transition rule). */
  readonly usesOldSelf: boolean;
  readonly evaluate: (bindings: Record<string, unknown>) => CelResult;
  readonly ast: Expr;
}

/** An expression that does not compile, with cel-go's kind of reason. */
export class CelCompileError extends Error {
  override name = "CelCompileError";
}

/** An expression that uses a part of CEL or of Kubernetes' libraries not emulated here. */
export class CelUnsupported extends Error {
  override name = "CelUnsupported";
}

let shared: CelEnv | undefined;
function environment(): CelEnv {
  shared ??= celEnv({
    funcs: kubernetesLibraries(),
    re2: { compile: (pattern: string) => ({ test: (text: string) => re2(pattern).test(text) }) },
  });
  return shared;
}

/** Every call's name and every identifier in an expression. */
export function walk(expr: Expr | undefined, visit: (node: Expr) => void): void {
  if (!expr) return;
  visit(expr);
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr":
      walk(kind.value.operand, visit);
      break;
    case "callExpr":
      walk(kind.value.target, visit);
      for (const arg of kind.value.args) walk(arg, visit);
      break;
    case "listExpr":
      for (const e of kind.value.elements) walk(e, visit);
      break;
    case "structExpr":
      for (const e of kind.value.entries) {
        if (e.keyKind.case === "mapKey") walk(e.keyKind.value, visit);
        walk(e.value, visit);
      }
      break;
    case "comprehensionExpr":
      for (const part of [
        kind.value.iterRange,
        kind.value.accuInit,
        kind.value.loopCondition,
        kind.value.loopStep,
        kind.value.result,
      ])
        walk(part, visit);
      break;
    default:
      break;
  }
}

/** Namespaces of extension functions (`sets.contains(…)`, `math.greatest(…)`) not emulated here. */
const NAMESPACES = new Set(["sets", "format", "math", "base64", "lists", "optional", "cel", "strings"]);

const cache = new Map<string, CompiledExpression>();

/** Parses and plans `source`; throws {@link CelCompileError} or {@link CelUnsupported}. */
export function compileExpression(source: string): CompiledExpression {
  const cached = cache.get(source);
  if (cached) return cached;
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    // The parser here has no optional syntax; cel-go with optional types parses it.
    if (/\.\?[a-zA-Z_]|\[\?/.test(source))
      throw new CelUnsupported("optional types (`.?field`, `[?index]`, `optional.*`)");
    throw new CelCompileError(`ERROR: ${(error as Error).message}`);
  }
  let usesOldSelf = false;
  walk(parsed.expr, (node) => {
    if (node.exprKind.case === "identExpr" && node.exprKind.value.name === "oldSelf") usesOldSelf = true;
    if (node.exprKind.case !== "callExpr") return;
    const { function: fn, target } = node.exprKind.value;
    const namespace = target?.exprKind.case === "identExpr" ? target.exprKind.value.name : undefined;
    if (namespace && NAMESPACES.has(namespace))
      throw new CelUnsupported(`the CEL function ${namespace}.${fn}()`);
    if (UNSUPPORTED.has(fn)) throw new CelUnsupported(`the CEL function ${fn}()`);
  });
  const program = plan(environment(), parsed);
  const compiled: CompiledExpression = {
    source,
    usesOldSelf,
    evaluate: (bindings) => program(bindings as never),
    ast: parsed.expr,
  };
  if (cache.size > 5000) cache.clear();
  cache.set(source, compiled);
  return compiled;
}
