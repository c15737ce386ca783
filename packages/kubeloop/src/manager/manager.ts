import { existsSync, readFileSync } from "node:fs";
import { type Logger, pino } from "pino";
import { InformerRegistry } from "../cache/index.js";
import type { KubeObject } from "../client/index.js";
import { Client, keyOfRef, loadConfig } from "../client/index.js";
import type { Controller } from "../controller/index.js";
import { ApiPressure, checkNamespaces } from "../controller/internal.js";
import type { EventRecorder } from "../resources/index.js";
import type { WebhookDefinition } from "../webhook/index.js";
import type { ClusterProvider, Clusters } from "./clusters.js";
import {
  checkInformers,
  logInformerErrors,
  type ManagerParts,
  prepareController,
  prepareControllers,
  waitForSync,
} from "./controllers.js";
import { CrdFollower } from "./crd-follower.js";
import { LeaderElector } from "./leader-election.js";
import { Metrics } from "./metrics.js";
import { type ManagerOptions, optionsFromEnv, withDefaults } from "./options.js";
import { type Runnable, type RunnableGroup, RunnableGroups } from "./runnables.js";
import { ManagerServers } from "./servers.js";
import { Sharding } from "./sharding/index.js";
import { startTracing, type Tracing } from "./tracing.js";

export type { ManagerOptions, ManagerWebhookOptions, MetricsServing } from "./options.js";
export { DEFAULT_STALL_TIMEOUT_MS, optionsFromEnv, parseWorkers, watchNamespaces } from "./options.js";
export { DEFAULT_METRICS_PORT, DEFAULT_PROBES_PORT, DEFAULT_SECURE_METRICS_PORT } from "./servers.js";

/** controller-runtime's CacheSyncTimeout default. */
export const DEFAULT_CACHE_SYNC_TIMEOUT_MS = 120_000;
/** controller-runtime's GracefulShutdownTimeout default. */
export const DEFAULT_GRACEFUL_SHUTDOWN_MS = 30_000;

/**
 * Runs controllers and webhooks as one operator process: shared informers, leader election or
 * sharding, health probes, metrics, and a graceful shutdown on SIGTERM. `add(...)`, then `start()`.
 *
 * Everything it runs is a runnable in a group (runnables.ts), started in this order and stopped in
 * the reverse one: `servers` (probes, metrics) → `webhooks` → `caches` (informers start and sync,
 * also on standby replicas) → `always` → leadership is won (if elected) → `leader` (each
 * controller, each cluster set). Shutdown (SIGTERM/SIGINT or `stop()`): the `leader` group stops
 * (controllers finish what they hold, up to the grace period) → the Lease is released → the other
 * groups stop → the client closes → `start()` resolves. `addRunnable` adds components of your own
 * to a group.
 *
 * Controllers, cluster sets and runnables may also be added after `start()`: one added to a group
 * that runs starts at once (a controller once its own informers have synced), one added to a group
 * not started yet starts with it; once the manager is stopping, adding throws. Webhooks are served
 * from the start only (`addWebhooks` after `start()` throws). A runnable that fails (its
 * `context.fail(error)`, or a `start()` that rejects after start-up) stops the manager, and
 * `start()` then rejects with that error: a process whose main awaits it exits non-zero.
 *
 * @example
 * ```ts
 * import { Manager } from "kubeloop/manager";
 * await new Manager({ leaderElection: { id: "nginx-operator" } }).add(nginxController).start();
 * ```
 */
