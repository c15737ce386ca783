import { createServer, type Server } from "node:https";
import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { KubeObject } from "../client/index.js";
import { versionOf } from "../resources/internal.js";
import { CertificateFolder, closeServer, expiryOf, type ServingCertificate } from "../util/index.js";
import type { WebhookDefinition } from "./define-webhooks.js";
import { jsonPatch } from "./json-patch.js";
import type { AdmissionRequest, Converters, Defaulter, Validator } from "./review.js";

export type { AdmissionRequest, Converters, Defaulter, ValidationResult, Validator } from "./review.js";

/**
 * An HTTPS server for admission webhooks (AdmissionReview v1): defaulting (the response's JSON
 * patch is computed from what the defaulter changed) and validating (deny with a message, or allow
 * with warnings that kubectl shows). TLS comes from a cert folder (`tls.crt`, `tls.key`, as
 * cert-manager writes them) and is reloaded when the files change, without a restart.
 *
 * @example
 * ```ts
 * const webhooks = new WebhookServer({ certDir: "/tmp/k8s-webhook-server/serving-certs", port: 9443 });
 * webhooks.defaulting<NginxObject>("/default-nginx", (nginx) => { nginx.spec.count ??= 1; });
 * webhooks.validating<NginxObject>("/validate-nginx", (nginx) => nginx.spec.count % 2 ? { allowed: true } : { allowed: false, message: "count must be odd" });
 * await webhooks.start();
 * ```
 */

/** Where the webhook server listens and where it takes its serving certificate from. */
export interface WebhookServerOptions {
  /** Folder with `tls.crt` and `tls.key`; watched for changes. */
  certDir?: string;
  /** Or the PEM itself (no reload); with `certDir` too, served until the folder has both files. */
  cert?: string;
  key?: string;
  /** Default 9443 (controller-runtime's); 0 picks a free port. */
  port?: number;
  host?: string;
  /** How often the cert folder is checked for new files. Default 10 s. */
  certCheckIntervalMs?: number;
  /** Metric hooks (the manager's `controller_runtime_webhook_*` and certificate expiry). */
  metrics?: WebhookMetrics;
}

/** What the webhook server reports, for metrics. */
export interface WebhookMetrics {
  /**
   * A review was answered: its path, a status code (the HTTP one; 500 for a webhook that threw,
   * though the review itself is answered with 200 and a denial) and its duration in seconds.
   */
  requested(path: string, code: number, seconds: number): void;
  /** The serving certificate in use expires at this time (seconds since the epoch); on start and reload. */
  certificateExpiry?(seconds: number): void;
}

const tracer = trace.getTracer("kubeloop");
/** How long `close()` lets the API server's reviews in flight finish before hanging up. */
const CLOSE_GRACE_MS = 5_000;

/** The port the webhook server listens on by default: controller-runtime's. */
export const DEFAULT_WEBHOOK_PORT = 9443;

interface ConversionRequest {
  uid: string;
  desiredAPIVersion: string;
  objects: KubeObject[];
}

/** Converts each object to the desired version through the hub; any error fails the whole review. */
function convert(request: ConversionRequest, converters: Converters): Record<string, unknown> {
  const desired = versionOf(request.desiredAPIVersion);
  try {
    const convertedObjects = request.objects.map((object) => {
      const from = versionOf(object.apiVersion ?? "");
      const toHub = from === converters.hub ? (o: KubeObject) => o : converters.toHub[from];
      const fromHub = desired === converters.hub ? (o: KubeObject) => o : converters.fromHub[desired];
      if (!toHub) throw new Error(`no conversion from ${from} to the hub ${converters.hub}`);
      if (!fromHub) throw new Error(`no conversion from the hub ${converters.hub} to ${desired}`);
      const converted = fromHub(toHub(structuredClone(object)));
      return { ...converted, apiVersion: request.desiredAPIVersion };
    });
    return { uid: request.uid, convertedObjects, result: { status: "Success" } };
  } catch (error) {
    return {
      uid: request.uid,
      convertedObjects: [],
      result: { status: "Failure", message: (error as Error).message },
    };
  }
}

