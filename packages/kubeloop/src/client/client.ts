import type { Scale } from "kubernetes-types/autoscaling/v1.js";
import type { ApiTransport } from "./api-transport.js";
import { type ClusterConfig, type LoadConfigOptions, loadConfig } from "./config.js";
import { Discovery, type ResourceInfo } from "./discovery.js";
import { type ListHead, parseListStream } from "./list-stream.js";
import { type TypedObjectRef, typedRef } from "./object-ref.js";
import { type HttpRequest, Transport, type TransportOptions } from "./transport.js";
import type {
  KubeObject,
  ObjectList,
  ObjectMeta,
  PartialObjectMetadata,
  ResourceType,
  WatchEvent,
} from "./types.js";

/** What the server returns for a written object: the object, with full metadata. */
export type Written<T extends KubeObject> = T & { metadata: ObjectMeta };

import { checkWatchEvents, decodeWatchEvents } from "./watch.js";

/**
 * The Kubernetes client: typed operations on built-in and custom resources.
 *
 * Every method takes a {@link ResourceType} (or an object that names its `apiVersion` and `kind`)
 * and returns that type. Errors are typed from the API's Status (`NotFound`, `Conflict`, `Invalid`…,
 * see errors.ts). Namespaced operations on a single object need an explicit namespace: an operator
 * that silently used the kubeconfig's namespace would act on the wrong objects.
 *
 * @example
 * ```ts
 * import { Client } from "kubeloop/client";
 * import { ConfigMap } from "kubeloop/k8s";
 *
 * const client = await Client.connect(); // KUBECONFIG, ~/.kube/config, or the pod's service account
 * await client.apply(
 *   { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "default" }, data: { a: "1" } },
 *   { fieldManager: "my-operator" },
 * );
 * const cm = await client.get({ type: ConfigMap, namespace: "default", name: "settings" });
 * ```
 */

export interface ClientOptions extends TransportOptions {
  /**
   * Where requests go instead of HTTP to `config.server`: e.g. `kubeloop/testing`'s in-memory API
   * server (`MemoryApiServer.client()`), for reconciler unit tests that run in milliseconds.
   */
  transport?: ApiTransport;
}

/** The namespace of a namespaced object; leave it out for cluster-scoped kinds. */
export interface NamespaceOption {
  namespace?: string;
}

/** What to list: a namespace (all when left out), selectors, pages, and a resourceVersion to read at. */
export interface ListOptions extends NamespaceOption {
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size. Without it the server returns everything in one response. */
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: "Exact" | "NotOlderThan";
  signal?: AbortSignal;
}

/** Per-call controls of a single-object read or write. */
export interface RequestOptions {
  /** Abandons the call when it aborts: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** This call's timeout, instead of the client's `requestTimeoutMs`. */
  timeoutMs?: number;
}

/** Options of create, update and the other writes: dry run, field manager, field validation. */
export interface WriteOptions extends RequestOptions {
  /** Validate and run admission without persisting (`dryRun=All`). */
  dryRun?: boolean;
  /** Who owns the written fields (server-side field management). */
  fieldManager?: string;
  /** How the server treats unknown or duplicate fields. Default: the server's (`Warn`). */
  fieldValidation?: "Ignore" | "Warn" | "Strict";
}

/** Options of server-side apply: a field manager is required. */
export interface ApplyOptions extends WriteOptions {
  /** Required for server-side apply: the applier's identity, e.g. the controller's name. */
  fieldManager: string;
  /** Take ownership of fields other managers own instead of failing with a Conflict. */
  force?: boolean;
}

/** The patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch. */
export type PatchType = "merge" | "json" | "strategic";

/** Options of a patch: its format, and a subresource to patch instead of the object. */
export interface PatchOptions extends NamespaceOption, WriteOptions {
  /** Default `merge` (RFC 7386). `strategic` works on built-in types only. */
  type?: PatchType;
  subresource?: "status" | "scale";
}

