import { existsSync, readFileSync } from "node:fs";
import { type Logger, pino } from "pino";
import type { Informer } from "../cache/index.js";
import { InformerRegistry, WatchForbidden } from "../cache/index.js";
import type { KubeObject } from "../client/index.js";
import { Client, loadConfig } from "../client/index.js";
import type { Controller, ControllerMetricsSink } from "../controller/index.js";
import { ApiPressure, checkNamespaces } from "../controller/index.js";
import { EventRecorder } from "../resources/index.js";
import { CertificateFolder, selfSignedCertificate } from "../util/index.js";
import type { WebhookDefinition } from "../webhook/index.js";
import { DEFAULT_WEBHOOK_PORT, WebhookServer, type WebhookServerOptions } from "../webhook/index.js";
import type { ClusterProvider, Clusters } from "./clusters.js";
import { DEFAULT_HEALTH_PROBE_PORT, HealthServer } from "./health.js";
import { LeaderElector } from "./leader-election.js";
import { Metrics } from "./metrics.js";
import { type MetricsAuthOptions, MetricsAuthorizer } from "./metrics-auth.js";
import { Sharding, type ShardingOptions } from "./sharding/index.js";
import { startTracing, type Tracing } from "./tracing.js";

/**
 * The manager runs controllers as one process: a client, shared informers, leader election,
 * health probes, Prometheus metrics, events, logs, and an orderly shutdown.
 *
 * Start-up: probes and metrics listen → informers start and sync (warm caches, also on standby
 * replicas) → leadership is won (if elected) → controllers start. Shutdown (SIGTERM/SIGINT or
 * `stop()`): controllers stop taking work and finish what they hold (up to the grace period) →
 * the lease is released → informers, events and servers close → `start()` resolves.
 *
 * @example
 * ```ts
 * import { Manager } from "kubeloop/manager";
 * await new Manager({ leaderElection: { id: "nginx-operator" } }).add(nginxController).start();
 * ```
 */

export interface ManagerOptions {
  /** A ready client; by default one is made from the kubeconfig (or the pod's service account). */
  client?: Client;
  /** The kubeconfig file to load when no client is given. */
  kubeconfig?: string;
  /**
   * The namespaces the controllers watch and reconcile in (those without `.inNamespace(s)` of
   * their own): one informer per namespace and type, read as one cache, so Roles in these
   * namespaces are all the RBAC needed (multi-tenant clusters; OLM's OwnNamespace,
   * SingleNamespace and MultiNamespace install modes). Cluster-scoped types are still watched
   * cluster-wide. Default: `$WATCH_NAMESPACE` (comma-separated, operator-sdk's convention; unset
   * or empty means all namespaces), else all namespaces.
   */
  namespaces?: string[];
  /** Elect one active replica through a Lease; `false` runs the controllers at once. Default false. */
  leaderElection?:
    | false
    | {
        /** The Lease's name, e.g. `nginx-operator`. */
        id: string;
        /** Default: `$POD_NAMESPACE`, the service account's namespace, or the kubeconfig's. */
        namespace?: string;
        /**
         * Hand the Lease back on shutdown so a standby takes over at once (controller-runtime's
         * `LeaderElectionReleaseOnCancel`). Default true: the manager stops its controllers first.
         */
        releaseOnCancel?: boolean;
        leaseDurationMs?: number;
        renewDeadlineMs?: number;
        retryPeriodMs?: number;
      };
  /**
   * Every replica active, each reconciling its share of the objects (opt-in; exclusive with
   * `leaderElection`): shard Leases, a sharder writing shard labels, label-selected informers and a
   * drain-then-assign handover. See {@link ShardingOptions} and docs/scale-out.md. Default:
   * `{ ring: $SHARDING_RING }` when that is set and `leaderElection` is not.
   */
  sharding?: ShardingOptions;
  /** `/healthz` and `/readyz`. Default port 8081 (kubebuilder's); `false` for none. */
  probes?: false | { port?: number; host?: string };
  /**
   * `/metrics`. `false` for none, and then no process and Node.js metrics are collected either.
   * Secure (HTTPS, readers authenticated by TokenReview and authorized by SubjectAccessReview, as
   * controller-runtime serves it) on port 8443 in a cluster; plain HTTP on 127.0.0.1:8080 outside
   * one (`kubeloop run`, `npm start`): see {@link MetricsServing}.
   */
  metrics?: false | MetricsServing;
  /**
   * The webhook server for `addWebhooks(…)`. Default: port `$WEBHOOK_PORT` or 9443, certificates
   * from `$WEBHOOK_CERT_DIR` or /tmp/k8s-webhook-server/serving-certs (controller-runtime's). It
   * runs on every replica, leader or not, and starts before the caches: reading a kind through
   * its conversion webhook needs it.
   */
  webhooks?: WebhookServerOptions;
  /**
   * Export traces when OpenTelemetry's environment names an endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
   * `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`…; see `startTracing`): the SDK and OTLP exporter
   * are loaded then, and only then. Default true; false leaves tracing to the application.
   */
  tracing?: boolean;
  /** A pino logger. Default: JSON on stdout at `$LOG_LEVEL` (default `info`). */
  logger?: Logger;
  /** How long informers may take to sync before start fails with their errors. Default 2 minutes. */
  cacheSyncTimeoutMs?: number;
  /** How long reconciles in flight may finish on shutdown. Default 30 s. */
  gracefulShutdownMs?: number;
  /** Stop gracefully on SIGTERM and SIGINT. Default true. */
  handleSignals?: boolean;
  /**
   * Called when leadership is lost: reconciling has already stopped. Default: log and exit the
   * process with code 1, so the pod restarts as a standby (controller-runtime does the same).
   */
  onLeadershipLost?: (error: Error) => void;
}

