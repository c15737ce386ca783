import {
  type CelFunc,
  type CelList,
  CelScalar,
  celFunc,
  celMethod,
  isCelUint,
  listType,
} from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
import { RE2JS } from "@bufbuild/re2";

/**
 * The Kubernetes CEL libraries on top of the CEL standard library and the strings extension that
 * `@bufbuild/cel` provides. Written here (what kube-apiserver's `k8s.io/apiserver/pkg/cel/library`
 * adds): lists (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`) and the validity checks of the url, ip, cidr, quantity and semver libraries
 * (`isURL`, `isIP`, `isCIDR`, `isQuantity`, `isSemver`). Their value-returning halves (`url(…)`,
 * `ip(…)`, `quantity(…)`, …), the regex library (`find`, `findAll`: the RE2 engine here only
 * tests a match), `format.*`, `sets.*` and optional types are refused by name when a
 * rule uses them (see {@link UNSUPPORTED}), so a rule is never evaluated differently.
 */

/** Functions of Kubernetes' libraries that are not emulated: a rule calling one is refused. */
export const UNSUPPORTED = new Set([
  "url",
  "ip",
  "cidr",
  "quantity",
  "semver",
  "getScheme",
  "getHost",
  "getHostname",
  "getPort",
  "getEscapedPath",
  "getQuery",
  "family",
  "containsIP",
  "containsCIDR",
  "masked",
  "prefixLength",
  "isCanonical",
  "asInteger",
  "asApproximateFloat",
  "isGreaterThan",
  "isLessThan",
  "compareTo",
  "major",
  "minor",
  "patch",
  "reverse",
  "sort",
  "distinct",
  "flatten",
  "slice",
  "range",
  "of",
  "none",
  "hasValue",
  "orValue",
  "value",
  "or",
  "optMap",
  "optFlatMap",
  "ofNonZeroValue",
  "validate",
  "authorizer",
  "path",
  "group",
  "resource",
  "check",
  "allowed",
  "reason",
  "errored",
  "greatest",
  "least",
  "ceil",
  "floor",
  "round",
  "trunc",
  "abs",
  "sign",
  "isInf",
  "isNaN",
  "isFinite",
  "bitAnd",
  "bitOr",
  "bitXor",
  "bitNot",
  "bitShiftLeft",
  "bitShiftRight",
  "sqrt",
  "equivalent",
  "intersects",
  "encode",
  "decode",
  "quote",
  "transformList",
  "transformMap",
  "transformMapEntry",
  "existsOne",
  "find",
  "findAll",
  "isInteger",
  "add",
  "sub",
]);

const patterns = new Map<string, RE2JS>();
/** Patterns compiled once: a rule runs on every write, its regex is the same each time. */
export function re2(pattern: string): RE2JS {
  let compiled = patterns.get(pattern);
  if (!compiled) {
    compiled = RE2JS.compile(pattern);
    if (patterns.size > 1000) patterns.clear();
    patterns.set(pattern, compiled);
  }
  return compiled;
}

type Comparable = bigint | number | string | boolean;
const plain = (v: unknown): Comparable => (isCelUint(v) ? v.value : (v as Comparable));

function compare(a: unknown, b: unknown): number {
  const x = plain(a);
  const y = plain(b);
  if (x < y) return -1;
  return x > y ? 1 : 0;
}

function items(list: CelList): unknown[] {
  return [...list];
}

function equalValues(a: unknown, b: unknown): boolean {
  if (typeof a === "bigint" && typeof b === "number") return Number(a) === b;
  if (typeof a === "number" && typeof b === "bigint") return a === Number(b);
  return plain(a) === plain(b);
}

const LIST = listType(CelScalar.DYN);

function listsLibrary(): CelFunc[] {
  const reduceOrThrow = (list: CelList, pick: (a: unknown, b: unknown) => unknown, name: string) => {
    const all = items(list);
    if (all.length === 0) throw new Error(`${name}(list) called on empty list`);
    return all.reduce(pick) as never;
  };
  return [
    celMethod("isSorted", LIST, [], CelScalar.BOOL, function () {
      const all = items(this);
      return all.every((v, i) => i === 0 || compare(all[i - 1], v) <= 0);
    }),
    celMethod("sum", LIST, [], CelScalar.DYN, function () {
      const all = items(this);
      if (all.length === 0) return 0n;
      return all.reduce((a, b) => (a as number) + (b as number)) as never;
    }),
    celMethod("min", LIST, [], CelScalar.DYN, function () {
      return reduceOrThrow(this, (a, b) => (compare(a, b) <= 0 ? a : b), "min");
    }),
    celMethod("max", LIST, [], CelScalar.DYN, function () {
      return reduceOrThrow(this, (a, b) => (compare(a, b) >= 0 ? a : b), "max");
    }),
    celMethod("indexOf", LIST, [CelScalar.DYN], CelScalar.INT, function (x) {
      return BigInt(items(this).findIndex((v) => equalValues(v, x)));
    }),
    celMethod("lastIndexOf", LIST, [CelScalar.DYN], CelScalar.INT, function (x) {
      return BigInt(items(this).findLastIndex((v) => equalValues(v, x)));
    }),
  ];
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** Go's netip.ParseAddr as Kubernetes uses it: no zones, IPv4 without leading zeros. */
export function isIP(text: string): boolean {
  if (text.includes("%")) return false;
  if (IPV4.test(text)) return true;
  if (!text.includes(":")) return false;
  const tail = text.lastIndexOf(":");
  const last = text.slice(tail + 1);
  let head = text;
  let groups = 8;
  if (last.includes(".")) {
    if (!IPV4.test(last)) return false;
    head = `${text.slice(0, tail)}:0`;
    groups = 7;
  }
  const halves = head.split("::");
  if (halves.length > 2) return false;
  const parts = halves.map((h) => (h === "" ? [] : h.split(":")));
  if (parts.some((p) => p.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g)))) return false;
  const count = parts.reduce((n, p) => n + p.length, 0);
  return halves.length === 2 ? count < groups : count === groups;
}

export function isCIDR(text: string): boolean {
  const slash = text.indexOf("/");
  if (slash < 0) return false;
  const address = text.slice(0, slash);
  const bits = text.slice(slash + 1);
  if (!isIP(address) || !/^(0|[1-9]\d*)$/.test(bits)) return false;
  return Number(bits) <= (address.includes(":") ? 128 : 32);
}

function isURL(text: string): boolean {
  // Go's url.Parse, which the library uses, accepts absolute URLs and absolute paths.
  if (text.startsWith("/")) return !/[\s]/.test(text);
  try {
    const url = new URL(text);
    return url.protocol.length > 1;
  } catch {
    return false;
  }
}

const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$/;
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-((0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$/;

function checksLibrary(): CelFunc[] {
  const check = (name: string, test: (s: string) => boolean) =>
    celFunc(name, [CelScalar.STRING], CelScalar.BOOL, (s: string) => test(s));
  return [
    check("isIP", isIP),
    check("isCIDR", isCIDR),
    check("isURL", isURL),
    check("isQuantity", (s) => QUANTITY.test(s)),
    check("isSemver", (s) => SEMVER.test(s)),
  ];
}

/** Every function a Kubernetes rule may call beyond the CEL standard library. */
export function kubernetesLibraries(): CelFunc[] {
  return [...strings, ...listsLibrary(), ...checksLibrary()];
}
