/**
 * Typed API errors, built from the `Status` object the API server returns. Each carries the
 * server's own message, its reason, and for `Invalid` the field causes, so callers branch on type
 * (`error instanceof Conflict`) and users read what the server said.
 */

/** The `Status` object of a failed request (meta/v1). */
export interface Status {
  kind?: "Status";
  apiVersion?: string;
  status?: "Success" | "Failure";
  message?: string;
  reason?: string;
  code?: number;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: StatusCause[];
    retryAfterSeconds?: number;
  };
}

/** One cause of a failure in a Status (`details.causes`): for Invalid, the field and what is wrong. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** Any error response of the API server. `status` is the HTTP code; `body` the Status, if any. */
export class ApiError extends Error {
  override name = "ApiError";
  readonly code: number;
  readonly reason: string | undefined;
  readonly status: Status | undefined;
  /** The request that failed, as `VERB /path`, for logs. */
  readonly request: string;

  constructor(code: number, status: Status | undefined, request: string, fallbackMessage?: string) {
    super(status?.message || fallbackMessage || `HTTP ${code} from ${request}`);
    this.code = code;
    this.reason = status?.reason;
    this.status = status;
    this.request = request;
  }
}

/** 404: the object (or the resource type) does not exist. */
export class NotFound extends ApiError {
  override name = "NotFound";
}

/**
 * For `.catch`: `undefined` when the error is {@link NotFound}, and the error thrown again
 * otherwise, so a read of something that may be absent neither needs a `try` nor hides a refused
 * or failed request the way `.catch(() => undefined)` does.
 *
 * @example
 * ```ts
 * import { Client, ignoreNotFound, refTo } from "kubeloop";
 * import { ConfigMap } from "kubeloop/k8s";
 *
 * const client = await Client.connect();
 * const settings = await client.get(refTo(ConfigMap, "settings", "default")).catch(ignoreNotFound);
 * const color = settings?.data?.color ?? "blue"; // absent: the default; a refused read still throws
 * ```
 */
export function ignoreNotFound(error: unknown): undefined {
  if (error instanceof NotFound) return undefined;
  throw error;
}
/** 409 AlreadyExists: create of an object whose name is taken. */
export class AlreadyExists extends ApiError {
  override name = "AlreadyExists";
}
/**
 * 409 Conflict: the object changed since it was read (stale resourceVersion), or a server-side
 * apply conflicts with another field manager (see `causes`). Read again and retry, or apply with force.
 */
export class Conflict extends ApiError {
  override name = "Conflict";
  get causes(): StatusCause[] {
    return this.status?.details?.causes ?? [];
  }
}
/** 422: the object failed validation; `causes` lists each field and what is wrong with it. */
export class Invalid extends ApiError {
  override name = "Invalid";
  get causes(): StatusCause[] {
    return this.status?.details?.causes ?? [];
  }
}
/** 400: the request itself is malformed. */
export class BadRequest extends ApiError {
  override name = "BadRequest";
}
/** 401: no valid credentials. Check the kubeconfig's user, token or certificate. */
export class Unauthorized extends ApiError {
  override name = "Unauthorized";
}
/** 403: authenticated, but RBAC does not allow this verb on this resource. */
export class Forbidden extends ApiError {
  override name = "Forbidden";
}
/** 405: the resource does not support this verb. */
export class MethodNotAllowed extends ApiError {
  override name = "MethodNotAllowed";
}
/** 410: the resourceVersion is too old (compacted). A watch must relist. */
export class Gone extends ApiError {
  override name = "Gone";
}
/** 413: the request body is too large. */
export class RequestEntityTooLarge extends ApiError {
  override name = "RequestEntityTooLarge";
}
/** 415: the patch type or content type is not supported here (e.g. strategic merge on a CRD). */
export class UnsupportedMediaType extends ApiError {
  override name = "UnsupportedMediaType";
}
/** 429: the server is overloaded (API Priority and Fairness). Wait `retryAfterSeconds`. */
export class TooManyRequests extends ApiError {
  override name = "TooManyRequests";
  get retryAfterSeconds(): number | undefined {
    return this.status?.details?.retryAfterSeconds;
  }
}
/** 500: the server failed. */
export class InternalError extends ApiError {
  override name = "InternalError";
}
/** 503: the server (or etcd behind it) is not available right now. */
export class ServiceUnavailable extends ApiError {
  override name = "ServiceUnavailable";
}
/** 504, or reason Timeout: the server gave up waiting (e.g. on etcd). Retry. */
export class Timeout extends ApiError {
  override name = "Timeout";
}

const ERROR_BY_CODE: Record<number, typeof ApiError> = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  405: MethodNotAllowed,
  409: Conflict,
  410: Gone,
  413: RequestEntityTooLarge,
  415: UnsupportedMediaType,
  422: Invalid,
  429: TooManyRequests,
  503: ServiceUnavailable,
};

/**
 * Maps an HTTP code and Status to the matching error type.
 *
 * @internal for the in-memory API server of `kubeloop/testing`.
 */
export function apiErrorFor(
  code: number,
  status: Status | undefined,
  request: string,
  text?: string,
): ApiError {
  const fallback = text?.trim() ? `HTTP ${code} from ${request}: ${text.trim().slice(0, 500)}` : undefined;
  const reason = status?.reason;
  const type =
    reason === "Timeout" || code === 504
      ? Timeout
      : code === 409 && reason === "AlreadyExists"
        ? AlreadyExists
        : (ERROR_BY_CODE[code] ?? (code >= 500 ? InternalError : ApiError));
  return new type(code, status, request, fallback);
}

/** The configuration could not be loaded (no kubeconfig, a bad file, an unknown context). */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** A kind the API server does not serve (e.g. its CRD is not installed). */
export class UnknownKind extends Error {
  override name = "UnknownKind";
}

/** The API server could not be reached at all (connection refused, DNS, TLS). */
export class ConnectionError extends Error {
  override name = "ConnectionError";
}