/** Options of a delete: propagation to dependents, grace period, preconditions, dry run. */
export interface DeleteOptions extends NamespaceOption {
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  gracePeriodSeconds?: number;
  /** Delete only if the object still has this uid / resourceVersion. */
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
}

/** What to watch (as for a list), from which resourceVersion, and how the stream is kept alive. */
export interface WatchOptions extends ListOptions {
  /** Ask for BOOKMARK events (cheap progress markers that keep a resume point fresh). Default true. */
  allowBookmarks?: boolean;
  /** Server-side end of the watch, in seconds. */
  timeoutSeconds?: number;
  /** Stream the current state as ADDED events first (WatchList), ending with an initial-events bookmark. */
  sendInitialEvents?: boolean;
  /** Treat the stream as dead after this long without a byte. Default {@link DEFAULT_WATCH_INACTIVITY_MS}. */
  inactivityTimeoutMs?: number;
  /** Return metadata only (PartialObjectMetadata): a fraction of the memory for large objects. */
  metadataOnly?: boolean;
}

/** Bookmarks arrive about once a minute on a quiet watch; three missed ones mean the link is dead. */
export const DEFAULT_WATCH_INACTIVITY_MS = 3 * 60_000;

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
};
const APPLY_CONTENT_TYPE = "application/apply-patch+yaml";
const METADATA_LIST_ACCEPT =
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;q=0.9";
const METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;q=0.9";

/**
 * The Kubernetes client: typed get, list, create, update, patch, apply, delete and watch, with typed
 * API errors. `await Client.connect()` reads KUBECONFIG, ~/.kube/config or the pod's service account.
 */
export class Client {
  readonly config: ClusterConfig;
  readonly transport: ApiTransport;
  readonly discovery: Discovery;

  constructor(config: ClusterConfig, options: ClientOptions = {}) {
    this.config = config;
    this.transport = options.transport ?? new Transport(config, options);
    this.discovery = new Discovery(this.transport);
  }

  /** A client for the configuration {@link loadConfig} finds (or the one given). */
  static async connect(options: LoadConfigOptions & ClientOptions = {}): Promise<Client> {
    return new Client(await loadConfig(options), options);
  }

  /** The namespace of the kubeconfig's context, for callers who want kubectl's default. */
  get defaultNamespace(): string {
    return this.config.namespace;
  }

  /**
   * Reads one object from the API server: the reference names its kind, namespace and name (the
   * same shape `ctx.cache.get` and `informer.get` take). `NotFound` if it does not exist.
   *
   * @example
   * ```ts
   * import { Client, refTo } from "kubeloop/client";
   * import { ConfigMap } from "kubeloop/k8s";
   *
   * const client = await Client.connect();
   * const settings = await client.get(refTo(ConfigMap, "settings", "default"));
   * const same = await client.get({ type: ConfigMap, namespace: "default", name: "settings" });
   * ```
   */
  async get<T extends KubeObject>(ref: TypedObjectRef<T>, options?: RequestOptions): Promise<T>;
  /** @deprecated Pass a reference: `get(refTo(type, name, namespace))` or `get({ type, namespace, name })`. */
  async get<T extends KubeObject>(
    type: ResourceType<T>,
    name: string,
    options?: NamespaceOption & RequestOptions,
  ): Promise<T>;
  async get<T extends KubeObject>(
    target: TypedObjectRef<T> | ResourceType<T>,
    nameOrOptions?: string | RequestOptions,
    positional: NamespaceOption & RequestOptions = {},
  ): Promise<T> {
    const positionalForm = typeof nameOrOptions === "string";
    const { type, name, namespace } = positionalForm
      ? typedRef("client.get", target, nameOrOptions, positional.namespace)
      : typedRef("client.get", target);
    const options = positionalForm ? positional : (nameOrOptions ?? {});
    const path = await this.objectPath(type, name, namespace);
    return (await this.transport.request({ method: "GET", path, ...callOf(options) })).body as T;
  }

