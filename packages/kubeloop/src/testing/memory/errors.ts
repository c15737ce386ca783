import type { Status, StatusCause } from "../../client/index.js";

/**
 * The API server's refusals, as the Status objects kube-apiserver writes (same reason, code,
 * message wording and details), so a test that checks `error.message` or causes sees on the
 * in-memory server what it would see on a cluster. The conformance suite compares them.
 */
export class StatusError extends Error {
  override name = "StatusError";
  constructor(readonly status: Status & { code: number }) {
    super(status.message);
  }
}

/** Where a feature the in-memory server does not emulate can be tested instead. */
const REAL_CONTROL_PLANE =
  "Test it against a real API server: `new ControlPlane().start()` from kubeloop/testing (envtest's equivalent).";

/**
 * A feature the in-memory API server does not emulate faithfully. It refuses rather than answer
 * differently from kube-apiserver: a test that passed here would fail on a cluster.
 */
export class NotEmulated extends Error {
  override name = "NotEmulated";
  constructor(readonly feature: string) {
    super(`The in-memory API server does not emulate ${feature}. ${REAL_CONTROL_PLANE}`);
  }
}

function failure(code: number, reason: string, message: string, details?: Status["details"]): StatusError {
  return new StatusError({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  } as Status & { code: number });
}

/** `configmaps`, or `deployments.apps` for a grouped resource: how the server names a resource in messages. */
export function qualified(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

export function notFound(group: string, resource: string, name: string): StatusError {
  return failure(404, "NotFound", `${qualified(group, resource)} "${name}" not found`, {
    name,
    ...(group ? { group } : {}),
    kind: resource,
  });
}

export function alreadyExists(group: string, resource: string, name: string): StatusError {
  return failure(409, "AlreadyExists", `${qualified(group, resource)} "${name}" already exists`, {
    name,
    ...(group ? { group } : {}),
    kind: resource,
  });
}

export function conflict(group: string, resource: string, name: string, why: string): StatusError {
  return failure(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualified(group, resource)} "${name}": ${why}`,
    {
      name,
      ...(group ? { group } : {}),
      kind: resource,
    },
  );
}

export const STALE_OBJECT =
  "the object has been modified; please apply your changes to the latest version and try again";

export interface FieldError {
  type:
    | "FieldValueInvalid"
    | "FieldValueRequired"
    | "FieldValueNotSupported"
    | "FieldValueForbidden"
    | "FieldValueTooLong"
    | "FieldValueDuplicate"
    | "FieldValueTypeInvalid"
    | "FieldValueTooMany";
  field: string;
  /** The cause's message: `Invalid value: 200: spec.replicas in body should be …`. */
  message: string;
}

/** 422 Invalid: `Kind "name" is invalid: <field>: <message>` (several joined as `[a, b]`). */
export function invalid(
  group: string,
  kind: string,
  name: string,
  errors: FieldError[],
  shown = errors.length,
  subject?: string,
): StatusError {
  const parts = errors.slice(0, shown).map((e) => `${e.field}: ${e.message}`);
  const summary = parts.length === 1 ? parts[0] : `[${parts.join(", ")}]`;
  const qualifiedKind = group ? `${kind}.${group}` : kind;
  const causes: StatusCause[] = errors.map((e) => ({ reason: e.type, message: e.message, field: e.field }));
  return failure(422, "Invalid", `${subject ?? qualifiedKind} "${name}" is invalid: ${summary}`, {
    name,
    ...(group ? { group } : {}),
    kind,
    causes,
  });
}

export function badRequest(message: string): StatusError {
  return failure(400, "BadRequest", message);
}

export function forbidden(message: string, details?: Status["details"]): StatusError {
  return failure(403, "Forbidden", message, details);
}

export function gone(message: string): StatusError {
  return failure(410, "Expired", message);
}

export function methodNotAllowed(message: string): StatusError {
  return failure(405, "MethodNotAllowed", message);
}

export function unsupportedMediaType(message: string): StatusError {
  return failure(415, "UnsupportedMediaType", message);
}

export function internal(message: string): StatusError {
  return failure(500, "InternalError", message);
}
