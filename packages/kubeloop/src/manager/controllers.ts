import type { Logger } from "pino";
import type { Informer, InformerRegistry } from "../cache/index.js";
import { WatchForbidden } from "../cache/index.js";
import type { Client, KubeObject } from "../client/index.js";
import type { Controller } from "../controller/index.js";
import type { ApiPressure, ControllerMetricsSink, ShardGate } from "../controller/internal.js";
import { EventRecorder } from "../resources/index.js";
import type { Metrics } from "./metrics.js";

/**
 * The manager's parts its controllers share (client, informer registry, metrics, the shard gate…).
 * From them {@link prepareController} makes each controller's own `ControllerEnvironment` (its
 * event recorder, its metric hooks): this is the manager's side, that one a controller's.
 */
export interface ManagerParts {
  client: Client;
  registry: InformerRegistry;
  namespaces: readonly string[] | undefined;
  logger: Logger;
  /** Undefined when metrics are off: the controllers then record none. */
  metrics: Metrics | undefined;
  /** Where the event recorder made for each controller goes (the manager closes them on shutdown). */
  recorders: EventRecorder[];
  shard: ShardGate | undefined;
  apiPressure: ApiPressure;
}

/**
 * Hands each controller its environment (informers through the registry, an event recorder,
 * metrics, the shard gate), and makes the informers' failures and health visible.
 */
export function prepareControllers(controllers: Controller<KubeObject>[], env: ManagerParts): void {
  const { registry, logger } = env;
  for (const controller of controllers) prepareController(controller, env);
  logger.info(
    { namespaces: env.namespaces ?? "all" },
    env.namespaces ? `watching namespaces ${env.namespaces.join(", ")}` : "watching all namespaces",
  );
  logInformerErrors(registry.informers, logger);
  env.metrics?.observeInformers(() =>
    registry.informers.map((informer) => ({
      kind: informer.type.kind,
      namespace: informer.namespace ?? "",
      healthy: informer.health.synced && !informer.health.lastError,
      objects: informer.size,
      bytes: informer.approximateBytes(),
    })),
  );
}

/**
 * A failing list or watch (above all a Forbidden one: a namespace without its Role) is logged each
 * time it is retried, naming the namespace and the grant that is missing.
 */
export function logInformerErrors(informers: readonly Informer<KubeObject>[], logger: Logger): void {
  for (const informer of informers) {
    informer.onError((error) =>
      logger.warn(
        { err: error, kind: informer.type.kind, namespace: informer.namespace },
        `${describeInformer(informer)}: list/watch error; retrying with backoff`,
      ),
    );
  }
}

/** Hands one controller its environment: an event recorder, metrics, the shard gate, the registry. */
export function prepareController(controller: Controller<KubeObject>, env: ManagerParts): void {
  const { client, registry, logger } = env;
  const recorder = new EventRecorder(client, {
    reportingController: controller.name,
    onError: (error) => logger.warn({ err: error, controller: controller.name }, "could not record an event"),
  });
  env.recorders.push(recorder);
  controller.prepare({
    client,
    registry,
    namespaces: env.namespaces,
    logger,
    events: recorder,
    ...(env.metrics ? { metrics: controllerHooks(env.metrics, controller.name) } : {}),
    ...(env.shard ? { shard: env.shard } : {}),
    apiPressure: env.apiPressure,
  });
}

/** A controller's measurements as the manager's Prometheus series (controller-runtime's names). */
function controllerHooks(all: Metrics, name: string): ControllerMetricsSink {
  const metrics = all.controller(name);
  const queue = all.workqueue(name);
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
    deferred: () => metrics.deferred(),
    registerQueue: (workqueue) => {
      queue.observe(workqueue);
    },
  };
}

/**
 * Ready means: every informer synced and its watch healthy (a Forbidden watch is not ready). All
 * failures are named, so with one informer per namespace each namespace missing a Role shows.
 */
export function checkInformers(
  registry: InformerRegistry | undefined,
  skip: (informer: Informer<KubeObject>) => boolean = () => false,
): void {
  const failures: string[] = [];
  for (const informer of registry?.informers ?? []) {
    if (skip(informer)) continue;
    const { synced, lastError } = informer.health;
    if (lastError || !synced) failures.push(informerProblem(informer, "not synced yet"));
  }
  if (failures.length) throw new Error(failures.join("; "));
}

/** Waits for these informers to sync; past `timeoutMs`, fails naming each that has not and why. */
export async function waitForSync(
  informers: readonly Informer<KubeObject>[],
  timeoutMs: number,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  const result = await Promise.race([Promise.all(informers.map((informer) => informer.synced)), timeout]);
  clearTimeout(timer);
  if (result !== "timeout") return;
  const causes = informers
    .filter((informer) => !informer.isSynced)
    .map((informer) => informerProblem(informer, "no answer from the API server"));
  throw new Error(`Caches did not sync within ${timeoutMs / 1000}s:\n  ${causes.join("\n  ")}`);
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