  async list<T extends KubeObject>(type: ResourceType<T>, options: ListOptions = {}): Promise<ObjectList<T>> {
    const path = await this.collectionPath(type, options.namespace);
    return (
      await this.transport.request({ method: "GET", path, query: listQuery(options), ...signalOf(options) })
    ).body as ObjectList<T>;
  }

  /** Metadata only (PartialObjectMetadataList): names, labels, owners, resourceVersions. */
  async listMetadata(
    type: ResourceType,
    options: ListOptions = {},
  ): Promise<ObjectList<PartialObjectMetadata>> {
    const path = await this.collectionPath(type, options.namespace);
    const request: HttpRequest = {
      method: "GET",
      path,
      query: listQuery(options),
      accept: METADATA_LIST_ACCEPT,
    };
    return (await this.transport.request({ ...request, ...signalOf(options) }))
      .body as ObjectList<PartialObjectMetadata>;
  }

  /**
   * A list read as a stream: `onItem` gets each object as soon as it has arrived, so parsing
   * overlaps the transfer and the whole response is never held as one string. Resolves with the
   * list's metadata (resourceVersion, continue). The way caches read large lists.
   */
  async listEach<T extends KubeObject>(
    type: ResourceType<T>,
    options: ListOptions & { metadataOnly?: boolean },
    onItem: (object: T) => void,
  ): Promise<ListHead> {
    const path = await this.collectionPath(type, options.namespace);
    const stream = await this.transport.stream({
      method: "GET",
      path,
      query: listQuery(options),
      inactivityTimeoutMs: this.transport.requestTimeoutMs,
      ...(options.metadataOnly ? { accept: METADATA_LIST_ACCEPT } : {}),
      ...signalOf(options),
    });
    try {
      return await parseListStream(stream.body, onItem as (item: unknown) => void);
    } finally {
      stream.close();
    }
  }

  /** Every page of a list, `limit` objects at a time (default 500, as client-go's pager). */
  async *listPages<T extends KubeObject>(
    type: ResourceType<T>,
    options: ListOptions = {},
  ): AsyncGenerator<ObjectList<T>> {
    let token: string | undefined = options.continue;
    do {
      const page: ObjectList<T> = await this.list(type, {
        limit: 500,
        ...options,
        ...(token ? { continue: token } : {}),
      });
      yield page;
      token = page.metadata.continue || undefined;
    } while (token);
  }

  async create<T extends KubeObject>(object: T, options: WriteOptions = {}): Promise<Written<T>> {
    const type = typeOf(object);
    const path = await this.collectionPath(type, object.metadata?.namespace, true);
    return (await this.write("POST", path, object, options)) as Written<T>;
  }

  /** Replaces the object; its `metadata.resourceVersion` makes this a compare-and-swap (409 Conflict if stale). */
  async update<T extends KubeObject>(object: T, options: WriteOptions = {}): Promise<Written<T>> {
    const path = await this.objectPath(typeOf(object), nameOf(object), object.metadata?.namespace);
    return (await this.write("PUT", path, object, options)) as Written<T>;
  }

  /** Replaces the status subresource only. */
  async updateStatus<T extends KubeObject>(object: T, options: WriteOptions = {}): Promise<Written<T>> {
    const path = await this.objectPath(typeOf(object), nameOf(object), object.metadata?.namespace, "status");
    return (await this.write("PUT", path, object, options)) as Written<T>;
  }

  async patch<T extends KubeObject>(
    type: ResourceType<T>,
    name: string,
    patch: unknown,
    options: PatchOptions = {},
  ): Promise<T> {
    const path = await this.objectPath(type, name, options.namespace, options.subresource);
    const contentType = PATCH_CONTENT_TYPES[options.type ?? "merge"];
    return (await this.write("PATCH", path, patch, options, contentType)) as T;
  }

