/**
 * Property names as CEL sees them (Kubernetes' `cel.Escape`): a name that is a CEL reserved word
 * becomes `__word__`, and `__`, `.`, `-`, `/` inside a name become `__underscores__`, `__dot__`,
 * `__dash__`, `__slash__`. A name with any other character has no CEL form: the field is left out
 * of `self` (a rule cannot reach it), as on the server.
 */

const RESERVED = new Set([
  "true",
  "false",
  "null",
  "in",
  "as",
  "break",
  "const",
  "continue",
  "else",
  "for",
  "function",
  "if",
  "import",
  "let",
  "loop",
  "package",
  "namespace",
  "return",
  "var",
  "void",
  "while",
]);

const ESCAPABLE = /^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$/;

const escaped = new Map<string, string | undefined>();

/** The CEL name of a property, or `undefined` when it has none. */
export function escapeName(name: string): string | undefined {
  if (escaped.has(name)) return escaped.get(name);
  const result = escapeUncached(name);
  // Property names come from schemas: few, and the same on every write.
  if (escaped.size < 10_000) escaped.set(name, result);
  return result;
}

function escapeUncached(name: string): string | undefined {
  if (RESERVED.has(name)) return `__${name}__`;
  if (!ESCAPABLE.test(name)) return undefined;
  return name
    .replaceAll("__", "__underscores__")
    .replaceAll(".", "__dot__")
    .replaceAll("-", "__dash__")
    .replaceAll("/", "__slash__");
}
