import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { CertificateFolder, closeServer, expiryOf, type ServingCertificate } from "../util/index.js";
import type { MetricsSource } from "./metrics.js";

/**
 * The HTTP endpoints the kubelet and Prometheus call: `/healthz` (liveness), `/readyz` (readiness)
 * and `/metrics`, on one port or on two (a second server with `probes: false`).
 *
 * Probe responses follow Kubernetes' own `/readyz` format (and controller-runtime's `pkg/healthz`):
 * `200 ok` when every check passes; otherwise `500` and one line per check, then a verdict:
 *
 * ```
 * [+]ping ok
 * [-]informers failed: Forbidden: configmaps is forbidden: User "system:serviceaccount:ops:op" cannot list …
 * readyz check failed
 * ```
 *
 * `?verbose` lists the checks on success too; `?exclude=<name>` (repeatable) skips a check;
 * `/readyz/<name>` runs one check alone (`ok`, or `500 internal server error: <reason>`).
 * Unlike Kubernetes, reasons are shown (the probe port is cluster-internal and the reason is what
 * you need when `kubectl describe pod` shows a failing probe); `withholdReasons` hides them.
 */

/**
 * A named check: return (or resolve) when healthy, throw (or reject) with the reason when not. A
 * passing check may return a note, shown in the verbose listing (`[+]crds ok: …`).
 * `signal` aborts when the check runs past its timeout.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a check that returns nothing passes, and `void` is what such a function returns
export type HealthCheck = (signal: AbortSignal) => void | string | Promise<void | string>;

/** kubebuilder's scaffold serves probes on `:8081`; its Deployment manifests and docs assume it. */
export const DEFAULT_HEALTH_PROBE_PORT = 8081;
/**
 * A check slower than this fails with "timed out". The kubelet's default probe timeout is 1 s: a
 * slower check has failed the probe anyway; this way the response still says which check hung.
 */
export const DEFAULT_CHECK_TIMEOUT_MS = 1_000;
/**
 * How long `close()` lets requests in flight (a scrape, a probe) finish before cutting their
 * connections. Both take milliseconds; this bounds shutdown if a client stalls.
 */
export const DEFAULT_CLOSE_GRACE_MS = 5_000;

/** Where the probe server listens, and the metrics it may serve beside `/healthz` and `/readyz`. */
export interface HealthServerOptions {
  /** Default {@link DEFAULT_HEALTH_PROBE_PORT}; 0 picks a free port (read it from `port` after `start`). */
  port?: number;
  /**
   * The address to bind. Default: every interface (Node's default, IPv6 and IPv4), because the
   * kubelet probes the pod's IP. `127.0.0.1` for tests and local runs.
   */
  host?: string;
  /** Serve `/metrics` from these metrics (a `Metrics`). Default: no `/metrics`. */
  metrics?: MetricsSource;
  /** Serve `/healthz` and `/readyz`. Default true; false for a metrics-only server on its own port. */
  probes?: boolean;
  /** Default {@link DEFAULT_CHECK_TIMEOUT_MS}. */
  checkTimeoutMs?: number;
  /** Answer `[-]name failed: reason withheld` (Kubernetes' choice for public endpoints). Default false. */
  withholdReasons?: boolean;
  /** Default {@link DEFAULT_CLOSE_GRACE_MS}. */
  closeGraceMs?: number;
  /** Errors of the listening server (e.g. out of file descriptors), for logs; they never crash the process. */
  onError?: (error: Error) => void;
  /**
   * Serve HTTPS with this certificate: given as PEM, or a {@link CertificateFolder} read at start
   * (an error naming the path if it cannot be) and re-read every `certCheckIntervalMs` when it
   * changes. Default: plain HTTP.
   */
  tls?: ServingCertificate | CertificateFolder;
  /** How often a certificate folder is checked for new files. Default 10 s (as the webhook server). */
  certCheckIntervalMs?: number;
  /** The certificate in use expires at this time (seconds since the epoch): at start and on reload. */
  onCertificate?: (expirySeconds: number) => void;
  /**
   * Decides who may read `/metrics` (e.g. `MetricsAuthorizer.check`): undefined to serve, or the
   * status and reason to answer with instead. Default: everyone may (probes are never guarded).
   */
  authorizeMetrics?: (request: IncomingMessage) => Promise<{ status: number; reason: string } | undefined>;
}