  /**
   * Server-side apply: the server merges the fields this manager sets, owns them, and reports a
   * {@link Conflict} when another manager owns one (unless `force`). The idempotent way to write.
   */
  async apply<T extends KubeObject>(object: T, options: ApplyOptions): Promise<Written<T>> {
    return this.applyTo(object, options);
  }

  /** Server-side apply of the status subresource. */
  async applyStatus<T extends KubeObject>(object: T, options: ApplyOptions): Promise<Written<T>> {
    return this.applyTo(object, options, "status");
  }

  /** Deletes one object; resolves with the object as it is now (deleting, with finalizers) or the Status. */
  async delete(type: ResourceType, name: string, options: DeleteOptions = {}): Promise<KubeObject> {
    const path = await this.objectPath(type, name, options.namespace);
    const body = deleteBody(options);
    const query = options.dryRun ? { dryRun: "All" } : undefined;
    return (await this.transport.request({ method: "DELETE", path, body, ...(query ? { query } : {}) }))
      .body as KubeObject;
  }

  /** Deletes every object of a type that matches the selectors (in one namespace, or all for cluster scope). */
  async deleteCollection(type: ResourceType, options: DeleteOptions & ListOptions = {}): Promise<void> {
    const path = await this.collectionPath(type, options.namespace, true);
    const query = { ...listQuery(options), ...(options.dryRun ? { dryRun: "All" } : {}) };
    await this.transport.request({ method: "DELETE", path, body: deleteBody(options), query });
  }

  async getStatus<T extends KubeObject>(
    type: ResourceType<T>,
    name: string,
    options: NamespaceOption = {},
  ): Promise<T> {
    const path = await this.objectPath(type, name, options.namespace, "status");
    return (await this.transport.request({ method: "GET", path })).body as T;
  }

  async getScale(type: ResourceType, name: string, options: NamespaceOption = {}): Promise<Scale> {
    const path = await this.objectPath(type, name, options.namespace, "scale");
    return (await this.transport.request({ method: "GET", path })).body as Scale;
  }

  async updateScale(
    type: ResourceType,
    name: string,
    replicas: number,
    options: NamespaceOption = {},
  ): Promise<Scale> {
    return (await this.patch(
      type,
      name,
      { spec: { replicas } },
      { ...options, subresource: "scale" },
    )) as Scale;
  }

  /**
   * A raw watch: the server's events as they come, ending when the server closes the stream or the
   * signal aborts. Resuming, relisting on 410 and reconnecting are the cache layer's job (Reflector).
   */
  async *watch<T extends KubeObject>(
    type: ResourceType<T>,
    options: WatchOptions = {},
  ): AsyncGenerator<WatchEvent<T>> {
    const path = await this.collectionPath(type, options.namespace);
    const query = {
      ...listQuery(options),
      watch: true,
      allowWatchBookmarks: options.allowBookmarks ?? true,
      timeoutSeconds: options.timeoutSeconds,
      sendInitialEvents: options.sendInitialEvents,
    };
    const stream = await this.transport.stream({
      method: "GET",
      path,
      query,
      inactivityTimeoutMs: options.inactivityTimeoutMs ?? DEFAULT_WATCH_INACTIVITY_MS,
      ...(options.metadataOnly ? { accept: METADATA_ACCEPT } : {}),
      ...signalOf(options),
    });
    try {
      yield* stream.events
        ? checkWatchEvents<T>(stream.events, `WATCH ${path}`)
        : decodeWatchEvents<T>(stream.body, `WATCH ${path}`);
    } finally {
      stream.close();
    }
  }

  /** Resolves a type's resource, scope and subresources through discovery. */
  resolve(type: ResourceType): Promise<ResourceInfo> {
    return this.discovery.resolve(type.apiVersion, type.kind);
  }

  async close(): Promise<void> {
    await this.transport.close();
  }

