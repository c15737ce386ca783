import "./node-check.js";
import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { sleep, TokenBucket } from "../util/index.js";
import type { ClusterConfig, Impersonation } from "./config.js";
import { type ApiError, apiErrorFor, ConnectionError, type Status, TooManyRequests } from "./errors.js";
import { proxyConnector } from "./proxy.js";
import { Pool } from "./undici.js";

/**
 * One pooled HTTP/1.1 connection pool per cluster (undici), with keep-alive and TLS verification on
 * by default. Ordinary calls get a response timeout (the wait for the headers, then the longest gap
 * between two body chunks); watches get no whole-request timeout, only an inactivity timeout
 * (undici's `bodyTimeout`). Either timeout is how a dead connection shows itself on HTTP/1.1 (a
 * half-open connection, as a dropped NAT entry or a load-balancer failover leaves, never errors):
 * when one fires, the pool is replaced, since the connections kept alive beside it went through
 * the same path and are likely dead too (client-go, on HTTP/2, loses every stream of the connection
 * whose PING failed, for the same reason). In-flight idempotent requests are then retried on the
 * new pool; watches resume from their last resourceVersion (the cache layer's job).
 * See docs/design/dead-connections.md. With a proxy (`config.proxy`) the same pool dials each
 * connection through it (CONNECT or SOCKS5, then TLS to the server); requests and watches then
 * never reach the server any other way.
 */

export interface TransportOptions {
  /**
   * How long an ordinary call waits for its response headers, and then for each body chunk.
   * Default {@link DEFAULT_REQUEST_TIMEOUT_MS}.
   */
  requestTimeoutMs?: number;
  /** Optional client-side rate limit. Off by default: the server's flow control is the throttle. */
  rateLimit?: { qps: number; burst: number };
  /** How many times a 429 with Retry-After is retried before it surfaces. Default 5. */
  maxRetries?: number;
  /** Called after every request, for metrics (`rest_client_requests_total`). */
  onResponse?: (info: { method: string; code: number; durationMs: number }) => void;
  /** `User-Agent` sent with every request. */
  userAgent?: string;
  /**
   * Act as another user (the authenticated user needs the `impersonate` verb), e.g. a service
   * account, to see what it may do: `{ user: "system:serviceaccount:ns:name", groups: [...] }`.
   * Replaces the kubeconfig's `as`/`as-groups`/`as-uid`/`as-user-extra` (as `kubectl --as` does).
   */
  impersonate?: Impersonation;
}

/** One request to the API server: method, path, query, body. */
export interface HttpRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
  /**
   * This call's response timeout, instead of the transport's (e.g. a Lease renewal, which must end
   * within its renew deadline). Past it the connection counts as dead, like any silent one.
   */
  timeoutMs?: number;
}

/** A request whose response is read as a stream (a watch, a streamed list). */
export interface StreamRequest extends HttpRequest {
  /** The longest silence (no bytes) before the stream is treated as dead. */
  inactivityTimeoutMs: number;
}

/** A response read whole: status, headers and the decoded body. */
export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** A streamed response: the body's bytes (or, in process, the events themselves). */
export interface StreamResponse {
  status: number;
  body: AsyncIterable<Uint8Array>;
  /** A watch's events as objects, when the transport has them so (in process): read instead of `body`. */
  events?: AsyncIterable<{ type: string; object: unknown }>;
  /** Ends the stream and releases its connection. */
  close(): void;
}

const tracer = trace.getTracer("kubeloop");

/**
 * The longest wait for an answer (headers, then each body chunk) before the connection counts as
 * dead: longer than any healthy answer (a consistent LIST of 50,000 objects starts streaming in
 * under a second; admission webhooks are capped at 30 s by the API server, and 10 s by default),
 * and short enough that a half-open connection is found within 30 s.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RETRIES = 5;
const IDEMPOTENT = new Set(["GET", "PUT", "DELETE"]);
const STALE_CONNECTION_RETRIES = 2;
/** undici's codes for a connection that broke, or went silent, under a request. */
const BROKEN_CONNECTION = new Set([
  "UND_ERR_SOCKET",
  "ECONNRESET",
  "EPIPE",
  "UND_ERR_DESTROYED",
  "UND_ERR_CLOSED",
]);
const SILENT_CONNECTION = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);
/** A Retry-After beyond this is capped: better to surface the error than to stall a worker. */
const MAX_RETRY_WAIT_MS = 30_000;

/**
 * HTTP to the API server over a pool of undici connections: auth, impersonation, proxies, per-request
 * timeouts, retries of idempotent requests on broken connections and on 429 with Retry-After.
 */
