import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { basename, extname, join } from "node:path";
import type { Logger } from "pino";
import type { Informer } from "../cache/index.js";
import { InformerRegistry } from "../cache/index.js";
import type { KubeObject, ObjectRef } from "../client/index.js";
import { Client, type ClientOptions, loadConfig } from "../client/index.js";
import type { Controller, Source } from "../controller/index.js";
import { Secret } from "../k8s/index.js";
import { sleep } from "../util/index.js";

/** Where clusters come from: calls `upsert` and `remove` as they come and go, until `signal` aborts. */
export interface ClusterProvider {
  /** Says where the clusters come from, for logs: "kubeconfig files in /etc/members". */
  readonly description: string;
  /** Reports the clusters to `sink` as they come and go; resolves once `signal` aborts. */
  run(sink: ClusterSink, signal: AbortSignal): Promise<void>;
}

/**
 * What a {@link ClusterProvider} reports to (a {@link Clusters}): implement it to drive clusters
 * from something other than a provider, or to test a provider of your own.
 */
export interface ClusterSink {
  /** A cluster exists with this kubeconfig (new, or its kubeconfig changed). */
  upsert(name: string, kubeconfig: string): Promise<void>;
  /** The cluster is gone. */
  remove(name: string): Promise<void>;
}

/** One engaged cluster, as {@link Clusters.get} and per-cluster controller factories see it. */
export interface Cluster {
  /** The name its provider gave it: the kubeconfig file's name without extension, or the Secret's name. */
  readonly name: string;
  /** A client for this cluster, with {@link ClustersOptions.clientOptions}. */
  readonly client: Client;
  /** This cluster's shared informers (its cache). */
  readonly registry: InformerRegistry;
  /** The last health probe succeeded. */
  readonly healthy: boolean;
  /** Why the last probe failed, while unhealthy. */
  readonly lastError: Error | undefined;
  /** Aborts when the cluster is disengaged. */
  readonly signal: AbortSignal;
}

/** A cluster was asked for that is not engaged (never added, removed, or not synced yet). */
export class ClusterNotFound extends Error {
  override name = "ClusterNotFound";
}

/** How {@link Clusters} logs, probes health, and connects to each cluster. */
export interface ClustersOptions {
  /** Where cluster changes, health and errors are logged (each cluster's controllers log with a `cluster` field). */
  logger: Logger;
  /** How often each cluster's API server is probed (`/readyz`). Default 5 s. */
  healthIntervalMs?: number;
  /** How long a new cluster's caches may take to sync before it is engaged anyway (and logged). Default 30 s. */
  cacheSyncTimeoutMs?: number;
  /** How long a reconcile may finish when its cluster is removed. Default 5 s. */
  disengageGraceMs?: number;
  /**
   * Options of every cluster's client, e.g. `rateLimit: { qps, burst }`: a budget per cluster, so
   * one busy cluster cannot spend another's (MultiKueue measured 5 QPS per worker cluster).
   */
  clientOptions?: ClientOptions;
}

interface Engaged extends Cluster {
  healthy: boolean;
  lastError: Error | undefined;
  fingerprint: string;
  abort: AbortController;
  controllers: Controller<KubeObject>[];
  timer: NodeJS.Timeout | undefined;
}