/** Where and how `/metrics` is served. */
export interface MetricsServing {
  /**
   * Default {@link DEFAULT_SECURE_METRICS_PORT} (kubebuilder's) when secure, else
   * {@link DEFAULT_METRICS_PORT}; the probes' port to share it (plain HTTP only); 0 for a free port.
   */
  port?: number;
  /**
   * The address to bind. Default: every interface when secure or in a cluster (Prometheus scrapes
   * the pod's IP); 127.0.0.1 for plain HTTP outside one, so unauthenticated metrics stay on the machine.
   */
  host?: string;
  /**
   * HTTPS, and only callers the API allows `get` on the non-resource URL `/metrics` (the
   * `metrics-reader` ClusterRole) may read; the manager's service account needs `create` on
   * tokenreviews and subjectaccessreviews (`kubeloop generate` binds it). Default:
   * `$METRICS_SECURE` (`true`/`false`), else true in a cluster (`$KUBERNETES_SERVICE_HOST` set,
   * as client-go detects it) and false outside one: a developer's `curl localhost:8080/metrics`
   * just works, a pod's metrics are never open to the cluster network.
   */
  secure?: boolean;
  /**
   * The serving certificate's folder (`tls.crt`, `tls.key`; a mounted Secret), re-read when it
   * changes. Default `$METRICS_CERT_DIR`; unset, a self-signed certificate is made at start
   * (the generated ServiceMonitor then skips verification, as kubebuilder's does).
   */
  certDir?: string;
  /** The review caches' TTLs and timeout (defaults: controller-runtime's). */
  auth?: MetricsAuthOptions;
}

/** controller-runtime's CacheSyncTimeout default. */
export const DEFAULT_CACHE_SYNC_TIMEOUT_MS = 120_000;
/** controller-runtime's GracefulShutdownTimeout default. */
export const DEFAULT_GRACEFUL_SHUTDOWN_MS = 30_000;
/** How often a shutdown step that has not ended is named in a warning. */
const SHUTDOWN_STEP_WARNING_MS = 5_000;
/** The port of plain-HTTP metrics outside a cluster (controller-runtime's `:8080`). */
export const DEFAULT_METRICS_PORT = 8080;
/** kubebuilder's port for secure metrics (`--metrics-bind-address=:8443`). */
export const DEFAULT_SECURE_METRICS_PORT = 8443;
/** The port of `/healthz` and `/readyz` (kubebuilder's `:8081`). */
export const DEFAULT_PROBES_PORT = DEFAULT_HEALTH_PROBE_PORT;

