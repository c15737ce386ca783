import { hostname } from "node:os";
import type { Logger } from "pino";
import type { Client } from "../client/index.js";
import { CertificateFolder, type ServingCertificate, selfSignedCertificate } from "../util/index.js";
import type { WebhookDefinition } from "../webhook/index.js";
import { DEFAULT_WEBHOOK_PORT, WebhookServer } from "../webhook/index.js";
import { DEFAULT_HEALTH_PROBE_PORT, HealthServer } from "./health.js";
import type { Metrics } from "./metrics.js";
import { MetricsAuthorizer } from "./metrics-auth.js";
import { DEFAULT_STALL_TIMEOUT_MS, type ManagerOptions, type MetricsServing } from "./options.js";
import type { Runnable } from "./runnables.js";
import {
  type CaBundleTarget,
  DEFAULT_RENEW_CHECK_INTERVAL_MS,
  ensureSelfIssuedCertificate,
  type SelfIssuedCertificate,
} from "./serving-certs.js";

/** The port of plain-HTTP metrics outside a cluster (controller-runtime's `:8080`). */
export const DEFAULT_METRICS_PORT = 8080;
/** kubebuilder's port for secure metrics (`--metrics-bind-address=:8443`). */
export const DEFAULT_SECURE_METRICS_PORT = 8443;
/** The port of `/healthz` and `/readyz` (kubebuilder's `:8081`). */
export const DEFAULT_PROBES_PORT = DEFAULT_HEALTH_PROBE_PORT;
const NO_HINT = { purpose: "webhook", hint: "" };
/** controller-runtime's default folder of the webhook serving certificate. */
const DEFAULT_WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs";

export interface ServersDeps {
  options: ManagerOptions;
  /** The manager's metrics, made when first asked for (only when served, or for webhooks). */
  metrics: () => Metrics;
  logger: Logger;
  client: () => Client;
  /** The namespace the operator runs in (where a self-issued webhook certificate is kept). */
  operatorNamespace: () => string;
  webhooks: readonly WebhookDefinition[];
  /** The readiness of the caches: throws naming what is not ready. */
  checkInformers: () => void;
  /** Liveness of the controllers: throws naming each whose workers took no key for `afterMs`. */
  checkProgress: (afterMs: number) => void;
  /**
   * Asked when the probes start: undefined when no controller follows its CRDs, else a reading of
   * what waits and why (undefined while none waits).
   */
  waitingControllers?: () => (() => string | undefined) | undefined;
}

/**
 * The manager's servers as runnables: `/healthz` and `/readyz`, `/metrics` (on the probes' port
 * when they share it), and the webhook server.
 */