  private async applyTo<T extends KubeObject>(
    object: T,
    options: ApplyOptions,
    subresource?: "status",
  ): Promise<Written<T>> {
    const path = await this.objectPath(
      typeOf(object),
      nameOf(object),
      object.metadata?.namespace,
      subresource,
    );
    return (await this.write("PATCH", path, JSON.stringify(object), options, APPLY_CONTENT_TYPE, {
      force: options.force || undefined,
    })) as Written<T>;
  }

  /** Every write: the options' dry run, field manager and validation, and their signal and timeout. */
  private async write(
    method: "POST" | "PUT" | "PATCH",
    path: string,
    body: unknown,
    options: WriteOptions,
    contentType?: string,
    extraQuery?: HttpRequest["query"],
  ): Promise<unknown> {
    const query = { ...writeQuery(options), ...extraQuery };
    const request = {
      method,
      path,
      body,
      query,
      ...(contentType ? { contentType } : {}),
      ...callOf(options),
    };
    return (await this.transport.request(request)).body;
  }

  /** `/api/v1/namespaces/ns/pods` or `/apis/apps/v1/deployments`. */
  private async collectionPath(
    type: ResourceType,
    namespace: string | undefined,
    write = false,
  ): Promise<string> {
    const info = await this.resolve(type);
    if (info.namespaced && !namespace && write) {
      throw new TypeError(`${type.kind} is namespaced: set metadata.namespace (or the namespace option)`);
    }
    return collectionPathOf(info, namespace);
  }

  private async objectPath(
    type: ResourceType,
    name: string,
    namespace: string | undefined,
    sub?: string,
  ): Promise<string> {
    if (!name) throw new TypeError(`A ${type.kind} name is required`);
    const info = await this.resolve(type);
    if (info.namespaced && !namespace) {
      throw new TypeError(`${type.kind} is namespaced: pass the namespace of ${name}`);
    }
    return `${collectionPathOf(info, namespace)}/${encodeURIComponent(name)}${sub ? `/${sub}` : ""}`;
  }
}

function collectionPathOf(info: ResourceInfo, namespace: string | undefined): string {
  const base = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`;
  return info.namespaced && namespace
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${info.resource}`
    : `${base}/${info.resource}`;
}

function typeOf(object: KubeObject): ResourceType {
  if (!object.apiVersion || !object.kind) {
    throw new TypeError("The object needs apiVersion and kind to be written");
  }
  return { apiVersion: object.apiVersion, kind: object.kind };
}

function nameOf(object: KubeObject): string {
  const name = object.metadata?.name;
  if (!name) throw new TypeError(`The ${object.kind ?? "object"} needs metadata.name`);
  return name;
}

function listQuery(options: ListOptions): HttpRequest["query"] {
  return {
    labelSelector: options.labelSelector,
    fieldSelector: options.fieldSelector,
    limit: options.limit,
    continue: options.continue,
    resourceVersion: options.resourceVersion,
    resourceVersionMatch: options.resourceVersionMatch,
  };
}

function writeQuery(options: WriteOptions): HttpRequest["query"] {
  return {
    dryRun: options.dryRun ? "All" : undefined,
    fieldManager: options.fieldManager,
    fieldValidation: options.fieldValidation,
  };
}

function deleteBody(options: DeleteOptions): object {
  return {
    apiVersion: "v1",
    kind: "DeleteOptions",
    ...(options.propagationPolicy ? { propagationPolicy: options.propagationPolicy } : {}),
    ...(options.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
    ...(options.preconditions ? { preconditions: options.preconditions } : {}),
    ...(options.dryRun ? { dryRun: ["All"] } : {}),
  };
}

function callOf(options: RequestOptions): RequestOptions {
  return {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  };
}

function signalOf(options: { signal?: AbortSignal }): { signal?: AbortSignal } {
  return options.signal ? { signal: options.signal } : {};
}