/**
 * The namespaces of operator-sdk's `WATCH_NAMESPACE` (`a,b,c`; blanks around names ignored);
 * `undefined` for all namespaces (unset or empty). A malformed name is an error naming it.
 *
 * @example
 * ```ts
 * watchNamespaces("team-a, team-b"); // ["team-a", "team-b"]
 * watchNamespaces(""); // undefined: all namespaces
 * ```
 */
export function watchNamespaces(value: string | undefined): readonly string[] | undefined {
  const names = (value ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  return names.length ? checkNamespaces(names, `WATCH_NAMESPACE="${value}"`) : undefined;
}

/**
 * Runs controllers and webhooks as one operator process: shared informers, leader election or
 * sharding, health probes, metrics, and a graceful shutdown on SIGTERM. `add(...)`, then `start()`.
 */
export class Manager {
  readonly logger: Logger;
  readonly metrics: Metrics;
  private readonly options: ManagerOptions;
  /** The namespaces watched by controllers without their own; `undefined` for all. */
  readonly namespaces: readonly string[] | undefined;
  private readonly controllers: Controller<KubeObject>[] = [];
  private readonly recorders: EventRecorder[] = [];
  private readonly webhookDefinitions: WebhookDefinition[] = [];
  private webhookServer: WebhookServer | undefined;
  private probeServer: HealthServer | undefined;
  private metricsServer: HealthServer | undefined;
  private clientInstance: Client | undefined;
  private ownsClient = false;
  private registryInstance: InformerRegistry | undefined;
  private elector: LeaderElector | undefined;
  private shardingInstance: Sharding | undefined;
  private readonly clusterSets: { clusters: Clusters; provider: ClusterProvider }[] = [];
  /**
   * `sharding`, else `$SHARDING_RING` (what `kubeloop generate --sharding` deploys) when leader
   * election is not asked for; the shard id is then `$POD_NAME`.
   */
  private readonly shardingOptions: ShardingOptions | undefined;
  /** 429s and latency of the manager's client, for controllers with adaptive workers. */
  private readonly apiPressure = new ApiPressure();
  private tracing: Tracing | undefined;
  private controllersStarted = false;
  private stopping: Promise<void> | undefined;
  private resolveStopped!: () => void;
  private readonly stopped = new Promise<void>((resolve) => {
    this.resolveStopped = resolve;
  });
  private resolveReady!: () => void;
  /** Resolves once the caches have synced and the controllers run (as leader, if elected). */
  readonly ready = new Promise<void>((resolve) => {
    this.resolveReady = resolve;
  });

  constructor(options: ManagerOptions = {}) {
    this.options = options;
    const ring = process.env.SHARDING_RING;
    this.shardingOptions = options.sharding ?? (ring && !options.leaderElection ? { ring } : undefined);
    if (options.sharding && options.leaderElection)
      throw new TypeError(
        "Give the manager either leaderElection (one active replica) or sharding (all replicas active), not both",
      );
    this.namespaces = options.namespaces
      ? checkNamespaces(options.namespaces, "Manager namespaces")
      : watchNamespaces(process.env.WATCH_NAMESPACE);
    this.logger = options.logger ?? pino({ level: process.env.LOG_LEVEL ?? "info" });
    // Unserved, the process and Node.js collectors (event-loop and GC observers) would only cost.
    this.metrics = new Metrics({ defaultMetrics: options.metrics !== false });
    this.metricsSecure = options.metrics === false ? false : metricsSecure(options.metrics?.secure);
    if (this.metricsSecure && this.sharesPort)
      throw new TypeError(
        `Secure metrics (HTTPS) cannot share the probes' plain-HTTP port ${DEFAULT_PROBES_PORT}: give metrics a port of their own, or secure: false`,
      );
  }

  /** Whether `/metrics` is served over HTTPS behind TokenReview and SubjectAccessReview. */
  readonly metricsSecure: boolean;

  get client(): Client {
    if (!this.clientInstance) throw new Error("The manager has not started: no client yet");
    return this.clientInstance;
  }

  get registry(): InformerRegistry {
    if (!this.registryInstance) throw new Error("The manager has not started: no informers yet");
    return this.registryInstance;
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

  private get sharesPort(): boolean {
    const probes = this.options.probes;
    const metrics = this.options.metrics;
    if (probes === false || metrics === false) return false;
    const probePort = probes?.port ?? DEFAULT_PROBES_PORT;
    const metricsPort =
      metrics?.port ?? (this.metricsSecure ? DEFAULT_SECURE_METRICS_PORT : DEFAULT_METRICS_PORT);
    return probePort !== 0 && probePort === metricsPort;
  }

  /** This replica's sharding (shard id, sharder), when `sharding` is set and the manager has started. */
  get sharding(): Sharding | undefined {
    return this.shardingInstance;
  }

  get isLeader(): boolean {
    return this.elector ? this.elector.isLeader : this.controllersStarted;
  }

  add<T extends KubeObject>(controller: Controller<T>): this {
    if (this.controllers.some((c) => c.name === controller.name)) {
      throw new Error(
        `A controller named "${controller.name}" was already added: give each a unique .named(…)`,
      );
    }
    this.controllers.push(controller as unknown as Controller<KubeObject>);
    return this;
  }

  /**
   * Runs `clusters` (its per-cluster controllers, caches and health probes) with the controllers:
   * engaged from `provider` when they start (as leader, if elected), stopped before the Lease is
   * released. See `clusters.ts`.
   */
  addClusters(clusters: Clusters, provider: ClusterProvider): this {
    this.clusterSets.push({ clusters, provider });
    return this;
  }

  /** Serves these webhooks (see `defineWebhooks`) from the manager's webhook server. */
  addWebhooks(...definitions: WebhookDefinition[]): this {
    this.webhookDefinitions.push(...definitions);
    return this;
  }

  /** Runs until stopped (signal or `stop()`); rejects if start-up fails. */
  async start(): Promise<void> {
    if (this.options.handleSignals ?? true) this.handleSignals();
    try {
      if (this.options.tracing ?? true) {
        const election = this.options.leaderElection;
        this.tracing = await startTracing(this.logger, election ? { serviceName: election.id } : {});
      }
      await this.startUp();
    } catch (error) {
      this.logger.error({ err: error }, "manager failed to start");
      await this.stop();
      throw error;
    }
    await this.stopped;
  }

  /** Stops gracefully; safe to call more than once. */
  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async startUp(): Promise<void> {
    const client = await this.makeClient();
    const registry = new InformerRegistry(client);
    this.registryInstance = registry;
    await this.startServers();
    const sharding = this.shardingOptions;
    if (sharding) {
      this.shardingInstance = new Sharding(sharding, {
        client,
        registry,
        logger: this.logger,
        namespace: sharding.namespace ?? defaultNamespace(client),
        types: this.controllers.map((c) => ({
          type: c.spec.primary,
          namespaces: c.spec.namespaces ?? this.namespaces,
        })),
        childTypes: this.controllers.flatMap((c) =>
          c.spec.owns.map((owned) => ({
            type: owned.type,
            namespaces: c.spec.namespaces ?? this.namespaces,
          })),
        ),
        metrics: (lease) => this.metrics.leaderElection(lease),
      });
    }
    for (const controller of this.controllers) {
      const recorder = new EventRecorder(client, {
        reportingController: controller.name,
        onError: (error) =>
          this.logger.warn({ err: error, controller: controller.name }, "could not record an event"),
      });
      this.recorders.push(recorder);
      controller.prepare({
        client,
        registry,
        namespaces: this.namespaces,
        logger: this.logger,
        events: recorder,
        metrics: this.controllerHooks(controller),
        ...(this.shardingInstance ? { shard: this.shardingInstance.member } : {}),
        apiPressure: this.apiPressure,
      });
    }
    this.logger.info(
      { namespaces: this.namespaces ?? "all" },
      this.namespaces ? `watching namespaces ${this.namespaces.join(", ")}` : "watching all namespaces",
    );
    // A failing list or watch (above all a Forbidden one: a namespace without its Role) is logged
    // each time it is retried, naming the namespace and the grant that is missing.
    for (const informer of registry.informers) {
      informer.onError((error) =>
        this.logger.warn(
          { err: error, kind: informer.type.kind, namespace: informer.namespace },
          `${describeInformer(informer)}: list/watch error; retrying with backoff`,
        ),
      );
    }
    this.metrics.observeInformers(() =>
      registry.informers.map((informer) => ({
        kind: informer.type.kind,
        namespace: informer.namespace ?? "",
        healthy: informer.health.synced && !informer.health.lastError,
      })),
    );
    await this.waitForSync(registry);
    this.logger.info({ informers: registry.informers.length }, "caches synced");
    if (this.shardingInstance) {
      this.shardingInstance.start(
        () => this.startControllers(),
        (error) => void this.leadershipLost(error),
      );
      return;
    }
    const election = this.options.leaderElection;
    if (!election) {
      this.startControllers();
      return;
    }
    const namespace = election.namespace ?? defaultNamespace(client);
    this.elector = new LeaderElector({
      client,
      id: election.id,
      namespace,
      releaseOnCancel: election.releaseOnCancel ?? true,
      ...(election.leaseDurationMs ? { leaseDurationMs: election.leaseDurationMs } : {}),
      ...(election.renewDeadlineMs ? { renewDeadlineMs: election.renewDeadlineMs } : {}),
      ...(election.retryPeriodMs ? { retryPeriodMs: election.retryPeriodMs } : {}),
      metrics: this.metrics.leaderElection(election.id),
      onStartedLeading: () => {
        this.logger.info(
          { lease: `${namespace}/${election.id}`, identity: this.elector?.identity },
          "became leader",
        );
        this.startControllers();
      },
      onNewLeader: (identity) => this.logger.info({ leader: identity }, "new leader elected"),
      onStoppedLeading: (event) => {
        if (event.lost) void this.leadershipLost(event.error);
      },
      onError: (error) => this.logger.warn({ err: error }, "leader election"),
    });
    this.logger.info(
      { lease: `${namespace}/${election.id}`, identity: this.elector.identity },
      "waiting for leadership",
    );
    void this.elector.run();
  }

  private async makeClient(): Promise<Client> {
    if (this.options.client) {
      this.clientInstance = this.options.client;
      return this.options.client;
    }
    const config = await loadConfig(this.options.kubeconfig ? { kubeconfig: this.options.kubeconfig } : {});
    const counted = this.metrics.restClient(config.server);
    this.clientInstance = new Client(config, {
      onResponse: (info) => {
        counted(info);
        this.apiPressure.record(info);
      },
    });
    this.ownsClient = true;
    this.logger.info({ server: config.server, source: config.source }, "connected");
    return this.clientInstance;
  }

  private async startServers(): Promise<void> {
    const { probes, metrics } = this.options;
    if (probes !== false) {
      const server = new HealthServer({
        port: probes?.port ?? DEFAULT_PROBES_PORT,
        ...(probes?.host ? { host: probes.host } : {}),
        ...(this.sharesPort ? { metrics: this.metrics } : {}),
      });
      server.addHealthCheck("ping", () => {});
      server.addReadyCheck("informers", () => this.checkInformers());
      if (this.webhookDefinitions.length) {
        server.addReadyCheck("webhooks", () => {
          if (!this.webhookServer?.listening) throw new Error("the webhook server is not listening");
        });
      }
      await server.start();
      this.probeServer = server;
    }
    if (this.webhookDefinitions.length) {
      const options = this.options.webhooks ?? {};
      const webhooks = new WebhookServer({
        ...options,
        port: options.port ?? Number(process.env.WEBHOOK_PORT || DEFAULT_WEBHOOK_PORT),
        ...(options.cert ? {} : { certDir: options.certDir ?? defaultCertDir() }),
        metrics: options.metrics ?? this.metrics.webhooks(),
      }).register(...this.webhookDefinitions);
      await webhooks.start();
      this.webhookServer = webhooks;
      this.logger.info({ port: webhooks.port, paths: webhooks.paths }, "webhooks serving");
    }
    if (metrics !== false && !this.sharesPort) {
      const secure = this.metricsSecure;
      const host = metrics?.host ?? (secure || inCluster() ? undefined : "127.0.0.1");
      const server = new HealthServer({
        port: metrics?.port ?? (secure ? DEFAULT_SECURE_METRICS_PORT : DEFAULT_METRICS_PORT),
        metrics: this.metrics,
        probes: false,
        ...(host ? { host } : {}),
        ...(secure ? this.secureMetrics(metrics ?? {}) : {}),
        onError: (error) => this.logger.warn({ err: error }, "metrics server"),
      });
      await server.start();
      this.metricsServer = server;
      this.logger.info(
        { port: server.port, secure, ...(host ? { host } : {}) },
        secure
          ? "metrics serving (HTTPS, TokenReview + SubjectAccessReview)"
          : "metrics serving (plain HTTP)",
      );
    }
  }

  /** HTTPS with the mounted or a self-signed certificate, and only readers the API allows. */
  private secureMetrics(
    serving: MetricsServing,
  ): Pick<
    ConstructorParameters<typeof HealthServer>[0] & object,
    "tls" | "authorizeMetrics" | "onCertificate"
  > {
    const certDir = serving.certDir ?? process.env.METRICS_CERT_DIR;
    const authorizer = new MetricsAuthorizer(this.client, serving.auth);
    return {
      tls: certDir
        ? new CertificateFolder(certDir, {
            purpose: "metrics",
            hint: "mount the metrics serving certificate there, or unset METRICS_CERT_DIR for a self-signed one",
          })
        : selfSignedCertificate(["localhost", "127.0.0.1", process.env.HOSTNAME || "kubeloop-metrics"]),
      onCertificate: (expiry) => this.metrics.certificateExpiry("metrics", expiry),
      authorizeMetrics: async (request) => {
        const access = await authorizer.check(
          request.headers.authorization,
          request.method ?? "GET",
          "/metrics",
        );
        if (access.allowed) return undefined;
        if (access.status === 500) this.logger.warn({ reason: access.reason }, "metrics: a review failed");
        return { status: access.status, reason: access.reason };
      },
    };
  }

  /**
   * Ready means: every informer synced and its watch healthy (a Forbidden watch is not ready). All
   * failures are named, so with one informer per namespace each namespace missing a Role shows.
   */
  private checkInformers(): void {
    const failures: string[] = [];
    for (const informer of this.registryInstance?.informers ?? []) {
      const { synced, lastError } = informer.health;
      if (lastError || !synced) failures.push(informerProblem(informer, "not synced yet"));
    }
    if (failures.length) throw new Error(failures.join("; "));
  }

  private async waitForSync(registry: InformerRegistry): Promise<void> {
    const timeoutMs = this.options.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    const result = await Promise.race([registry.waitForSync(), timeout]);
    clearTimeout(timer);
    if (result !== "timeout") return;
    const causes = registry.informers
      .filter((informer) => !informer.isSynced)
      .map((informer) => informerProblem(informer, "no answer from the API server"));
    throw new Error(`Caches did not sync within ${timeoutMs / 1000}s:\n  ${causes.join("\n  ")}`);
  }

  private startControllers(): void {
    if (this.controllersStarted || this.stopping) return;
    this.controllersStarted = true;
    for (const controller of this.controllers) controller.start();
    for (const { clusters, provider } of this.clusterSets) void clusters.start(provider);
    this.logger.info({ controllers: this.controllers.map((c) => c.name) }, "controllers started");
    this.resolveReady();
  }

  /** Leadership is gone: another replica may already act, so stop reconciling now, without grace. */
  private async leadershipLost(error: Error): Promise<void> {
    this.logger.error({ err: error }, "leadership lost; stopping");
    await Promise.all(this.controllers.map((c) => c.stop(0)));
    const handler =
      this.options.onLeadershipLost ??
      (() => {
        process.exit(1);
      });
    handler(error);
  }

  private async shutDown(): Promise<void> {
    this.logger.info("shutting down");
    const grace = this.options.gracefulShutdownMs ?? DEFAULT_GRACEFUL_SHUTDOWN_MS;
    await this.shutdownStep("controllers", Promise.all(this.controllers.map((c) => c.stop(grace))));
    await this.shutdownStep("clusters", Promise.all(this.clusterSets.map(({ clusters }) => clusters.stop())));
    await this.shutdownStep("leader election", this.elector?.stop());
    await this.shutdownStep("sharding", this.shardingInstance?.stop());
    await this.shutdownStep("informers", this.registryInstance?.stopAll());
    await this.shutdownStep("event recorders", Promise.all(this.recorders.map((r) => r.close())));
    await this.shutdownStep(
      "servers",
      Promise.all([this.probeServer?.close(), this.metricsServer?.close(), this.webhookServer?.close()]),
    );
    if (this.ownsClient) await this.shutdownStep("client", this.clientInstance?.close());
    await this.shutdownStep("tracing", this.tracing?.flush());
    this.logger.info("stopped");
    this.resolveStopped();
  }

  /**
   * One step of the shutdown; every 5 s it has not ended, a warning names it, so a shutdown that
   * hangs (and ends in the kubelet's SIGKILL) says what it was waiting for.
   */
  private async shutdownStep(step: string, done: Promise<unknown> | undefined): Promise<void> {
    if (!done) return;
    const started = performance.now();
    const timer = setInterval(() => {
      const seconds = Math.round((performance.now() - started) / 1000);
      this.logger.warn({ step, seconds }, "shutdown still waiting");
    }, SHUTDOWN_STEP_WARNING_MS);
    try {
      await done;
    } finally {
      clearInterval(timer);
    }
  }

  private controllerHooks(controller: Controller<KubeObject>): ControllerMetricsSink {
    const metrics = this.metrics.controller(controller.name);
    const queue = this.metrics.workqueue(controller.name);
    let active = 0;
    return {
      queue,
      reconciled: (result, seconds) =>
        metrics.reconciled(result === "terminal" ? "terminal_error" : result, seconds),
      panicked: () => metrics.panicked(),
      timedOut: () => metrics.timedOut(),
      activeWorkers: (delta) => {
        active += delta;
        metrics.workers(active);
      },
      maxConcurrent: (value) => metrics.maxConcurrent(value),
      registerQueue: (workqueue) => {
        queue.observe(workqueue);
      },
    };
  }

  private handleSignals(): void {
    const onSignal = (signal: NodeJS.Signals) => {
      this.logger.info({ signal }, "signal received");
      void this.stop();
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
    void this.stopped.then(() => {
      process.removeListener("SIGTERM", onSignal);
      process.removeListener("SIGINT", onSignal);
    });
  }
}

/** `Kind (apiVersion)`, and the namespace of a namespace-scoped informer, for probes and logs. */
function describeInformer(informer: Informer<KubeObject>): string {
  const name = `${informer.type.kind} (${informer.type.apiVersion})`;
  return informer.namespace ? `${name} in namespace "${informer.namespace}"` : name;
}

/** What keeps an informer from being ready, naming it (a WatchForbidden's message already does). */
function informerProblem(informer: Informer<KubeObject>, otherwise: string): string {
  const error = informer.health.lastError;
  if (error instanceof WatchForbidden) return error.message;
  return `${describeInformer(informer)}: ${error?.message ?? otherwise}`;
}

const SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** The namespace an operator runs in: the Downward API's, the service account's, or the kubeconfig's. */
function defaultNamespace(client: Client): string {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  if (existsSync(SERVICE_ACCOUNT_NAMESPACE)) return readFileSync(SERVICE_ACCOUNT_NAMESPACE, "utf8").trim();
  return client.defaultNamespace;
}

/** In a pod: client-go's test for in-cluster config. */
function inCluster(): boolean {
  return Boolean(process.env.KUBERNETES_SERVICE_HOST);
}

/** The `secure` option, else `$METRICS_SECURE`, else whether we run in a cluster. */
function metricsSecure(option: boolean | undefined): boolean {
  if (option !== undefined) return option;
  const value = process.env.METRICS_SECURE;
  if (value === undefined || value === "") return inCluster();
  if (value === "true") return true;
  if (value === "false") return false;
  throw new TypeError(`METRICS_SECURE="${value}" must be "true" or "false"`);
}

function defaultCertDir(): string {
  return process.env.WEBHOOK_CERT_DIR || "/tmp/k8s-webhook-server/serving-certs";
}