export class ManagerServers {
  readonly metricsSecure: boolean;
  private probeServer: HealthServer | undefined;
  private metricsServer: HealthServer | undefined;
  private webhookServer: WebhookServer | undefined;
  /** The renewal checks of self-issued certificates, by purpose (`webhook`, `metrics`). */
  private readonly renewTimers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly deps: ServersDeps) {
    const { metrics } = deps.options;
    this.metricsSecure = metrics === false ? false : (metrics?.secure ?? deps.options.inCluster ?? false);
    if (this.metricsSecure && this.sharesPort)
      throw new TypeError(
        `Secure metrics (HTTPS) cannot share the probes' plain-HTTP port ${DEFAULT_PROBES_PORT}: give metrics a port of their own, or secure: false`,
      );
  }

  /** The ports the probe, metrics and webhook servers listen on (useful with port 0). */
  get ports(): { probes?: number; metrics?: number; webhooks?: number } {
    const metrics = this.metricsServer ?? (this.sharesPort ? this.probeServer : undefined);
    return {
      ...(this.probeServer ? { probes: this.probeServer.port } : {}),
      ...(metrics ? { metrics: metrics.port } : {}),
      ...(this.webhookServer ? { webhooks: this.webhookServer.port } : {}),
    };
  }

  /** The `servers` group: probes, then metrics (when on a port of their own). */
  servers(): Runnable[] {
    const { probes, metrics } = this.deps.options;
    const runnables: Runnable[] = [];
    if (probes !== false)
      runnables.push({
        name: "probe server",
        start: () => this.startProbes(),
        stop: () => this.probeServer?.close(),
      });
    if (metrics !== false && !this.sharesPort)
      runnables.push({
        name: "metrics server",
        start: () => this.startMetrics(metrics ?? {}),
        stop: () => {
          clearTimeout(this.renewTimers.get("metrics"));
          this.renewTimers.delete("metrics");
          return this.metricsServer?.close();
        },
      });
    return runnables;
  }

  /** The `webhooks` group: the webhook server, when there are webhooks. */
  webhooks(): Runnable[] {
    if (!this.deps.webhooks.length) return [];
    return [
      {
        name: "webhook server",
        start: () => this.startWebhooks(),
        stop: () => {
          clearTimeout(this.renewTimers.get("webhook"));
          this.renewTimers.delete("webhook");
          return this.webhookServer?.close();
        },
      },
    ];
  }

  private get sharesPort(): boolean {
    const { probes, metrics } = this.deps.options;
    if (probes === false || metrics === false) return false;
    const probePort = probes?.port ?? DEFAULT_PROBES_PORT;
    const metricsPort =
      metrics?.port ?? (this.metricsSecure ? DEFAULT_SECURE_METRICS_PORT : DEFAULT_METRICS_PORT);
    return probePort !== 0 && probePort === metricsPort;
  }

  private async startProbes(): Promise<void> {
    const probes = this.deps.options.probes || {};
    const server = new HealthServer({
      port: probes.port ?? DEFAULT_PROBES_PORT,
      ...(probes.host ? { host: probes.host } : {}),
      ...(this.sharesPort ? { metrics: this.deps.metrics() } : {}),
    });
    server.addHealthCheck("ping", () => {});
    const stallTimeoutMs = probes.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    if (stallTimeoutMs > 0)
      server.addHealthCheck("reconcilers", () => this.deps.checkProgress(stallTimeoutMs));
    server.addReadyCheck("informers", () => this.deps.checkInformers());
    // Passes while controllers wait for their CRDs (the rest of the manager is ready), saying so.
    const waiting = this.deps.waitingControllers?.();
    if (waiting) server.addReadyCheck("crds", () => waiting() ?? "every controller's kinds are served");
    if (this.deps.webhooks.length) {
      server.addReadyCheck("webhooks", () => {
        if (!this.webhookServer?.listening) throw new Error("the webhook server is not listening");
      });
    }
    await server.start();
    this.probeServer = server;
  }

  private async startWebhooks(): Promise<void> {
    const options = this.deps.options.webhooks || {};
    const { certDir = DEFAULT_WEBHOOK_CERT_DIR, selfIssued, ...rest } = options;
    // A mounted certificate wins; the folder is still watched, so one mounted later replaces ours.
    let issued: ServingCertificate | undefined;
    if (
      !options.cert &&
      selfIssued &&
      this.deps.options.inCluster &&
      !new CertificateFolder(certDir, NO_HINT).hasFiles()
    )
      issued = await ensureSelfIssuedCertificate(
        this.deps.client(),
        this.deps.operatorNamespace(),
        selfIssued,
        this.deps.logger,
      );
    const webhooks = new WebhookServer({
      ...rest,
      ...issued,
      port: options.port ?? DEFAULT_WEBHOOK_PORT,
      ...(options.cert ? {} : { certDir }),
      ...(options.metrics || this.deps.options.metrics !== false
        ? { metrics: options.metrics ?? this.deps.metrics().webhooks() }
        : {}),
    }).register(...this.deps.webhooks);
    await webhooks.start();
    this.webhookServer = webhooks;
    if (issued && selfIssued)
      this.keepRenewed("webhook", selfIssued, issued, (tls) => webhooks.useCertificate(tls));
    this.deps.logger.info(
      { port: webhooks.port, paths: webhooks.paths, certificate: issued ? "self-issued" : "given" },
      "webhooks serving",
    );
  }

  private async startMetrics(metrics: MetricsServing): Promise<void> {
    const secure = this.metricsSecure;
    const host = metrics.host ?? (secure || this.deps.options.inCluster ? undefined : "127.0.0.1");
    const issued = secure ? await this.selfIssuedMetrics(metrics) : undefined;
    const server = new HealthServer({
      port: metrics.port ?? (secure ? DEFAULT_SECURE_METRICS_PORT : DEFAULT_METRICS_PORT),
      metrics: this.deps.metrics(),
      probes: false,
      ...(host ? { host } : {}),
      ...(secure ? this.secureMetrics(metrics, issued) : {}),
      onError: (error) => this.deps.logger.warn({ err: error }, "metrics server"),
    });
    await server.start();
    this.metricsServer = server;
    if (issued && metrics.selfIssued)
      this.keepRenewed("metrics", metrics.selfIssued, issued, (tls) => server.useCertificate(tls));
    this.deps.logger.info(
      { port: server.port, secure, ...(host ? { host } : {}) },
      secure ? "metrics serving (HTTPS, TokenReview + SubjectAccessReview)" : "metrics serving (plain HTTP)",
    );
  }

  /**
   * Reads the shared Secret again every `renewCheckIntervalMs`: renews a certificate that expires
   * soon (one replica wins the update, the others read it) and serves what changed, so a pod
   * running for a year never serves an expired one. A failed check is logged and retried.
   */
  private keepRenewed(
    purpose: string,
    spec: SelfIssuedCertificate & { caBundles?: readonly CaBundleTarget[] },
    current: ServingCertificate,
    use: (tls: ServingCertificate) => unknown,
  ): void {
    let served = current.cert;
    // One check at a time (the next is scheduled when one ends): a slow check must not hand back
    // a certificate older than the one a later check already served.
    const schedule = () => {
      const timer = setTimeout(check, spec.renewCheckIntervalMs ?? DEFAULT_RENEW_CHECK_INTERVAL_MS);
      timer.unref();
      this.renewTimers.set(purpose, timer);
    };
    const check = () =>
      ensureSelfIssuedCertificate(this.deps.client(), this.deps.operatorNamespace(), spec, this.deps.logger, {
        purpose,
      })
        .then(
          (tls) => {
            if (tls.cert === served) return;
            served = tls.cert;
            use(tls);
            this.deps.logger.info(
              { secret: spec.secret },
              `${purpose} certificate replaced by the renewed one`,
            );
          },
          (error: unknown) =>
            this.deps.logger.warn(
              { err: error },
              `${purpose} certificate: renewal check failed, retrying later`,
            ),
        )
        .finally(() => {
          if (this.renewTimers.has(purpose)) schedule();
        });
    schedule();
  }

  /**
   * The metrics certificate issued from the CA in `selfIssued`'s Secret, when there is no mounted
   * one; undefined when not asked for or not possible (then a self-signed one serves, as before).
   */
  private async selfIssuedMetrics(serving: MetricsServing): Promise<ServingCertificate | undefined> {
    const mounted = serving.certDir && new CertificateFolder(serving.certDir, NO_HINT).hasFiles();
    if (!this.metricsSecure || !serving.selfIssued || !this.deps.options.inCluster || mounted)
      return undefined;
    try {
      return await ensureSelfIssuedCertificate(
        this.deps.client(),
        this.deps.operatorNamespace(),
        serving.selfIssued,
        this.deps.logger,
        { purpose: "metrics" },
      );
    } catch (error) {
      this.deps.logger.warn({ err: error }, "metrics: serving a self-signed certificate instead");
      return undefined;
    }
  }

  /** HTTPS with the mounted, the self-issued or a self-signed certificate, and only readers the API allows. */
  private secureMetrics(
    serving: MetricsServing,
    issued: ServingCertificate | undefined,
  ): Pick<
    ConstructorParameters<typeof HealthServer>[0] & object,
    "tls" | "authorizeMetrics" | "onCertificate"
  > {
    const { logger, metrics } = this.deps;
    const authorizer = new MetricsAuthorizer(this.deps.client(), serving.auth);
    return {
      tls: issued
        ? issued
        : serving.certDir
          ? new CertificateFolder(serving.certDir, {
              purpose: "metrics",
              hint: "mount the metrics serving certificate there, or unset METRICS_CERT_DIR for a self-signed one",
            })
          : selfSignedCertificate(["localhost", "127.0.0.1", hostname() || "kubeloop-metrics"]),
      onCertificate: (expiry) => metrics().certificateExpiry("metrics", expiry),
      authorizeMetrics: async (request) => {
        const access = await authorizer.check(
          request.headers.authorization,
          request.method ?? "GET",
          "/metrics",
        );
        if (access.allowed) return undefined;
        if (access.status === 500) logger.warn({ reason: access.reason }, "metrics: a review failed");
        return { status: access.status, reason: access.reason };
      },
    };
  }
}
