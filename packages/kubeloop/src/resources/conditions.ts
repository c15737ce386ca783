import { InvalidCondition } from "./errors.js";

/**
 * Status conditions with Kubernetes `metav1.Condition` semantics (apimachinery's
 * `meta.SetStatusCondition`): one entry per `type`; `lastTransitionTime` moves only when `status`
 * changes, so "Ready since…" stays true while the reason or message is refined. Pure functions:
 * inputs are never changed, results are new arrays.
 *
 * Inputs are checked against the validation the API applies to `metav1.Condition` (the OpenAPI
 * schema of every CRD that embeds it), so a bad reason fails here, where the stack names the
 * caller, and not as a 422 from a status write later.
 */

export type ConditionStatus = "True" | "False" | "Unknown";

/** A status condition as the API stores it (`metav1.Condition`). */
export interface Condition {
  /** CamelCase, optionally prefixed by a DNS subdomain: `Ready`, `example.com/Degraded`. */
  type: string;
  status: ConditionStatus;
  /** A CamelCase machine-readable cause: `MinimumReplicasAvailable`. */
  reason: string;
  /** Human-readable detail; may be empty. */
  message: string;
  /** RFC 3339, seconds precision: when `status` last changed. */
  lastTransitionTime: string;
  /** The `metadata.generation` the condition was computed from. */
  observedGeneration?: number;
}

/** What {@link setCondition} takes: a condition without its transition time. */
export interface ConditionInput {
  type: string;
  /** `true`/`false` are shorthands for `"True"`/`"False"`. */
  status: ConditionStatus | boolean;
  reason: string;
  /** Default "". Longer than {@link MAX_CONDITION_MESSAGE_LENGTH} is truncated. */
  message?: string;
  /** The object's `metadata.generation` this condition reflects. Recommended: it tells readers whether the condition is current. */
  observedGeneration?: number;
}

/** `metav1.Condition.reason`: `+kubebuilder:validation:Pattern`. */
export const CONDITION_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
/** `metav1.Condition.type`: an optional DNS-subdomain prefix and a qualified name. */
export const CONDITION_TYPE_PATTERN =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
/** `metav1.Condition.type` MaxLength. */
export const MAX_CONDITION_TYPE_LENGTH = 316;
/** `metav1.Condition.reason` MaxLength. */
export const MAX_CONDITION_REASON_LENGTH = 1024;
/**
 * `metav1.Condition.message` MaxLength, in characters (code points, as OpenAPI validation counts).
 * Longer messages (a whole stack trace, a long list of pods) are cut to fit, ending in "…", rather
 * than making the whole status write fail.
 */
export const MAX_CONDITION_MESSAGE_LENGTH = 32768;

const STATUSES: ReadonlySet<string> = new Set(["True", "False", "Unknown"]);

/**
 * Returns `conditions` with `input` set: added (at the end) if its type is new, else updated in
 * place. `lastTransitionTime` is `now` for a new condition or a changed status, and kept otherwise.
 * Throws {@link InvalidCondition} for values the API server would reject.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  now: Date = new Date(),
): Condition[] {
  const next = normalize(input);
  const list = conditions ?? [];
  const index = list.findIndex((c) => c.type === next.type);
  const existing = list[index];
  if (!existing) return [...list, { ...next, lastTransitionTime: formatTime(now) }];
  const lastTransitionTime = existing.status === next.status ? existing.lastTransitionTime : formatTime(now);
  return list.with(index, { ...next, lastTransitionTime });
}

/** The condition of this type, if present. */
export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether the condition is present with status `True`. */
export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === "True";
}

/** Whether the condition is present with status `False` (absent or `Unknown` is neither true nor false). */
export function isFalse(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === "False";
}

/** Returns `conditions` without the condition of this type. */
export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

function normalize(input: ConditionInput): Omit<Condition, "lastTransitionTime"> {
  const { type, reason } = input;
  const status = input.status === true ? "True" : input.status === false ? "False" : input.status;
  if (
    typeof type !== "string" ||
    type.length > MAX_CONDITION_TYPE_LENGTH ||
    !CONDITION_TYPE_PATTERN.test(type)
  ) {
    throw new InvalidCondition(
      `Condition type ${JSON.stringify(type)} is not valid: use CamelCase, optionally prefixed by a domain ` +
        `(e.g. "Ready", "example.com/Degraded"), at most ${MAX_CONDITION_TYPE_LENGTH} characters`,
    );
  }
  if (!STATUSES.has(status)) {
    throw new InvalidCondition(
      `Condition ${type}: status ${JSON.stringify(status)} is not one of "True", "False", "Unknown"`,
    );
  }
  if (
    typeof reason !== "string" ||
    reason.length > MAX_CONDITION_REASON_LENGTH ||
    !CONDITION_REASON_PATTERN.test(reason)
  ) {
    throw new InvalidCondition(
      `Condition ${type}: reason ${JSON.stringify(reason)} is not valid: it must be CamelCase ` +
        `(letters, digits, "_", "," and ":"; starting with a letter), e.g. "ReplicasReady"`,
    );
  }
  const generation = input.observedGeneration;
  if (generation !== undefined && !(Number.isSafeInteger(generation) && generation >= 0)) {
    throw new InvalidCondition(
      `Condition ${type}: observedGeneration must be a whole number >= 0, got ${generation}`,
    );
  }
  return {
    type,
    status,
    reason,
    message: truncateMessage(input.message ?? ""),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
}

/** metav1.Time: RFC 3339 in UTC, whole seconds (what the server stores and returns). */
function formatTime(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

function truncateMessage(message: string): string {
  // UTF-16 length ≥ code points: the common short message needs no scan.
  if (message.length <= MAX_CONDITION_MESSAGE_LENGTH) return message;
  const points = Array.from(message);
  if (points.length <= MAX_CONDITION_MESSAGE_LENGTH) return message;
  return `${points.slice(0, MAX_CONDITION_MESSAGE_LENGTH - 1).join("")}…`;
}