export class Transport {
  readonly server: string;
  private pool: Pool;
  private replacements = 0;
  private readonly proxy: ReturnType<typeof proxyConnector> | undefined;
  private readonly config: ClusterConfig;
  private readonly options: TransportOptions;
  private readonly bucket: TokenBucket | undefined;
  private readonly impersonation: Record<string, string | string[]> | undefined;

  constructor(config: ClusterConfig, options: TransportOptions = {}) {
    this.config = config;
    this.options = options;
    this.server = config.server;
    const url = new URL(config.server);
    this.proxy = config.proxy ? proxyConnector(config.proxy, config.tls) : undefined;
    this.origin = url.origin;
    this.pool = this.newPool();
    this.bucket = options.rateLimit
      ? new TokenBucket(options.rateLimit.qps, options.rateLimit.burst)
      : undefined;
    this.impersonation = impersonationHeaders(options.impersonate ?? config.impersonate);
  }

  private readonly origin: string;

  private newPool(): Pool {
    return new Pool(this.origin, {
      connect: this.proxy ? this.proxy.connect : { ...this.config.tls },
      // Watches hold a connection each for minutes: the pool must not cap them.
      connections: null,
      keepAliveTimeout: 30_000,
      // HTTP/1.1: measured faster for large LISTs here (50k ConfigMaps: 1.28 s vs 1.56 s over h2),
      // and the transport in which the peers had no watch leaks.
      allowH2: false,
    });
  }

  /** How many times a dead connection replaced the pool (for tests and metrics). */
  get poolReplacements(): number {
    return this.replacements;
  }

  /**
   * A request on `pool` found its connection dead (silent past its timeout): new requests go to a
   * fresh pool, and the old one is destroyed, failing what still runs on it (idempotent requests
   * are retried, watches resume). Only the first report for a pool counts.
   */
  private connectionDead(pool: Pool): void {
    if (pool !== this.pool) return;
    this.replacements++;
    this.pool = this.newPool();
    pool.destroy().catch(() => undefined);
  }

