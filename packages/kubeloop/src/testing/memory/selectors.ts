import { badRequest } from "./errors.js";

/**
 * Label and field selectors, parsed as kube-apiserver parses them (`a=b`, `a==b`, `a!=b`,
 * `a in (x,y)`, `a notin (x)`, `a`, `!a`; fields: `=`, `==`, `!=` on the fields a kind supports).
 */

type Requirement =
  | { key: string; op: "=" | "!="; values: string[] }
  | { key: string; op: "in" | "notin"; values: string[] }
  | { key: string; op: "exists" | "!exists"; values: [] };

export type Matcher = (values: Record<string, string>) => boolean;

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Splits at commas that are not inside `( … )`. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms.map((t) => t.trim()).filter((t) => t !== "");
}

function parseLabelTerm(term: string): Requirement {
  let match = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (match) {
    const values = (match[3] ?? "")
      .split(",")
      .map((v) => v.trim())
      .filter((v) => v !== "");
    return { key: checkKey(match[1] ?? ""), op: match[2] as "in" | "notin", values };
  }
  match = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
  if (match) {
    return { key: checkKey(match[1] ?? ""), op: match[2] === "!=" ? "!=" : "=", values: [match[3] ?? ""] };
  }
  match = /^(!?)\s*([^=!\s()]+)$/.exec(term);
  if (match) return { key: checkKey(match[2] ?? ""), op: match[1] ? "!exists" : "exists", values: [] };
  throw badRequest(`unable to parse requirement: found '${term}', expected: in, notin, =, ==, !=, gt, lt`);
}

function checkKey(key: string): string {
  if (!LABEL_KEY.test(key)) throw badRequest(`unable to parse requirement: invalid label key "${key}"`);
  return key;
}

function matches(requirement: Requirement, values: Record<string, string>): boolean {
  const has = Object.hasOwn(values, requirement.key);
  const value = values[requirement.key];
  switch (requirement.op) {
    case "=":
      return has && value === requirement.values[0];
    case "!=":
      return !has || value !== requirement.values[0];
    case "in":
      return has && requirement.values.includes(value ?? "");
    case "notin":
      return !has || !requirement.values.includes(value ?? "");
    case "exists":
      return has;
    case "!exists":
      return !has;
  }
}

/** A label selector string → a predicate on an object's labels. Empty matches everything. */
export function labelMatcher(selector: string | undefined): Matcher {
  if (!selector) return () => true;
  const requirements = splitTerms(selector).map(parseLabelTerm);
  return (labels) => requirements.every((r) => matches(r, labels));
}

/**
 * A field selector string → a predicate on an object's selectable fields (see `selectableFields`).
 * A field the kind does not support is a 400, as on kube-apiserver.
 */
export function fieldMatcher(
  selector: string | undefined,
  supported: ReadonlySet<string>,
  newMessage = false,
): Matcher {
  if (!selector) return () => true;
  const requirements = splitTerms(selector).map((term): Requirement => {
    const match = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!match) throw badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const key = match[1] ?? "";
    if (!supported.has(key))
      throw badRequest(
        newMessage
          ? `"${key}" is not a known field selector: only ${[...supported].map((f) => `"${f}"`).join(", ")}`
          : `field label not supported: ${key}`,
      );
    return { key, op: match[2] === "!=" ? "!=" : "=", values: [match[3] ?? ""] };
  });
  // Every selectable field has a value (empty when unset): `!=` never means "absent".
  return (fields) => requirements.every((r) => matches(r, fields));
}