export class Manager {
  readonly logger: Logger;
  private metricsInstance: Metrics | undefined;
  private readonly options: ManagerOptions;
  /** The namespaces watched by controllers without their own; `undefined` for all. */
  readonly namespaces: readonly string[] | undefined;
  private readonly controllers: Controller<KubeObject>[] = [];
  /** Controllers that follow their CRDs (`.followsCrds()`): started and stopped as their kinds come and go. */
  private readonly followers: CrdFollower[] = [];
  private readonly recorders: EventRecorder[] = [];
  private readonly webhookDefinitions: WebhookDefinition[] = [];
  private readonly servers: ManagerServers;
  private readonly runnables: RunnableGroups;
  private clientInstance: Client | undefined;
  private ownsClient = false;
  private registryInstance: InformerRegistry | undefined;
  private elector: LeaderElector | undefined;
  private shardingInstance: Sharding | undefined;
  /** 429s and latency of the manager's client, for controllers with adaptive workers. */
  private readonly apiPressure = new ApiPressure();
  private tracing: Tracing | undefined;
  private leading = false;
  /** Leadership was lost: the controllers stop without grace. */
  private lost = false;
  private stopping: Promise<void> | undefined;
  /** The first runnable failure: `start()` rejects with it once the manager has stopped. */
  private failure: Error | undefined;
  /** The controllers added so far have been prepared: one added now is prepared when added. */
  private controllersPrepared = false;
  private resolveStopped!: () => void;
  private readonly stopped = new Promise<void>((resolve) => {
    this.resolveStopped = resolve;
  });
  private resolveReady!: () => void;
  /** Resolves once the caches have synced and the controllers run (as leader, if elected). */
  readonly ready = new Promise<void>((resolve) => {
    this.resolveReady = resolve;
  });

  /** `options` over the environment's ({@link optionsFromEnv}): what is given wins. */
  constructor(options: ManagerOptions = {}) {
    if (options.sharding && options.leaderElection)
      throw new TypeError(
        "Give the manager either leaderElection (one active replica) or sharding (all replicas active), not both",
      );
    const resolved = withDefaults(options, optionsFromEnv());
    this.options = resolved;
    // Given, they are checked here; from WATCH_NAMESPACE, optionsFromEnv has checked them.
    this.namespaces = options.namespaces
      ? checkNamespaces(options.namespaces, "Manager namespaces")
      : resolved.namespaces;
    this.logger = resolved.logger ?? pino({ level: resolved.logLevel ?? "info" });
    this.runnables = new RunnableGroups(this.logger, (name, error) => this.fail(name, error));
    this.servers = new ManagerServers({
      options: resolved,
      metrics: () => this.metrics,
      logger: this.logger,
      client: () => this.client,
      operatorNamespace: () => this.operatorNamespace(this.client),
      webhooks: this.webhookDefinitions,
      checkInformers: () => this.checkInformers(),
      waitingControllers: () => waitingFor(this.followers),
      checkProgress: (afterMs) => {
        const stalled = this.controllers.flatMap((c) => c.stalled(afterMs) ?? []);
        if (stalled.length) throw new Error(stalled.join("; "));
      },
    });
    this.metricsSecure = this.servers.metricsSecure;
    for (const runnable of this.servers.servers()) this.runnables.add("servers", runnable);
    this.runnables.add("caches", {
      name: "informers",
      start: () =>
        waitForSync(
          this.registry.informers,
          this.options.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS,
        ),
      stop: async () => {
        await this.registryInstance?.stopAll();
      },
    });
    this.runnables.add("caches", {
      name: "event recorders",
      start: () => {},
      stop: async () => {
        await Promise.all(this.recorders.map((r) => r.close()));
      },
    });
  }

  /** Whether `/metrics` is served over HTTPS behind TokenReview and SubjectAccessReview. */
  readonly metricsSecure: boolean;

  /**
   * The operator's Prometheus metrics (controller-runtime's series), made at first use. With
   * `metrics: false` nothing records into them unless they were read before `start()` (and
   * prom-client is not loaded at all otherwise).
   */
  get metrics(): Metrics {
    // Unserved, the process and Node.js collectors (event-loop and GC observers) would only cost.
    this.metricsInstance ??= new Metrics({ defaultMetrics: this.options.metrics !== false });
    return this.metricsInstance;
  }