  /** The response timeout of ordinary calls, in milliseconds. */
  get requestTimeoutMs(): number {
    return this.options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /**
   * Sends a request and decodes its JSON answer; a non-2xx answer throws a typed {@link ApiError}.
   * Each call is an OpenTelemetry client span (a no-op unless the application installs an SDK).
   */
  request(request: HttpRequest): Promise<HttpResponse> {
    return tracer.startActiveSpan(
      `kubernetes ${request.method}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { "http.request.method": request.method, "url.path": request.path },
      },
      async (span) => {
        try {
          const response = await this.requestOnce(request);
          span.setAttribute("http.response.status_code", response.status);
          return response;
        } catch (error) {
          if ((error as ApiError).code)
            span.setAttribute("http.response.status_code", (error as ApiError).code);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  private async requestOnce(request: HttpRequest): Promise<HttpResponse> {
    const maxRetries = this.options.maxRetries ?? DEFAULT_MAX_RETRIES;
    const timeout = request.timeoutMs ?? this.requestTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      await this.bucket?.take();
      const started = performance.now();
      const { response, text } = await this.exchange(request, {
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      this.options.onResponse?.({
        method: request.method,
        code: response.statusCode,
        durationMs: performance.now() - started,
      });
      const body = parseJson(text);
      if (response.statusCode === 401) this.config.credentialsRejected?.();
      if (response.statusCode < 300) return { status: response.statusCode, headers: response.headers, body };
      const error = apiErrorFor(response.statusCode, asStatus(body), describe(request), text);
      const wait = retryAfterMs(error, response.headers["retry-after"]);
      if (wait !== undefined && attempt < maxRetries) {
        await sleep(wait, request.signal);
        continue;
      }
      throw error;
    }
  }

  /** Opens a streaming response (watch). A non-2xx answer throws like {@link request}. */
  async stream(request: StreamRequest): Promise<StreamResponse> {
    await this.bucket?.take();
    const response = await this.send(request, {
      headersTimeout: this.requestTimeoutMs,
      bodyTimeout: request.inactivityTimeoutMs,
    });
    const method = request.query?.watch ? "WATCH" : request.method;
    this.options.onResponse?.({ method, code: response.statusCode, durationMs: 0 });
    if (response.statusCode >= 300) {
      if (response.statusCode === 401) this.config.credentialsRejected?.();
      const text = await response.body.text();
      throw apiErrorFor(response.statusCode, asStatus(parseJson(text)), describe(request), text);
    }
    const body = response.body;
    return {
      status: response.statusCode,
      body: this.watched(body as AsyncIterable<Uint8Array>, request, response.pool),
      close: () => body.destroy(),
    };
  }

  /** A streamed body whose silence past its inactivity timeout marks its connection dead. */
  private async *watched(body: AsyncIterable<Uint8Array>, request: HttpRequest, pool: Pool) {
    try {
      yield* body;
    } catch (error) {
      throw this.failure(request, error, pool);
    }
  }

  async close(): Promise<void> {
    await this.pool.destroy();
    await this.proxy?.close();
  }

  /**
   * Sends a request and reads its whole answer. A kept-alive connection that the server closed as we
   * reused it fails before the server read the request, and a dead connection replaces the pool:
   * retrying either is safe for requests that are idempotent anyway (client-go does the same).
   */
  private async exchange(request: HttpRequest, timeouts: { headersTimeout: number; bodyTimeout: number }) {
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await this.send(request, timeouts);
        try {
          return { response, text: await response.body.text() };
        } catch (error) {
          throw this.failure(request, error, response.pool);
        }
      } catch (error) {
        const code = ((error as Error).cause as { code?: string } | undefined)?.code ?? "";
        const retryable = BROKEN_CONNECTION.has(code) || SILENT_CONNECTION.has(code);
        if (!retryable || !IDEMPOTENT.has(request.method) || attempt >= STALE_CONNECTION_RETRIES) throw error;
      }
    }
  }

  private async send(request: HttpRequest, timeouts: { headersTimeout: number; bodyTimeout: number }) {
    const accept = request.accept ?? "application/json";
    const headers: Record<string, string | string[]> = this.impersonation
      ? { ...this.impersonation, accept }
      : { accept };
    const authorization = await this.config.authorization();
    if (authorization) headers.authorization = authorization;
    if (this.options.userAgent) headers["user-agent"] = this.options.userAgent;
    // W3C trace context (a no-op unless tracing is on): an API server with tracing joins the trace,
    // and so do the webhooks it calls.
    propagation.inject(context.active(), headers);
    let payload: string | undefined;
    if (request.body !== undefined) {
      payload = typeof request.body === "string" ? request.body : JSON.stringify(request.body);
      headers["content-type"] = request.contentType ?? "application/json";
    }
    const pool = this.pool;
    try {
      const response = await pool.request({
        method: request.method,
        path: pathWithQuery(request.path, request.query),
        headers,
        ...(payload === undefined ? {} : { body: payload }),
        ...(request.signal ? { signal: request.signal } : {}),
        ...timeouts,
      });
      return Object.assign(response, { pool });
    } catch (error) {
      throw this.failure(request, error, pool);
    }
  }

  /**
   * The error to throw for a failed exchange on `pool`: a {@link ConnectionError} naming the request,
   * after marking the pool dead if the connection went silent. Aborts pass through unchanged.
   */
  private failure(request: HttpRequest, error: unknown, pool: Pool): Error {
    if ((error as Error).name === "AbortError" || error instanceof ConnectionError) return error as Error;
    const code = (error as { code?: string }).code;
    if (code && SILENT_CONNECTION.has(code)) this.connectionDead(pool);
    return new ConnectionError(
      `${describe(request)} on ${this.server} failed: ${(error as Error).message}${code ? ` (${code})` : ""}`,
      { cause: error },
    );
  }
}

export function pathWithQuery(path: string, query: HttpRequest["query"]): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

function describe(request: HttpRequest): string {
  return `${request.method} ${request.path}`;
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function asStatus(body: unknown): Status | undefined {
  return body && typeof body === "object" && (body as Status).kind === "Status"
    ? (body as Status)
    : undefined;
}

/** The server asked us to come back later (APF's 429, or a 5xx with Retry-After): how long to wait. */
function retryAfterMs(error: ApiError, header: string | string[] | undefined): number | undefined {
  const seconds =
    Number(Array.isArray(header) ? header[0] : header) ||
    (error instanceof TooManyRequests ? error.retryAfterSeconds : undefined);
  if (!(error instanceof TooManyRequests) && !(error.code >= 500 && header)) return undefined;
  return Math.min((seconds || 1) * 1000, MAX_RETRY_WAIT_MS);
}

/**
 * The `Impersonate-*` headers, built once. Extra keys are percent-encoded as the API server expects
 * (client-go: `Impersonate-Extra-` + `url.PathEscape(key)`).
 */
function impersonationHeaders(
  impersonate: Impersonation | undefined,
): Record<string, string | string[]> | undefined {
  if (!impersonate) return undefined;
  const headers: Record<string, string | string[]> = { "impersonate-user": impersonate.user };
  if (impersonate.uid) headers["impersonate-uid"] = impersonate.uid;
  if (impersonate.groups?.length) headers["impersonate-group"] = impersonate.groups;
  for (const [key, values] of Object.entries(impersonate.extra ?? {}))
    if (values.length) headers[`impersonate-extra-${encodeURIComponent(key).toLowerCase()}`] = values;
  return headers;
}