/**
 * Many clusters in one process: a {@link ClusterProvider} says which clusters exist (kubeconfig
 * files in a folder, Secrets holding kubeconfigs; added, changed and removed at runtime), and
 * {@link Clusters} keeps a client and an informer registry (a cache) per cluster, probes each one's
 * health, and runs a copy of each per-cluster controller against it (so a key is always a key *in
 * a cluster*: each cluster has its own queue, workers and cache, and one slow cluster cannot
 * starve another's queue). Any reconciler may write to any engaged cluster through
 * `clusters.get(name).client`: a hub object's reconcile can create children in member clusters.
 *
 * A cluster that stops answering (a kubeconfig whose server or credentials stopped working) is
 * found by the health probe, logged with the reason, and reported by `healthy: false`; the other
 * clusters carry on, and `changes()` wakes the hub's objects when it comes back. A removed cluster
 * is disengaged: its controllers stop, their queued keys are dropped, its caches and connections close.
 *
 * @example
 * ```ts
 * import { pino } from "pino";
 * import { controller, done } from "kubeloop/controller";
 * import { ConfigMap } from "kubeloop/k8s";
 * import { Clusters, kubeconfigFiles } from "kubeloop/manager";
 *
 * const clusters = new Clusters({ logger: pino() });
 * // A copy per member cluster, each with its own queue, workers and cache.
 * clusters.addControllers(() => controller(ConfigMap).named("settings").reconcile(async () => done()));
 * await clusters.start(kubeconfigFiles("/etc/members")); // a file per member: <name>.kubeconfig
 * // In a hub reconciler: write to every healthy member.
 * const child = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "default" } };
 * for (const member of clusters.list().filter((c) => c.healthy)) {
 *   await member.client.apply(child, { fieldManager: "hub" });
 * }
 * ```
 */
export class Clusters implements ClusterSink {
  private readonly options: ClustersOptions;
  private readonly log: Logger;
  private readonly engaged = new Map<string, Engaged>();
  private readonly factories: ((cluster: Cluster) => Controller<KubeObject>)[] = [];
  private readonly listeners = new Set<(name: string) => void>();
  /** Upserts and removes of one cluster run one after the other. */
  private readonly chains = new Map<string, Promise<void>>();
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;

  constructor(options: ClustersOptions) {
    this.options = options;
    this.log = options.logger;
  }

  /**
   * Runs a copy of this controller in every cluster (present and future), built for it by
   * `factory` (give each copy the same name: logs carry the cluster).
   */
  addControllers<T extends KubeObject>(factory: (cluster: Cluster) => Controller<T>): this {
    this.factories.push(factory as unknown as (cluster: Cluster) => Controller<KubeObject>);
    return this;
  }

  /** Starts the provider; resolves once it has reported the clusters it knows now (or failed). */
  async start(provider: ClusterProvider): Promise<void> {
    this.abort = new AbortController();
    this.log.info({ provider: provider.description }, "cluster provider started");
    this.running = provider.run(this, this.abort.signal).catch((error: unknown) => {
      if (!this.abort?.signal.aborted)
        this.log.error({ err: error, provider: provider.description }, "cluster provider failed");
    });
    // Providers report what they have at start synchronously with their first read.
    await Promise.all(this.chains.values());
  }

  /** Stops the provider and disengages every cluster: their controllers, caches and connections. */
  async stop(): Promise<void> {
    this.abort?.abort();
    await this.running;
    await Promise.all([...this.engaged.keys()].map((name) => this.remove(name)));
  }

  /** The engaged cluster of this name; {@link ClusterNotFound} naming the engaged ones otherwise. */
  get(name: string): Cluster {
    const cluster = this.engaged.get(name);
    if (!cluster)
      throw new ClusterNotFound(
        `Cluster "${name}" is not engaged (engaged: ${[...this.engaged.keys()].join(", ") || "none"}): ` +
          "check the provider (its kubeconfig file or Secret) and the logs for why it was removed",
      );
    return cluster;
  }

  /** Every engaged cluster, healthy or not. */
  list(): Cluster[] {
    return [...this.engaged.values()];
  }

  /**
   * A controller source that yields `requests()` whenever a cluster is engaged or becomes healthy
   * again: a hub controller reconciles its objects then, so a returning member gets its children.
   */
  changes(requests: () => ObjectRef[] | Promise<ObjectRef[]>): Source {
    const listeners = this.listeners;
    return async function* (signal) {
      let wake: (() => void) | undefined;
      let pending = false;
      const listener = () => {
        pending = true;
        wake?.();
      };
      listeners.add(listener);
      const onAbort = () => wake?.();
      signal.addEventListener("abort", onAbort, { once: true });
      try {
        while (!signal.aborted) {
          if (!pending) await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          if (signal.aborted) return;
          pending = false;
          yield* await requests();
        }
      } finally {
        listeners.delete(listener);
        signal.removeEventListener("abort", onAbort);
      }
    };
  }

