import type { Client, KubeObject, ResourceType } from "../client/index.js";
import { Informer, type InformerOptions } from "./informer.js";
import { MultiNamespaceInformer } from "./multi-namespace.js";

/**
 * Shared informers: one watch per (type, namespace, selectors, metadata-only), however many
 * controllers ask for it. Each `acquire` counts a reference; the informer stops when the last
 * holder releases it, so watches can also be added and removed while a manager runs.
 */

export interface InformerScope {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  metadataOnly?: boolean;
}

/** A holder's reference to a shared informer. */
export interface SharedInformer<T extends KubeObject> {
  readonly informer: Informer<T>;
  /** Gives this holder's reference back; the informer stops with the last one. */
  release(): Promise<void>;
}

/** A holder's reference to shared informers of several namespaces, read as one. */
export interface SharedMultiNamespaceInformer<T extends KubeObject> {
  readonly view: MultiNamespaceInformer<T>;
  /** Gives back this holder's reference to each namespace's informer. */
  release(): Promise<void>;
}

interface Entry {
  informer: Informer<KubeObject>;
  references: number;
}

/**
 * One informer per type, scope and selector, shared by every controller that asks for it and
 * stopped when the last one releases it (controller-runtime's shared informer cache).
 */
export class InformerRegistry {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly client: Client,
    /** Options every informer gets (transform, backoff, inactivity timeout). */
    private readonly defaults: Omit<InformerOptions<KubeObject>, keyof InformerScope | "indexes"> = {},
  ) {}

  /** The shared informer for this type and scope, started if it was not running. */
  acquire<T extends KubeObject>(type: ResourceType<T>, scope: InformerScope = {}): SharedInformer<T> {
    const key = registryKey(type, scope);
    let entry = this.entries.get(key);
    if (!entry) {
      const informer = new Informer<KubeObject>(this.client, type, { ...this.defaults, ...scope });
      entry = { informer, references: 0 };
      this.entries.set(key, entry);
      informer.start();
    }
    entry.references++;
    const held = entry;
    let released = false;
    return {
      informer: held.informer as unknown as Informer<T>,
      release: async () => {
        if (released) return;
        released = true;
        held.references--;
        if (held.references === 0 && this.entries.get(key) === held) {
          this.entries.delete(key);
          await held.informer.stop();
        }
      },
    };
  }

  /**
   * One shared informer per namespace (each scoped like `acquire(type, { ...scope, namespace })`),
   * read as one cache through a {@link MultiNamespaceInformer}: for operators that may only watch
   * some namespaces. The namespaces must be distinct and non-empty.
   */
  acquireNamespaces<T extends KubeObject>(
    type: ResourceType<T>,
    namespaces: readonly string[],
    scope: Omit<InformerScope, "namespace"> = {},
  ): SharedMultiNamespaceInformer<T> {
    if (
      namespaces.length === 0 ||
      namespaces.some((ns) => !ns) ||
      new Set(namespaces).size !== namespaces.length
    )
      throw new TypeError(
        `acquireNamespaces: give distinct, non-empty namespaces (got ${JSON.stringify(namespaces)})`,
      );
    const held = namespaces.map((namespace) => ({
      namespace,
      shared: this.acquire(type, { ...scope, namespace }),
    }));
    return {
      view: new MultiNamespaceInformer(type, new Map(held.map((h) => [h.namespace, h.shared.informer]))),
      release: async () => {
        await Promise.all(held.map((h) => h.shared.release()));
      },
    };
  }

  /** Every running informer, for health checks and metrics. */
  get informers(): Informer<KubeObject>[] {
    return [...this.entries.values()].map((entry) => entry.informer);
  }

  /** Resolves when every running informer has synced. */
  async waitForSync(): Promise<void> {
    await Promise.all(this.informers.map((informer) => informer.synced));
  }

  async stopAll(): Promise<void> {
    const informers = this.informers;
    this.entries.clear();
    await Promise.all(informers.map((informer) => informer.stop()));
  }
}

function registryKey(type: ResourceType, scope: InformerScope): string {
  return JSON.stringify([
    type.apiVersion,
    type.kind,
    scope.namespace ?? "",
    scope.labelSelector ?? "",
    scope.fieldSelector ?? "",
    scope.metadataOnly ?? false,
  ]);
}
