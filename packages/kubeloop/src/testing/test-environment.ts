import { Client, ignoreNotFound, type KubeObject } from "../client/index.js";
import type { Controller } from "../controller/index.js";
import {
  type apiextensions_v1,
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "../k8s/index.js";
import { Manager, type ManagerOptions } from "../manager/index.js";
import type { CustomResourceDefinition } from "../resources/index.js";
import {
  type WebhookDefinition,
  type WebhookTarget,
  webhookConfigurations,
  withConversion,
} from "../webhook/index.js";
import { ControlPlane, type ControlPlaneOptions } from "./control-plane.js";
import { type CrdObject, readManifests } from "./crds.js";
import { ControlPlaneError } from "./errors.js";
import { type KubectlResult, kubectl } from "./kubectl.js";
import { type LocalWebhookServing, localWebhookServing } from "./local-webhooks.js";

// envtest's job (a real API server, the CRDs, webhooks served from the test's process), plus what a
// Go test still writes by hand: the manager started and awaited, and everything stopped in order.

/**
 * A CRD to install: what `defineResource()` returns, a CRD object (its `.crd()`, or one typed with
 * kubeloop/k8s's `apiextensions_v1.CustomResourceDefinition`), or a manifest file or folder.
 */
export type CrdSource =
  | { crd(): CustomResourceDefinition }
  | CustomResourceDefinition
  | apiextensions_v1.CustomResourceDefinition
  | CrdObject
  | string;

/**
 * Controllers of any kinds, each as it is (a `Controller<T>` takes only its own `T`, so a list of
 * several kinds is not a `Controller<KubeObject>[]`); anything else reads as `Controller<KubeObject>`.
 */
export type ControllerList<C extends readonly unknown[]> = { readonly [K in keyof C]: AsController<C[K]> };
/** Distributes over a union: `Controller<A> | Controller<B>` stays as it is. */
type AsController<X> = X extends Controller<infer T> ? Controller<T> : Controller<KubeObject>;

/** Webhook definitions of any kinds, each as it is (see {@link ControllerList}). */
export type WebhookDefinitionList<W extends readonly unknown[]> = {
  readonly [K in keyof W]: AsWebhook<W[K]>;
};
type AsWebhook<X> = X extends WebhookDefinition<infer T> ? WebhookDefinition<T> : WebhookDefinition;

/**
 * What {@link startTestEnvironment} starts; every field may be left out. `C` and `W` are the lists'
 * own types, inferred at the call.
 */
export interface TestEnvironmentOptions<
  C extends readonly unknown[] = readonly Controller<KubeObject>[],
  W extends readonly unknown[] = readonly WebhookDefinition[],
> {
  /**
   * The CRDs to install before the manager starts, each installed and discoverable before it runs:
   * defined resources (`Nginx`), CRD objects, or files and folders of manifests (`"config/crd"`,
   * whose other objects are left out).
   */
  crds?: readonly CrdSource[];
  /** The controllers the manager runs (what `manager.add` takes). */
  controllers?: C & ControllerList<C>;
  /**
   * Webhook definitions the manager serves, on a local port with a throwaway CA
   * ({@link localWebhookServing}). The CRDs' conversion webhooks and the webhook configurations point
   * there, and the configurations are applied once the manager is ready.
   */
  webhooks?: W & WebhookDefinitionList<W>;
  /**
   * Files or folders holding the Mutating/ValidatingWebhookConfigurations to apply for `webhooks`
   * (`kubeloop generate`'s `"config/webhook"`), so the tests check the shipped manifests too. Left
   * out, configurations are made from the definitions.
   */
  webhookManifests?: readonly string[];
  /** Manager options over the quiet test defaults: no metrics or probe servers, no signal handlers, `logLevel: "warn"`. */
  manager?: Omit<ManagerOptions, "client" | "kubeconfig">;
  /**
   * The API server: options for a new {@link ControlPlane} (default `profile: "apiserver"`), which
   * `stop()` stops; or a started one to share, which `stop()` leaves running, less the webhook
   * configurations it applied.
   */
  plane?: ControlPlaneOptions | ControlPlane;
  /** How long the manager may take to be ready (caches synced, controllers running). Default 60 s. */
  readyTimeoutMs?: number;
}

/** A running {@link startTestEnvironment}: the API server, a client of it, and the manager. */
export interface TestEnvironment extends AsyncDisposable {
  /** The API server (its `kubeconfigPath`, `server`, `installCrds`, …). */
  readonly plane: ControlPlane;
  /** An admin client of the API server (the manager's own). */
  readonly client: Client;
  /** The running manager (ready when the environment is returned). */
  readonly manager: Manager;
  /** kubectl against this API server, as a user would run it; `input` goes to its stdin. */
  kubectl(args: string[], input?: string): Promise<KubectlResult>;
  /** Stops the manager, then the client, then the plane (unless shared). Safe to call twice. */
  stop(): Promise<void>;
}

const DEFAULT_READY_TIMEOUT_MS = 60_000;
/** Where generated manifests point before the local rewrite: only its shape matters. */
const PLACEHOLDER: WebhookTarget = { service: { name: "webhook-service", namespace: "default" } };

/**
 * A real API server with the CRDs installed and a {@link Manager} running the controllers (and
 * serving the webhooks) in this process: controller-runtime's envtest with the manager started for
 * you. A start that fails stops what it had started; `stop()` (or `await using`) stops everything.
 *
 * @example
 * ```ts
 * import { controller, defineResource, done } from "kubeloop";
 * import { startTestEnvironment } from "kubeloop/testing";
 * import Type from "typebox";
 *
 * const Widget = defineResource({
 *   group: "example.com",
 *   version: "v1",
 *   kind: "Widget",
 *   spec: Type.Object({ size: Type.Number() }),
 * });
 * const widgets = controller(Widget).reconcile(async () => done());
 *
 * await using env = await startTestEnvironment({ crds: [Widget], controllers: [widgets] });
 * await env.client.create({
 *   apiVersion: Widget.apiVersion,
 *   kind: "Widget",
 *   metadata: { name: "small", namespace: "default" },
 *   spec: { size: 1 },
 * });
 * ```
 */
export async function startTestEnvironment<
  const C extends readonly unknown[] = [],
  const W extends readonly unknown[] = [],
>(options: TestEnvironmentOptions<C, W> = {}): Promise<TestEnvironment> {
  // Each controller is a Controller of its own kind; the manager takes any.
  const env = new RunningEnvironment(options as unknown as TestEnvironmentOptions);
  try {
    await env.startUp();
  } catch (error) {
    await env.stop().catch(() => {});
    throw error;
  }
  return env;
}

class RunningEnvironment implements TestEnvironment {
  private plane_: ControlPlane | undefined;
  private client_: Client | undefined;
  private manager_: Manager | undefined;
  private running: Promise<void> | undefined;
  private serving: LocalWebhookServing | undefined;
  private ownsPlane = false;
  /** The webhook configurations applied: a shared plane must not keep routing to a closed port. */
  private readonly applied: KubeObject[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly options: TestEnvironmentOptions) {}

  get plane(): ControlPlane {
    return started(this.plane_);
  }
  get client(): Client {
    return started(this.client_);
  }
  get manager(): Manager {
    return started(this.manager_);
  }

  async startUp(): Promise<void> {
    const { options } = this;
    const webhooks = (options.webhooks ?? []) as readonly WebhookDefinition[];
    // Read first: a wrong path fails before anything runs.
    const crds = withConversions(collectCrds(options.crds ?? []), webhooks);
    let configurations = options.webhookManifests
      ? readManifests([...options.webhookManifests]).filter(isWebhookConfiguration)
      : generatedConfigurations(webhooks, `kubeloop-test-${process.pid}-${++environments}`);
    if (configurations.length > 0 && webhooks.length === 0)
      throw new ControlPlaneError(
        `webhookManifests hold ${configurations.length} webhook configuration(s) but no webhooks were given: pass the definitions they route to as \`webhooks\``,
      );
    const plane = await this.startPlane();
    if (webhooks.length > 0) this.serving = await localWebhookServing();
    const local = this.serving ? this.serving.rewrite(crds) : crds;
    configurations = this.serving ? this.serving.rewrite(configurations) : configurations;
    if (local.length > 0) await plane.installCrdObjects(local);
    this.client_ = await Client.connect({ kubeconfig: plane.kubeconfigPath });
    await this.startManager(this.client_, webhooks);
    // The webhook server listens now: route admission to it.
    for (const object of configurations as KubeObject[]) {
      await this.client_.apply(object, { fieldManager: "kubeloop-test", force: true });
      this.applied.push(object);
    }
  }

  private async startPlane(): Promise<ControlPlane> {
    const given = this.options.plane;
    if (given instanceof ControlPlane) {
      try {
        void given.server; // throws unless the plane is running
      } catch {
        throw new ControlPlaneError(
          "The plane given to startTestEnvironment is not running: `await plane.start()` first, or pass its options instead",
        );
      }
      this.plane_ = given;
      return given;
    }
    const plane = new ControlPlane({ profile: "apiserver", ...given });
    // Owned before it starts: a failed start has stopped what it began, and stop() is safe twice.
    this.plane_ = plane;
    this.ownsPlane = true;
    return plane.start();
  }

  private async startManager(client: Client, webhooks: readonly WebhookDefinition[]): Promise<void> {
    const serving = this.serving;
    const manager = new Manager({
      metrics: false,
      probes: false,
      handleSignals: false,
      logLevel: "warn",
      ...this.options.manager,
      ...(serving
        ? {
            webhooks: {
              ...(this.options.manager?.webhooks || {}),
              port: serving.port,
              certDir: serving.certDir,
            },
          }
        : {}),
      client,
    });
    this.manager_ = manager;
    for (const controller of this.options.controllers ?? [])
      manager.add(controller as Controller<KubeObject>);
    if (webhooks.length > 0) manager.addWebhooks(...webhooks);
    const running = manager.start();
    this.running = running;
    await untilReady(manager, running, this.options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
  }

  kubectl(args: string[], input?: string): Promise<KubectlResult> {
    return kubectl(args, {
      kubeconfig: this.plane.kubeconfigPath,
      ...(input === undefined ? {} : { input }),
    });
  }

  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private async removeConfigurations(): Promise<void> {
    for (const object of this.applied) {
      const type =
        object.kind === "MutatingWebhookConfiguration"
          ? MutatingWebhookConfiguration
          : ValidatingWebhookConfiguration;
      await this.client_?.delete(type, object.metadata?.name ?? "").catch(ignoreNotFound);
    }
  }

  /** Each step runs even when one before it failed; the first failure is thrown at the end. */
  private async stopAll(): Promise<void> {
    const failures: unknown[] = [];
    const step = async (action: () => unknown) => {
      try {
        await action();
      } catch (error) {
        failures.push(error);
      }
    };
    await step(() => this.manager_?.stop());
    // A manager that failed has logged why; its start() rejecting is not a failure to stop.
    await this.running?.catch(() => {});
    if (!this.ownsPlane) await step(() => this.removeConfigurations());
    await step(() => this.client_?.close());
    if (this.ownsPlane) await step(() => this.plane_?.stop());
    await step(() => this.serving?.dispose());
    if (failures.length > 0) throw failures[0];
  }
}

/** Unique names for generated webhook configurations, so environments can share a plane. */
let environments = 0;

function started<T>(value: T | undefined): T {
  if (value === undefined)
    throw new ControlPlaneError("The test environment has not started: await startTestEnvironment(…) first");
  return value;
}

/** Resolves once the manager is ready; rejects with its own error if it fails, or after `timeoutMs`. */
async function untilReady(manager: Manager, running: Promise<void>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new ControlPlaneError(
            `The manager was not ready within ${timeoutMs / 1000} s: its caches have not synced or it is not leader. ` +
              "Install the CRDs of the kinds its controllers watch (`crds`), or raise `readyTimeoutMs`",
          ),
        ),
      timeoutMs,
    );
  });
  const ended = running.then(
    () => {
      throw new ControlPlaneError("The manager stopped before it was ready: was manager.stop() called?");
    },
    (error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      throw new ControlPlaneError(`The manager failed to start: ${message}`, { cause: error });
    },
  );
  try {
    await Promise.race([manager.ready, ended, timeout]);
  } finally {
    clearTimeout(timer);
    ended.catch(() => {});
  }
}