/** One path: the review it answers, and how it answers a request (the response, `uid` included). */
interface Handler {
  review: "AdmissionReview" | "ConversionReview";
  run: (request: AdmissionRequest & ConversionRequest) => Promise<Record<string, unknown>>;
}

const REVIEW_API_VERSION = {
  AdmissionReview: "admission.k8s.io/v1",
  ConversionReview: "apiextensions.k8s.io/v1",
};

/** The message of a review the webhook failed to answer (it threw, or a conversion failed). */
function failureOf(response: Record<string, unknown>): string | undefined {
  const status = response.status as { code?: number; message?: string } | undefined;
  if (status?.code === 500) return status.message ?? "webhook error";
  const result = response.result as { status?: string; message?: string } | undefined;
  if (result?.status === "Failure") return result.message ?? "conversion failed";
  return undefined;
}

/**
 * The HTTPS server that answers the API server's AdmissionReviews and ConversionReviews: register
 * paths with `defaulting`, `validating` and `conversion`, then `start()`. The manager runs one for
 * the definitions given to `addWebhooks`.
 */
export class WebhookServer {
  private readonly handlers = new Map<string, Handler>();
  private server: Server | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private readonly certFolder: CertificateFolder | undefined;

  constructor(private readonly options: WebhookServerOptions) {
    if (!options.certDir && !(options.cert && options.key))
      throw new TypeError("WebhookServer needs certDir, or cert and key");
    if (options.certDir)
      this.certFolder = new CertificateFolder(options.certDir, {
        purpose: "webhook",
        hint: "mount the serving certificate there, or set WEBHOOK_CERT_DIR",
      });
  }

  get port(): number {
    const address = this.server?.address();
    return typeof address === "object" && address ? address.port : 0;
  }

  defaulting<T extends KubeObject>(path: string, defaulter: Defaulter<T>): this {
    return this.admission(path, async (request) => {
      const original = request.object as T;
      const copy = structuredClone(original);
      const changed = (await defaulter(copy, request as AdmissionRequest<T>)) ?? copy;
      const patch = jsonPatch(original, changed);
      return patch.length === 0
        ? { allowed: true }
        : {
            allowed: true,
            patchType: "JSONPatch",
            patch: Buffer.from(JSON.stringify(patch)).toString("base64"),
          };
    });
  }

  validating<T extends KubeObject>(path: string, validator: Validator<T>): this {
    return this.admission(path, async (request) => {
      const object = (request.operation === "DELETE" ? request.oldObject : request.object) as T;
      const result = await validator(object, request as AdmissionRequest<T>);
      return result.allowed
        ? { allowed: true, ...(result.warnings?.length ? { warnings: result.warnings } : {}) }
        : {
            allowed: false,
            status: { code: 403, message: result.message },
            ...(result.warnings?.length ? { warnings: result.warnings } : {}),
          };
    });
  }

  private admission(
    path: string,
    run: (request: AdmissionRequest) => Promise<Record<string, unknown>>,
  ): this {
    this.handlers.set(path, {
      review: "AdmissionReview",
      run: async (request) => {
        try {
          return { uid: request.uid, ...(await run(request)) };
        } catch (error) {
          // A bug in a webhook must not be mistaken for a verdict: deny with what went wrong.
          return {
            uid: request.uid,
            allowed: false,
            status: { code: 500, message: `webhook error: ${(error as Error).message}` },
          };
        }
      },
    });
    return this;
  }

  /**
   * A conversion webhook (ConversionReview v1) between the versions of a kind, through a hub:
   * every version converts to the hub and back, so n versions need 2(n−1) functions, not n².
   * Objects come and go as plain JSON; `apiVersion` is set by the server.
   */
  conversion(path: string, converters: Converters): this {
    this.handlers.set(path, {
      review: "ConversionReview",
      run: async (request) => convert(request, converters),
    });
    return this;
  }

  /** Serves what `defineWebhooks` declared, at the paths the generated configurations name. */
  register(...definitions: WebhookDefinition[]): this {
    for (const { parts, paths } of definitions) {
      if (parts.default && paths.default) this.defaulting(paths.default, parts.default);
      if (parts.validate && paths.validate) this.validating(paths.validate, parts.validate);
      if (parts.convert && paths.convert) this.conversion(paths.convert, parts.convert);
    }
    return this;
  }

