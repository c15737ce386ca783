import { randomBytes } from "node:crypto";

/**
 * Secrets an operator handles (admin passwords, generated credentials) must never reach a log
 * line, an event or a condition, where anyone who can read events or logs would see them. Error
 * messages are the usual leak: a driver that echoes a connection string, a tool's stderr.
 *
 * Register each secret value the operator holds with {@link registerSecret}; the controller runtime
 * passes every failure's message through {@link redactSecrets} before it logs it, records it in the
 * Warning event and writes it to the Ready condition, and `ctx.event` redacts its note. Values are
 * matched as written and URL-encoded (as they appear in connection strings).
 *
 * @example
 * ```ts
 * const password = registerSecret(generatePassword());
 * const admin = registerSecret(secretValues(serverSecret).password ?? "");
 * // a thrown Error("cannot connect to postgresql://admin:<admin>@db") shows as "…admin:[redacted]@db"
 * ```
 */

/** What a redacted value is shown as. */
export const REDACTED = "[redacted]";
/**
 * Values shorter than this are not registered: redacting a 3-letter "password" would blank out
 * ordinary words in every message. Generated secrets are far longer.
 */
export const MIN_SECRET_LENGTH = 8;
/** Registered values kept (oldest dropped first): rotation adds values, memory must stay bounded. */
export const MAX_REGISTERED_SECRETS = 10_000;

const registered = new Set<string>();

/** Marks a value as secret for {@link redactSecrets}; returns it, for inline use. */
export function registerSecret<V extends string | undefined>(value: V): V {
  if (value === undefined || value.length < MIN_SECRET_LENGTH || registered.has(value)) return value;
  registered.add(value);
  const encoded = encodeURIComponent(value);
  if (encoded !== value) registered.add(encoded);
  while (registered.size > MAX_REGISTERED_SECRETS) {
    const oldest = registered.values().next().value;
    if (oldest === undefined) break;
    registered.delete(oldest);
  }
  return value;
}

/** `text` with every registered secret value replaced by {@link REDACTED}. */
export function redactSecrets(text: string): string {
  if (registered.size === 0 || !text) return text;
  let out = text;
  // Longest first: a secret that contains another is replaced whole.
  for (const value of [...registered].sort((a, b) => b.length - a.length)) {
    if (out.includes(value)) out = out.split(value).join(REDACTED);
  }
  return out;
}

/** An error as it may be logged: its message (and its causes') redacted, its stack left out if it held a secret. */
export function redactError(error: unknown): unknown {
  if (!(error instanceof Error)) return typeof error === "string" ? redactSecrets(error) : error;
  const message = redactSecrets(error.message);
  const stack = error.stack === undefined ? undefined : redactSecrets(error.stack);
  if (message === error.message && stack === error.stack && error.cause === undefined) return error;
  const copy = new Error(
    message,
    error.cause === undefined ? undefined : { cause: redactError(error.cause) },
  );
  copy.name = error.name;
  if (stack !== undefined) copy.stack = stack;
  return copy;
}

/** A Secret's values, decoded: `data` (base64) overlaid with `stringData` (as a write would). */
export function secretValues(secret: {
  data?: Record<string, string> | undefined;
  stringData?: Record<string, string> | undefined;
}): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(secret.data ?? {}))
    values[key] = Buffer.from(value, "base64").toString("utf8");
  return { ...values, ...secret.stringData };
}

/**
 * A random password: `bytes` random bytes as base64url (24 bytes → 32 characters of A–Z a–z 0–9 - _,
 * safe in URLs, shells and SQL literals).
 */
export function generatePassword(bytes = 24): string {
  if (!Number.isInteger(bytes) || bytes < 12)
    throw new RangeError(`generatePassword: at least 12 bytes, got ${bytes}`);
  return randomBytes(bytes).toString("base64url");
}