/** The server could not bind its address: the port is taken, not permitted, or the host unknown. */
export class ListenError extends Error {
  override name = "ListenError";
  readonly host: string;
  readonly port: number;
  /** Node's error code, e.g. `EADDRINUSE`. */
  readonly code: string | undefined;

  constructor(message: string, host: string, port: number, code: string | undefined, cause: unknown) {
    super(message, { cause });
    this.host = host;
    this.port = port;
    this.code = code;
  }
}

type Endpoint = "healthz" | "readyz";

interface CheckResult {
  name: string;
  excluded: boolean;
  error: string | undefined;
}

/**
 * Health probes and metrics over plain HTTP (node:http), or HTTPS with `tls`.
 *
 * @example
 * ```ts
 * const registry = new InformerRegistry(client);
 * const server = new HealthServer({ port: 8081, metrics });
 * server.addHealthCheck("ping", () => {});
 * server.addReadyCheck("informers", () => {
 *   const failing = registry.informers.find((informer) => informer.health.lastError);
 *   if (failing) throw failing.health.lastError;
 * });
 * await server.start(); // ListenError if the port is taken
 * // …
 * await server.close();
 * ```
 */
export class HealthServer {
  private readonly options: HealthServerOptions;
  /** What passing checks last said, by name. */
  private readonly notes = new Map<string, string>();
  private readonly checks: Record<Endpoint, Map<string, HealthCheck>> = {
    healthz: new Map(),
    readyz: new Map(),
  };
  private server: Server | HttpsServer | undefined;
  private closing: Promise<void> | undefined;
  private certTimer: NodeJS.Timeout | undefined;

  constructor(options: HealthServerOptions = {}) {
    this.options = options;
  }

  /** Adds a liveness check, served at `/healthz` and `/healthz/<name>`. A failing one gets the pod restarted. */
  addHealthCheck(name: string, check: HealthCheck): this {
    this.add("healthz", name, check);
    return this;
  }

  /** Adds a readiness check, served at `/readyz` and `/readyz/<name>`. A failing one takes the pod out of Services. */
  addReadyCheck(name: string, check: HealthCheck): this {
    this.add("readyz", name, check);
    return this;
  }

  /** The bound port (the chosen one when started with port 0). Throws before `start()`. */
  get port(): number {
    const address = this.server?.address();
    if (!address || typeof address === "string") throw new Error("The health server is not listening");
    return (address as AddressInfo).port;
  }

  /**
   * Serves `tls` to new connections from now on (open ones keep theirs): a renewed certificate.
   * Throws on a server started without `tls`. A certificate folder's next change replaces it again.
   */
  useCertificate(tls: ServingCertificate): void {
    const server = this.server;
    if (!server || !("setSecureContext" in server))
      throw new Error("useCertificate: the health server is not serving HTTPS");
    server.setSecureContext(tls);
    this.options.onCertificate?.(expiryOf(tls.cert));
  }