function collectCrds(sources: readonly CrdSource[]): CrdObject[] {
  return sources.flatMap((source): CrdObject[] => {
    if (typeof source === "string") {
      return readManifests([source]).filter(
        (o) => o.kind === "CustomResourceDefinition",
      ) as unknown as CrdObject[];
    }
    if ("crd" in source && typeof source.crd === "function") return [source.crd() as CrdObject];
    if ((source as { kind?: unknown }).kind !== "CustomResourceDefinition")
      throw new ControlPlaneError(
        "A `crds` entry is neither a defined resource, a CustomResourceDefinition, nor a path: pass what defineResource() returns, its .crd(), or a manifest folder",
      );
    return [source as unknown as CrdObject];
  });
}

/** Each CRD of a kind with a conversion webhook, and no conversion section of its own, gets one. */
function withConversions(crds: CrdObject[], webhooks: readonly WebhookDefinition[]): CrdObject[] {
  return crds.map((crd) => {
    const definition = webhooks.find(
      (d) =>
        d.paths.convert && d.resource.group === crd.spec.group && d.resource.kind === crd.spec.names.kind,
    );
    const typed = crd as unknown as CustomResourceDefinition;
    if (!definition || typed.spec.conversion) return crd;
    return withConversion(typed, definition, PLACEHOLDER) as unknown as CrdObject;
  });
}

function generatedConfigurations(
  webhooks: readonly WebhookDefinition[],
  name: string,
): Record<string, unknown>[] {
  const { mutating, validating } = webhookConfigurations(name, webhooks, PLACEHOLDER);
  return [mutating, validating].filter((object) => object !== undefined);
}

function isWebhookConfiguration(object: Record<string, unknown>): boolean {
  return object.kind === "MutatingWebhookConfiguration" || object.kind === "ValidatingWebhookConfiguration";
}
