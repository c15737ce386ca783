import type { Logger } from "pino";
import { Informer } from "../cache/index.js";
import type { KubeObject, ResourceType } from "../client/index.js";
import { groupOf } from "../client/internal.js";
import { Controller } from "../controller/index.js";
import { CustomResourceDefinition } from "../k8s/index.js";
import { sleep } from "../util/index.js";
import { type ManagerParts, prepareController } from "./controllers.js";
import type { Runnable } from "./runnables.js";

/**
 * A controller that follows its CRDs (`controller(T).followsCrds()`): it runs while every kind it
 * reconciles, owns or watches is served, and waits otherwise, without holding the manager back
 * (controller-runtime #1179: a watched CRD that is not there yet fails the manager after two
 * minutes, and users restart the process when it appears; JOSDK's `CRDPresentActivationCondition`).
 *
 * - The manager starts, syncs its other caches and is Ready; `/readyz` shows
 *   `[+]crds ok: controller "x" waits: kind Widget in bench.example.com/v1 is not served`, and a log
 *   line says the same each time the state changes (`crd-follower` = waiting | running).
 * - When the kinds are served (discovery lists them, and no CRD of theirs is being deleted), the
 *   controller starts: a fresh instance from the same definition, prepared like the others
 *   (informers through the shared registry), started once its informers synced.
 * - When one of them goes (its CRD deleted), the controller stops cleanly (reconciles in flight
 *   finish within the graceful-shutdown time, informers released) and waits again; when it comes
 *   back, it starts again. No restart of the process.
 *
 * It watches CustomResourceDefinitions (cluster-wide `list`/`watch` on
 * `apiextensions.k8s.io/customresourcedefinitions`: `kubeloop generate` adds the rule), and asks
 * discovery again on each CRD change.
 */
/** How long a started controller's informers may take to sync before it stops and waits again. */
const SYNC_TIMEOUT_MS = 30_000;

export class CrdFollower implements Runnable {
  readonly name: string;
  private informer: Informer<KubeObject> | undefined;
  private running: Controller<KubeObject> | undefined;
  private waitingFor: string | undefined = "not started";
  /** Transitions one at a time, in order. */
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;
  /**
   * An evaluation is queued: CRD events meanwhile are covered by it (a chart installing 200 CRDs
   * asks discovery a few times, not 200).
   */
  private queued = false;

  constructor(
    private readonly template: Controller<KubeObject>,
    private readonly deps: {
      env: () => ManagerParts;
      graceMs: () => number;
      logger: Logger;
    },
  ) {
    this.name = `controller "${template.name}" (follows its CRDs)`;
  }

  /** The followed controller's name. */
  get controllerName(): string {
    return this.template.name;
  }

  /** Whether `type` is one of the kinds the controller reconciles, owns or watches. */
  follows(type: ResourceType): boolean {
    return this.types().some((t) => t.apiVersion === type.apiVersion && t.kind === type.kind);
  }

  /** Why the controller waits, or undefined while it runs: for `/readyz` and logs. */
  get waiting(): string | undefined {
    return this.waitingFor;
  }

  /** The running instance, if any (tests and health checks). */
  get controller(): Controller<KubeObject> | undefined {
    return this.running;
  }

  start(): void {
    this.stopped = false;
    const env = this.deps.env();
    this.informer = new Informer(env.client, CustomResourceDefinition as ResourceType<KubeObject>);
    const changed = () => this.schedule();
    this.informer.on({ added: changed, updated: changed, deleted: changed });
    this.informer.onError((error) =>
      this.deps.logger.warn(
        { err: error, controller: this.template.name },
        "crd-follower: cannot list/watch customresourcedefinitions (apiextensions.k8s.io); retrying",
      ),
    );
    this.informer.start();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer?.stop();
    this.schedule();
    await this.chain;
  }

  private schedule(): void {
    if (this.queued) return;
    this.queued = true;
    this.chain = this.chain
      .then(() => {
        this.queued = false;
        return this.evaluate();
      })
      .catch((error: unknown) => {
        this.deps.logger.error({ err: error, controller: this.template.name }, "crd-follower: could not act");
      });
  }

  private async evaluate(): Promise<void> {
    const missing = this.stopped ? "the manager is stopping" : await this.missing();
    if (missing === undefined && !this.running) await this.activate();
    else if (missing !== undefined && this.running) await this.deactivate(missing);
    if (missing !== this.waitingFor) {
      this.waitingFor = missing;
      if (!this.stopped) {
        this.deps.logger.info(
          {
            controller: this.template.name,
            "crd-follower": missing ? "waiting" : "running",
            reason: missing,
          },
          missing
            ? `controller "${this.template.name}" waits: ${missing}`
            : `controller "${this.template.name}" runs: its kinds are served`,
        );
      }
    }
  }

  /** The first kind the controller needs that is not served, said as a reason; undefined if all are. */
  private async missing(): Promise<string | undefined> {
    const types = this.types();
    const discovery = this.deps.env().client.discovery;
    discovery.invalidate();
    for (const type of types) {
      if (this.terminating(type))
        return `the CRD of kind ${type.kind} in ${type.apiVersion} is being deleted`;
      try {
        await discovery.resolve(type.apiVersion, type.kind);
      } catch (error) {
        if ((error as Error).name !== "UnknownKind") throw error;
        return `kind ${type.kind} in ${type.apiVersion} is not served (is its CRD installed and established?)`;
      }
    }
    return undefined;
  }

  private types(): ResourceType[] {
    const { spec } = this.template;
    return [spec.primary, ...spec.owns.map((o) => o.type), ...spec.watches.map((w) => w.type)];
  }

  private terminating(type: ResourceType): boolean {
    const group = groupOf(type.apiVersion);
    return (this.informer?.list() ?? []).some((crd) => {
      const spec = (crd as { spec?: { group?: string; names?: { kind?: string } } }).spec;
      return (
        spec?.group === group &&
        spec?.names?.kind === type.kind &&
        crd.metadata?.deletionTimestamp !== undefined
      );
    });
  }

  private async activate(): Promise<void> {
    const controller = new Controller<KubeObject>(this.template.spec);
    prepareController(controller, this.deps.env());
    this.running = controller;
    const synced = Promise.all(controller.allInformers.map((informer) => informer.synced)).then(() => true);
    if (await Promise.race([synced, sleep(SYNC_TIMEOUT_MS).then(() => false)])) {
      if (!this.stopped) controller.start();
      return;
    }
    // Served, yet not listable (RBAC, or a CRD deleted meanwhile): stop and ask again later.
    await this.deactivate(`its informers did not sync within ${SYNC_TIMEOUT_MS / 1000} s`);
    setTimeout(() => this.schedule(), SYNC_TIMEOUT_MS).unref();
  }

  private async deactivate(reason: string): Promise<void> {
    const controller = this.running;
    this.running = undefined;
    this.deps.logger.info(
      { controller: this.template.name, reason },
      `controller "${this.template.name}" stops: ${reason}`,
    );
    await controller?.stop(this.deps.graceMs());
  }
}