  /** Engages a cluster, or reconnects it when its kubeconfig changed (providers call this). */
  upsert(name: string, kubeconfig: string): Promise<void> {
    return this.chain(name, async () => {
      const fingerprint = createHash("sha256").update(kubeconfig).digest("hex");
      const current = this.engaged.get(name);
      if (current?.fingerprint === fingerprint) return;
      if (current) {
        this.log.info({ cluster: name }, `cluster ${name}: kubeconfig changed; reconnecting`);
        await this.disengage(current);
      }
      await this.engage(name, kubeconfig, fingerprint);
    });
  }

  /** Disengages a cluster (providers call this). */
  remove(name: string): Promise<void> {
    return this.chain(name, async () => {
      const current = this.engaged.get(name);
      if (!current) return;
      await this.disengage(current);
      this.log.info({ cluster: name }, `cluster ${name} removed`);
    });
  }

  private chain(name: string, work: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(name) ?? Promise.resolve()).then(work).catch((error: unknown) => {
      this.log.error({ err: error, cluster: name }, `cluster ${name}: could not be engaged`);
    });
    this.chains.set(name, next);
    void next.finally(() => {
      if (this.chains.get(name) === next) this.chains.delete(name);
    });
    return next;
  }

  private async engage(name: string, kubeconfig: string, fingerprint: string): Promise<void> {
    let config: Awaited<ReturnType<typeof loadConfig>>;
    try {
      config = await loadConfig({ kubeconfigText: kubeconfig });
    } catch (error) {
      this.log.error(
        { err: error, cluster: name },
        `cluster ${name}: its kubeconfig cannot be used (${(error as Error).message}); fix it and the provider picks it up again`,
      );
      return;
    }
    const client = new Client(config, this.options.clientOptions);
    const abort = new AbortController();
    const cluster: Engaged = {
      name,
      client,
      registry: new InformerRegistry(client),
      // Unknown until the first probe answers: writers skip it meanwhile.
      healthy: false,
      lastError: undefined,
      signal: abort.signal,
      fingerprint,
      abort,
      controllers: [],
      timer: undefined,
    };
    this.engaged.set(name, cluster);
    const logger = this.log.child({ cluster: name });
    // Watches registered before the caches are waited on (multicluster-runtime#74: starting caches
    // first missed the initial adds), and each copy's informers log their errors with the cluster.
    for (const factory of this.factories) {
      const controller = factory(cluster);
      controller.prepare({ client, registry: cluster.registry, logger });
      cluster.controllers.push(controller);
    }
    for (const informer of cluster.registry.informers) this.reportErrors(name, informer);
    // Probed from the start, so a cluster that never answers is reported at once, not after the sync timeout.
    this.probe(cluster);
    const timeoutMs = this.options.cacheSyncTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const synced = await Promise.race([
      cluster.registry.waitForSync().then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (!synced)
      this.log.warn(
        { cluster: name },
        `cluster ${name}: caches not synced within ${timeoutMs / 1000}s; its controllers start anyway and catch up`,
      );
    if (abort.signal.aborted) return;
    for (const controller of cluster.controllers) controller.start();
    this.log.info(
      { cluster: name, server: config.server, controllers: cluster.controllers.length },
      `cluster ${name} engaged`,
    );
    this.notify(name);
  }

  private reportErrors(name: string, informer: Informer<KubeObject>): void {
    informer.onError((error) =>
      this.log.warn(
        { err: error, cluster: name, kind: informer.type.kind },
        `cluster ${name}: ${informer.type.kind} list/watch error; retrying with backoff`,
      ),
    );
  }

  /** Probes `/readyz` every interval; a change of health is logged (with the reason) once. */
  private probe(cluster: Engaged): void {
    const interval = this.options.healthIntervalMs ?? 5_000;
    let probed = false;
    const check = async () => {
      try {
        await cluster.client.transport.request({
          method: "GET",
          path: "/readyz",
          signal: cluster.signal,
          timeoutMs: Math.max(1_000, interval),
        });
        if (!cluster.healthy) {
          if (probed) this.log.info({ cluster: cluster.name }, `cluster ${cluster.name} is reachable again`);
          cluster.healthy = true;
          cluster.lastError = undefined;
          this.notify(cluster.name);
        }
      } catch (error) {
        if (cluster.signal.aborted) return;
        const changed = cluster.healthy || cluster.lastError?.message !== (error as Error).message;
        probed = true;
        cluster.healthy = false;
        cluster.lastError = error as Error;
        if (changed)
          this.log.warn(
            { err: error, cluster: cluster.name },
            `cluster ${cluster.name} is unreachable (${(error as Error).message}); the other clusters carry on, and its controllers retry`,
          );
      }
      probed = true;
      if (!cluster.signal.aborted) cluster.timer = setTimeout(check, interval);
    };
    cluster.timer = setTimeout(check, 0);
  }

  private async disengage(cluster: Engaged): Promise<void> {
    this.engaged.delete(cluster.name);
    cluster.abort.abort();
    clearTimeout(cluster.timer);
    // Queued keys go with the controllers: a request for a cluster that is gone is dropped, never retried.
    const grace = this.options.disengageGraceMs ?? 5_000;
    await Promise.all(cluster.controllers.map((controller) => controller.stop(grace)));
    await cluster.registry.stopAll();
    await cluster.client.close();
  }

  private notify(name: string): void {
    for (const listener of this.listeners) listener(name);
  }
}

/**
 * Clusters from kubeconfig files in a folder: `<name>.kubeconfig`, `<name>.yaml` or `<name>.yml`
 * (the name is the cluster's), read every `intervalMs`: new files are engaged, changed ones
 * reconnected, deleted ones removed. A mounted Secret or ConfigMap folder works as is.
 */
export function kubeconfigFiles(folder: string, intervalMs = 1_000): ClusterProvider {
  return {
    description: `kubeconfig files in ${folder}`,
    async run(sink, signal) {
      const known = new Set<string>();
      while (!signal.aborted) {
        const found = new Map<string, string>();
        let files: string[] = [];
        try {
          files = readdirSync(folder);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        }
        for (const file of files) {
          const extension = extname(file);
          if (![".kubeconfig", ".yaml", ".yml"].includes(extension) || file.startsWith(".")) continue;
          try {
            found.set(basename(file, extension), readFileSync(join(folder, file), "utf8"));
          } catch {
            // Removed between the listing and the read: the next round sees it gone.
          }
        }
        await Promise.all([...found].map(([name, text]) => sink.upsert(name, text)));
        for (const name of known) if (!found.has(name)) await sink.remove(name);
        known.clear();
        for (const name of found.keys()) known.add(name);
        await sleep(intervalMs);
      }
    },
  };
}

/**
 * Clusters from Secrets labelled `labelSelector` in `namespace` (multicluster-runtime's kubeconfig
 * provider convention: the kubeconfig under the key `kubeconfig`; the cluster is named after the
 * Secret), watched: a new Secret engages a cluster, an edit reconnects it, a deletion removes it.
 */
export function kubeconfigSecrets(options: {
  client: Client;
  namespace: string;
  labelSelector?: string;
  key?: string;
}): ClusterProvider {
  const labelSelector = options.labelSelector ?? "sigs.k8s.io/multicluster-runtime-kubeconfig=true";
  const key = options.key ?? "kubeconfig";
  return {
    description: `Secrets (${labelSelector}) in ${options.namespace}`,
    async run(sink, signal) {
      const registry = new InformerRegistry(options.client);
      const { informer } = registry.acquire(Secret, { namespace: options.namespace, labelSelector });
      const upsert = (secret: KubeObject & { data?: Record<string, string> }) => {
        const encoded = secret.data?.[key];
        const name = secret.metadata?.name ?? "";
        if (encoded) void sink.upsert(name, Buffer.from(encoded, "base64").toString("utf8"));
        else void sink.remove(name);
      };
      informer.on({
        added: upsert,
        updated: (_, secret) => upsert(secret),
        deleted: (secret) => void sink.remove(secret.metadata?.name ?? ""),
      });
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      await registry.stopAll();
    },
  };
}