  /** What the manager's parts record into: nothing when metrics are off and nobody asked for them. */
  private get recording(): Metrics | undefined {
    return this.options.metrics === false ? this.metricsInstance : this.metrics;
  }

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
    return this.servers.ports;
  }

  /** This replica's sharding (shard id, sharder), when `sharding` is set and the manager has started. */
  get sharding(): Sharding | undefined {
    return this.shardingInstance;
  }

  get isLeader(): boolean {
    return this.elector ? this.elector.isLeader : this.leading;
  }

  /**
   * Runs `controller` in the `leader` group. Added after `start()`, it is prepared at once (its
   * informers start through the shared registry) and starts once they have synced, if this replica
   * leads; not with `sharding`, whose informers are chosen at start.
   */
  add<T extends KubeObject>(controller: Controller<T>): this {
    if (this.controllersPrepared && this.options.sharding)
      throw new Error(
        `Cannot add controller "${controller.name}" after start() with sharding: the shards' types are fixed at start. Add it before start().`,
      );
    if (
      this.controllers.some((c) => c.name === controller.name) ||
      this.followers.some((f) => f.controllerName === controller.name)
    ) {
      throw new Error(
        `A controller named "${controller.name}" was already added: give each a unique .named(…)`,
      );
    }
    withWorkers(controller as unknown as Controller<KubeObject>, this.options.workers);
    if (controller.spec.followCrds) {
      // Runs while its kinds are served, after the other controllers (crd-follower.ts).
      const follower = new CrdFollower(controller as unknown as Controller<KubeObject>, {
        env: () => this.managerParts(),
        graceMs: () => this.graceMs(),
        logger: this.logger,
      });
      this.runnables.add("leader", follower);
      this.followers.push(follower);
      return this;
    }
    const added = controller as unknown as Controller<KubeObject>;
    // Added after the others were prepared: its informers start now (warm on a standby too).
    const late = this.controllersPrepared;
    this.runnables.add("leader", this.controllerRunnable(added, late));
    if (late) {
      const before = new Set(this.registry.informers);
      prepareController(added, this.managerParts());
      // The informers it brought (others it shares already log their errors).
      logInformerErrors(
        this.registry.informers.filter((informer) => !before.has(informer)),
        this.logger,
      );
    }
    this.controllers.push(added);
    return this;
  }

  /**
   * A controller as a runnable. One added after the others were prepared (`late`) has been
   * prepared when added, and waits for its own informers (up to the cache sync timeout) to start.
   */
  private controllerRunnable(controller: Controller<KubeObject>, late: boolean): Runnable {
    return {
      name: `controller "${controller.name}"`,
      start: async () => {
        if (late)
          await waitForSync(
            controller.allInformers,
            this.options.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS,
          );
        controller.start();
      },
      stop: () => controller.stop(this.graceMs()),
    };
  }

  /** How long controllers may finish what they hold when stopped: none once leadership is lost. */
  private graceMs(): number {
    return this.lost ? 0 : (this.options.gracefulShutdownMs ?? DEFAULT_GRACEFUL_SHUTDOWN_MS);
  }

  /**
   * Runs `clusters` (its per-cluster controllers, caches and health probes) with the controllers:
   * engaged from `provider` when they start (as leader, if elected), stopped before the Lease is
   * released. See `clusters.ts`.
   */
  addClusters(clusters: Clusters, provider: ClusterProvider): this {
    this.runnables.add("leader", {
      name: "clusters",
      start: () => {
        void clusters.start(provider);
      },
      stop: () => clusters.stop(),
    });
    return this;
  }

  /** Serves these webhooks (see `defineWebhooks`) from the manager's webhook server; before `start()` only. */
  addWebhooks(...definitions: WebhookDefinition[]): this {
    if (this.clientInstance)
      throw new Error(
        "Cannot add webhooks after start(): the webhook server's handlers are fixed when it starts. Call addWebhooks before start().",
      );
    if (this.options.webhooks === false) {
      const kinds = definitions.map((d) => d.resource.kind);
      this.logger.info({ kinds }, "webhooks are off (webhooks: false, ENABLE_WEBHOOKS=false): not served");
      return this;
    }
    this.webhookDefinitions.push(...definitions);
    return this;
  }

  /**
   * Runs `runnable` with the manager, in `group` (see {@link RunnableGroup} for the order): `leader`
   * for work only one replica may do (it starts once this replica leads, and stops at once when
   * leadership is lost), `always` for work every replica does once the caches have synced.
   */
  addRunnable(runnable: Runnable, group: RunnableGroup = "leader"): this {
    this.runnables.add(group, runnable);
    return this;
  }

  /**
   * Runs until stopped (signal or `stop()`); rejects if start-up fails, or, once stopped, with the
   * error of a runnable that failed the manager.
   */
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
    if (this.failure) throw this.failure;
  }

  /** A runnable cannot go on: the manager stops, and `start()` rejects with its error. */
  private fail(runnable: string, error: Error): void {
    if (this.failure || this.stopping) {
      this.logger.error({ err: error, runnable }, "runnable failed while the manager stops");
      return;
    }
    this.failure = error;
    this.logger.error({ err: error, runnable }, "runnable failed; stopping the manager");
    void this.stop();
  }

  /** Stops gracefully; safe to call more than once. */
  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async startUp(): Promise<void> {
    const client = await this.makeClient();
    const { cacheTransform } = this.options;
    const registry = new InformerRegistry(
      client,
      cacheTransform === undefined ? {} : { transform: cacheTransform },
    );
    this.registryInstance = registry;
    for (const runnable of this.servers.webhooks()) this.runnables.add("webhooks", runnable);
    await this.runnables.start("servers");
    await this.runnables.start("webhooks");
    const sharding = this.options.sharding;
    if (sharding) {
      this.shardingInstance = new Sharding(sharding, {
        client,
        registry,
        logger: this.logger,
        namespace: sharding.namespace ?? this.operatorNamespace(client),
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
        ...(this.recording ? { metrics: (lease: string) => this.metrics.leaderElection(lease) } : {}),
      });
    }
    this.prepareControllers(client, registry);
    await this.runnables.start("caches");
    this.logger.info({ informers: registry.informers.length }, "caches synced");
    await this.runnables.start("always");
    if (this.shardingInstance) {
      this.shardingInstance.start(
        () => void this.lead(),
        (error) => void this.leadershipLost(error),
      );
      return;
    }
    const election = this.options.leaderElection;
    if (!election) return this.lead();
    const namespace = election.namespace ?? this.operatorNamespace(client);
    this.elector = new LeaderElector({
      client,
      id: election.id,
      namespace,
      releaseOnCancel: election.releaseOnCancel ?? true,
      ...(election.leaseDurationMs ? { leaseDurationMs: election.leaseDurationMs } : {}),
      ...(election.renewDeadlineMs ? { renewDeadlineMs: election.renewDeadlineMs } : {}),
      ...(election.retryPeriodMs ? { retryPeriodMs: election.retryPeriodMs } : {}),
      ...(this.recording ? { metrics: this.recording.leaderElection(election.id) } : {}),
      onStartedLeading: () => {
        const lease = keyOfRef({ namespace, name: election.id });
        this.logger.info({ lease, identity: this.elector?.identity }, "became leader");
        void this.lead();
      },
      onNewLeader: (identity) => this.logger.info({ leader: identity }, "new leader elected"),
      onStoppedLeading: (event) => {
        if (event.lost) void this.leadershipLost(event.error);
      },
      onError: (error) => this.logger.warn({ err: error }, "leader election"),
    });
    this.logger.info(
      { lease: keyOfRef({ namespace, name: election.id }), identity: this.elector.identity },
      "waiting for leadership",
    );
    void this.elector.run();
  }

  private prepareControllers(client: Client, registry: InformerRegistry): void {
    prepareControllers(this.controllers, this.managerParts(client, registry));
    this.controllersPrepared = true;
  }

  /** What controllers are prepared with (also those that follow their CRDs, when they start). */
  private managerParts(
    client: Client = this.client,
    registry: InformerRegistry = this.registry,
  ): ManagerParts {
    return {
      client,
      registry,
      namespaces: this.namespaces,
      logger: this.logger,
      metrics: this.recording,
      recorders: this.recorders,
      shard: this.shardingInstance?.member,
      apiPressure: this.apiPressure,
    };
  }

  private async makeClient(): Promise<Client> {
    if (this.options.client) {
      this.clientInstance = this.options.client;
      return this.options.client;
    }
    const config = await loadConfig(this.options.kubeconfig ? { kubeconfig: this.options.kubeconfig } : {});
    const counted = this.recording?.restClient(config.server);
    this.clientInstance = new Client(config, {
      onResponse: (info) => {
        counted?.(info);
        this.apiPressure.record(info);
      },
    });
    this.ownsClient = true;
    this.logger.info({ server: config.server, source: config.source }, "connected");
    return this.clientInstance;
  }

  private checkInformers(): void {
    // The kinds of controllers that follow their CRDs come and go: their state is the `crds` check's.
    checkInformers(this.registryInstance, (informer) => this.followers.some((f) => f.follows(informer.type)));
  }

  /** This replica leads (or needs no leadership): the `leader` group starts. */
  private async lead(): Promise<void> {
    if (this.leading || this.stopping) return;
    this.leading = true;
    await this.runnables.start("leader");
    this.logger.info({ controllers: this.controllers.map((c) => c.name) }, "controllers started");
    this.resolveReady();
  }

  /** Leadership is gone: another replica may already act, so stop the `leader` group now, without grace. */
  private async leadershipLost(error: Error): Promise<void> {
    this.logger.error({ err: error }, "leadership lost; stopping");
    this.lost = true;
    await this.runnables.stop("leader");
    const handler =
      this.options.onLeadershipLost ??
      (() => {
        process.exit(1);
      });
    handler(error);
  }

  private async shutDown(): Promise<void> {
    this.logger.info("shutting down");
    const { runnables } = this;
    runnables.close();
    await runnables.stop("leader");
    await runnables.step("leader election", this.elector?.stop());
    await runnables.step("sharding", this.shardingInstance?.stop());
    for (const group of ["always", "caches", "webhooks", "servers"] as const) await runnables.stop(group);
    if (this.ownsClient) await runnables.step("client", this.clientInstance?.close());
    await runnables.step("tracing", this.tracing?.flush());
    this.logger.info("stopped");
    this.resolveStopped();
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

  /** The namespace the operator runs in: `operatorNamespace`, the service account's, or the kubeconfig's. */
  private operatorNamespace(client: Client): string {
    if (this.options.operatorNamespace) return this.options.operatorNamespace;
    if (existsSync(SERVICE_ACCOUNT_NAMESPACE)) return readFileSync(SERVICE_ACCOUNT_NAMESPACE, "utf8").trim();
    return client.defaultNamespace;
  }
}

const SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** What controllers following their CRDs wait for, for `/readyz`; undefined when none follows. */
function waitingFor(followers: readonly CrdFollower[]): (() => string | undefined) | undefined {
  if (followers.length === 0) return undefined;
  return () => {
    const waiting = followers.flatMap((f) =>
      f.waiting ? [`controller "${f.controllerName}" waits: ${f.waiting}`] : [],
    );
    return waiting.length ? waiting.join("; ") : undefined;
  };
}

/**
 * The manager's `workers` (from `WORKERS`), over the controller's own: a deploy-time knob. A
 * number is that many workers; bounds are adaptive workers.
 */
function withWorkers(controller: Controller<KubeObject>, workers: ManagerOptions["workers"]): void {
  if (workers === undefined) return;
  if (typeof workers === "number") {
    controller.spec.concurrency = workers;
    controller.spec.adaptive = undefined;
    return;
  }
  controller.spec.adaptive = workers;
  controller.spec.concurrency = workers.min ?? 1;
}