  /** The paths served, for logs and readiness. */
  get paths(): string[] {
    return [...this.handlers.keys()].sort();
  }

  get listening(): boolean {
    return this.server?.listening ?? false;
  }

  async start(): Promise<void> {
    const server = createServer(this.readTls(), (req, res) => {
      // Shutting down: the API server's keep-alive connection goes once this request is answered.
      if (this.closing) res.setHeader("connection", "close");
      const path = (req.url ?? "").split("?")[0] ?? "";
      const handler = this.handlers.get(path);
      if (!handler || req.method !== "POST") {
        res.writeHead(404).end();
        return;
      }
      const started = performance.now();
      const answer = (code: number, reported = code) => {
        this.options.metrics?.requested(path, reported, (performance.now() - started) / 1000);
        return res.writeHead(code, code === 200 ? { "content-type": "application/json" } : {});
      };
      // The API server sends W3C trace context when its own tracing is on: the span joins its trace.
      const parent = propagation.extract(context.active(), req.headers);
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () =>
        tracer.startActiveSpan(
          `webhook ${path}`,
          { kind: SpanKind.SERVER, attributes: { "url.path": path, "k8s.review": handler.review } },
          parent,
          async (span) => {
            try {
              let review: { request?: AdmissionRequest & ConversionRequest };
              try {
                review = JSON.parse(Buffer.concat(chunks).toString("utf8"));
              } catch {
                answer(400).end("not JSON");
                return;
              }
              if (!review.request) {
                answer(400).end(`no request in the ${handler.review}`);
                return;
              }
              const response = await handler.run(review.request);
              const failure = failureOf(response);
              const failed = failure !== undefined;
              if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
              answer(200, failed ? 500 : 200).end(
                JSON.stringify({
                  apiVersion: REVIEW_API_VERSION[handler.review],
                  kind: handler.review,
                  response,
                }),
              );
            } finally {
              span.end();
            }
          },
        ),
      );
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port ?? DEFAULT_WEBHOOK_PORT, this.options.host ?? "0.0.0.0", () =>
        resolve(),
      );
    });
    if (this.options.certDir) {
      this.timer = setInterval(() => this.reloadIfChanged(), this.options.certCheckIntervalMs ?? 10_000);
      this.timer.unref();
    }
  }

  /**
   * Stops accepting connections and answers the reviews in flight; the API server's keep-alive
   * connections are hung up as they go quiet, and whatever is still open after 5 s. Safe to call twice.
   */
  close(): Promise<void> {
    clearInterval(this.timer);
    if (!this.server) return Promise.resolve();
    this.closing ??= closeServer(this.server, CLOSE_GRACE_MS);
    return this.closing;
  }

  /**
   * Serves `tls` to new connections from now on (a renewed certificate), unless the certificate
   * folder has files: a mounted certificate wins. True when it took it.
   */
  useCertificate(tls: ServingCertificate): boolean {
    if (!this.server || this.certFolder?.hasFiles()) return false;
    this.server.setSecureContext(tls);
    this.reportExpiry(tls);
    return true;
  }

  /** New connections get the new certificate; open ones keep theirs until they close. */
  reloadIfChanged(): boolean {
    if (!this.certFolder || !this.server) return false;
    const reloaded = this.certFolder.reloadInto(this.server);
    if (reloaded && this.certFolder.certificate) this.reportExpiry(this.certFolder.certificate);
    return reloaded;
  }

  private readTls(): ServingCertificate {
    const given = this.options.cert && this.options.key;
    const tls =
      this.certFolder && !(given && !this.certFolder.hasFiles())
        ? this.certFolder.read()
        : { cert: this.options.cert as string, key: this.options.key as string };
    this.reportExpiry(tls);
    return tls;
  }

  private reportExpiry(tls: ServingCertificate): void {
    if (this.options.metrics?.certificateExpiry) this.options.metrics.certificateExpiry(expiryOf(tls.cert));
  }
}