  /** Binds and starts serving. Rejects with a {@link ListenError} naming the address if it cannot bind. */
  async start(): Promise<void> {
    if (this.server) throw new Error("The health server was already started");
    const port = this.options.port ?? DEFAULT_HEALTH_PROBE_PORT;
    const host = this.options.host;
    const handler = (request: IncomingMessage, response: ServerResponse) => {
      this.handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) this.send(response, 500, `internal server error: ${reasonOf(error)}\n`);
        else response.destroy();
      });
    };
    const { tls } = this.options;
    let server: Server | HttpsServer;
    if (tls) {
      const certificate = tls instanceof CertificateFolder ? tls.read() : tls;
      this.options.onCertificate?.(expiryOf(certificate.cert));
      const https = createHttpsServer(certificate, handler);
      server = https;
      if (tls instanceof CertificateFolder) {
        this.certTimer = setInterval(() => {
          try {
            if (tls.reloadInto(https) && tls.certificate)
              this.options.onCertificate?.(expiryOf(tls.certificate.cert));
          } catch (error) {
            this.options.onError?.(error as Error); // keep the certificate in use; retry next time
          }
        }, this.options.certCheckIntervalMs ?? 10_000);
        this.certTimer.unref();
      }
    } else {
      server = createServer(handler);
    }
    this.server = server;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen({ port, ...(host ? { host } : {}) }, () => {
          server.off("error", reject);
          server.on("error", (error) => this.options.onError?.(error));
          resolve();
        });
      });
    } catch (error) {
      clearInterval(this.certTimer);
      this.server = undefined;
      throw listenError(error, host, port, this.serves());
    }
  }

  /** Stops accepting connections, lets requests in flight finish (up to `closeGraceMs`), then closes. Safe to call twice. */
  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    clearInterval(this.certTimer);
    // Connections with a request in flight are hung up once it is answered (see `send`).
    this.closing ??= closeServer(server, this.options.closeGraceMs ?? DEFAULT_CLOSE_GRACE_MS);
    return this.closing;
  }

  private add(endpoint: Endpoint, name: string, check: HealthCheck): void {
    if (!/^[\w.-]+$/.test(name)) {
      throw new TypeError(
        `Check name ${JSON.stringify(name)} must be letters, digits, '_', '.' or '-' (it is a URL path)`,
      );
    }
    const checks = this.checks[endpoint];
    if (checks.has(name))
      throw new Error(`A ${endpoint} check named ${JSON.stringify(name)} is already added`);
    checks.set(name, check);
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://localhost");
    const [first, second, ...rest] = url.pathname.split("/").filter(Boolean);
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.setHeader("allow", "GET, HEAD");
      this.send(response, 405, "method not allowed\n");
      return;
    }
    if (first === "metrics" && second === undefined && this.options.metrics) {
      const metrics = this.options.metrics;
      const denied = await this.options.authorizeMetrics?.(request);
      if (denied) {
        this.send(response, denied.status, `${denied.reason}\n`);
        return;
      }
      let text: string;
      try {
        text = await metrics.text();
      } catch (error) {
        this.send(response, 500, `error gathering metrics: ${reasonOf(error)}\n`);
        return;
      }
      this.send(response, 200, text, metrics.contentType);
      return;
    }
    if ((first === "healthz" || first === "readyz") && (this.options.probes ?? true) && rest.length === 0) {
      if (second === undefined) await this.serveAll(first, url.searchParams, response);
      else await this.serveOne(first, second, response);
      return;
    }
    this.send(response, 404, "404 page not found\n");
  }

  /** `/readyz`: every check, at once; `ok`, or the verbose listing with the failures. */
  private async serveAll(
    endpoint: Endpoint,
    query: URLSearchParams,
    response: ServerResponse,
  ): Promise<void> {
    const checks = this.checks[endpoint];
    const excludes = new Set(query.getAll("exclude").flatMap((value) => value.split(",")));
    const results = await Promise.all(
      [...checks].map(async ([name, check]): Promise<CheckResult> => {
        if (excludes.delete(name)) return { name, excluded: true, error: undefined };
        return { name, excluded: false, error: await this.run(name, check) };
      }),
    );
    const failed = results.some((result) => result.error !== undefined);
    if (!failed && !query.has("verbose")) {
      this.send(response, 200, "ok");
      return;
    }
    const lines = results.map(({ name, excluded, error }) => {
      if (excluded) return `[+]${name} excluded: ok`;
      if (error === undefined)
        return `[+]${name} ok${this.notes.has(name) ? `: ${this.notes.get(name)}` : ""}`;
      return `[-]${name} failed: ${this.options.withholdReasons ? "reason withheld" : error}`;
    });
    if (excludes.size > 0) {
      const unknown = [...excludes].map((name) => JSON.stringify(name)).join(", ");
      lines.push(`warn: some health checks cannot be excluded: no matches for ${unknown}`);
    }
    lines.push(`${endpoint} check ${failed ? "failed" : "passed"}`);
    this.send(response, failed ? 500 : 200, `${lines.join("\n")}\n`);
  }

  /** `/readyz/<name>`: one check alone. */
  private async serveOne(endpoint: Endpoint, name: string, response: ServerResponse): Promise<void> {
    const check = this.checks[endpoint].get(name);
    if (!check) {
      this.send(response, 404, "404 page not found\n");
      return;
    }
    const error = await this.run(name, check);
    if (error === undefined) this.send(response, 200, "ok");
    else
      this.send(
        response,
        500,
        `internal server error: ${this.options.withholdReasons ? "reason withheld" : error}\n`,
      );
  }

  /** Runs one check within the timeout; undefined when healthy, else the reason on one line. */
  private async run(name: string, check: HealthCheck): Promise<string | undefined> {
    const timeoutMs = this.options.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<string>((resolve) => {
      timer = setTimeout(() => {
        controller.abort();
        resolve(`check ${name} timed out after ${timeoutMs} ms`);
      }, timeoutMs);
    });
    const outcome = (async () => {
      try {
        // A passing check may say something (e.g. what waits, and why): shown as `[+]name ok: note`.
        const note = await check(controller.signal);
        if (typeof note === "string" && note) this.notes.set(name, note);
        else this.notes.delete(name);
        return undefined;
      } catch (error) {
        return reasonOf(error);
      }
    })();
    try {
      return await Promise.race([outcome, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  private serves(): string {
    const parts = [];
    if (this.options.probes ?? true) parts.push("health probes");
    if (this.options.metrics) parts.push("metrics");
    return parts.join(" and ") || "HTTP";
  }

  private send(response: ServerResponse, status: number, body: string, contentType = TEXT): void {
    // Closing: answer, then hang up, so `close` does not wait for this connection's keep-alive.
    if (this.closing) response.setHeader("connection", "close");
    response.writeHead(status, {
      "content-type": contentType,
      "x-content-type-options": "nosniff",
      "cache-control": "no-store",
      "content-length": Buffer.byteLength(body),
    });
    response.end(response.req.method === "HEAD" ? undefined : body);
  }
}

const TEXT = "text/plain; charset=utf-8";

/** An error as one line: `Forbidden: configmaps is forbidden: …` (the name unless it is plain `Error`). */
function reasonOf(error: unknown): string {
  const text =
    error instanceof Error
      ? error.name && error.name !== "Error"
        ? `${error.name}: ${error.message}`
        : error.message
      : String(error);
  return text.replace(/\s*\n\s*/g, " ").trim() || "failed";
}

function listenError(error: unknown, host: string | undefined, port: number, serves: string): ListenError {
  const code = (error as { code?: string }).code;
  const address = `${host ?? "*"}:${port}`;
  const hint =
    code === "EADDRINUSE"
      ? `port ${port} is already in use by another process (or another server of this one); choose another port or stop that process`
      : code === "EACCES"
        ? `binding port ${port} is not permitted (ports below 1024 need privileges); choose a port above 1023`
        : code === "EADDRNOTAVAIL" || code === "ENOTFOUND"
          ? `${host} is not an address of this machine`
          : (error as Error).message;
  return new ListenError(
    `Cannot serve ${serves} on ${address}: ${hint}${code ? ` (${code})` : ""}`,
    host ?? "",
    port,
    code,
    error,
  );
}
