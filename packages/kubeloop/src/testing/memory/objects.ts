import { type HttpResponse, keyOfRef } from "../../client/index.js";
import { groupOf, versionOf } from "../../client/internal.js";
import type { KindInfo } from "./kinds.js";

// Objects here are JSON of any kind, walked by field name; typing every path would hide the logic.
// biome-ignore lint/suspicious/noExplicitAny: internal JSON documents, never part of the public API.
export type Obj = Record<string, any>;

/** What a request's path names: the kind, and the namespace, name and subresource when given. */
export interface Route {
  kind: KindInfo;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

export function specChanged(old: Obj, next: Obj, statusSubresource: boolean): boolean {
  const content = (o: Obj) => {
    const { metadata: _m, status, apiVersion: _a, kind: _k, ...rest } = o;
    return JSON.stringify(statusSubresource ? rest : { ...rest, status });
  };
  return content(old) !== content(next);
}

export function keyOf(namespace: string | undefined, name: string): string {
  return keyOfRef({ namespace, name });
}

export function splitApiVersion(apiVersion: string): [string, string] {
  return [groupOf(apiVersion), versionOf(apiVersion)];
}

const SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
export function randomSuffix(): string {
  let suffix = "";
  for (let i = 0; i < 5; i++) suffix += SUFFIX_ALPHABET[Math.floor(Math.random() * SUFFIX_ALPHABET.length)];
  return suffix;
}

export function ok(body: unknown): HttpResponse {
  return { status: 200, headers: { "content-type": "application/json" }, body };
}

export function created(body: unknown): HttpResponse {
  return { status: 201, headers: { "content-type": "application/json" }, body };
}

/**
 * Whether two JSON documents serialise to the same text (keys in the same order, `undefined`
 * properties left out, as `JSON.stringify` does), without serialising them.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const leftKeys = Object.keys(left).filter((key) => left[key] !== undefined);
  const rightKeys = Object.keys(right).filter((key) => right[key] !== undefined);
  if (leftKeys.length !== rightKeys.length) return false;
  for (let i = 0; i < leftKeys.length; i++) {
    const key = leftKeys[i] as string;
    if (key !== rightKeys[i] || !sameJson(left[key], right[key])) return false;
  }
  return true;
}
