import { randomUUID } from "node:crypto";
import type {
  ClusterConfig,
  HttpRequest,
  HttpResponse,
  KubeObject,
  StreamRequest,
} from "../../client/index.js";
import { Client } from "../../client/index.js";
import {
  type ApplyInput,
  builtinListTypes,
  KEPT_METADATA,
  type ListTypes,
  recordUpdate,
  SERVER_METADATA,
  schemaListTypes,
  serverSideApply,
} from "./apply.js";
import {
  applyBuiltinDefaults,
  fieldValues,
  validateBuiltin,
  validateLabels,
  validateName,
} from "./builtins.js";
import { clone } from "./clone.js";
import {
  alreadyExists,
  badRequest,
  conflict,
  type FieldError,
  forbidden,
  gone,
  invalid,
  methodNotAllowed,
  NotEmulated,
  notFound,
  STALE_OBJECT,
  StatusError,
  unsupportedMediaType,
} from "./errors.js";
import type { MemoryHandler, MemoryStream } from "./handler.js";
import { type ServedMemoryApiServer, serveOverHttps } from "./https.js";
import {
  apiVersionOf,
  builtinKinds,
  type CrdLike,
  discoveryDocuments,
  isListedBuiltinKind,
  type KindInfo,
  kindsOfCrd,
  listedBuiltin,
  notEmulatedKind,
} from "./kinds.js";
import { jsonPatch, mergePatch, parseBody, strategicMergePatch } from "./patch.js";
import { authorize, type UserInfo } from "./rbac.js";
import { applyDefaults, checkEmulated, prune, validate } from "./schema.js";
import { fieldMatcher, labelMatcher } from "./selectors.js";
import { MemoryTransport } from "./transport.js";
import { type StoredEvent, WatchStream } from "./watch.js";

// Objects here are JSON of any kind, walked by field name; typing every path would hide the logic.
// biome-ignore lint/suspicious/noExplicitAny: internal JSON documents, never part of the public API.
type Obj = Record<string, any>;

/** What a {@link MemoryApiServer} serves from the start and how it behaves; all optional. */
export interface MemoryApiServerOptions {
  /**
   * How many past changes a watch can resume from; a watch (or a continue token) older than that
   * gets 410 Gone, as after etcd's compaction. Default {@link DEFAULT_HISTORY}.
   */
  history?: number;
  /**
   * Run what kube-controller-manager does for the API's own bookkeeping: owner-reference garbage
   * collection (background, foreground, orphan) and namespace deletion. Default true (a cluster);
   * false is what a bare kube-apiserver (the `apiserver` profile, envtest) does: nothing.
   */
  controllers?: boolean;
  /** Wall-clock time for timestamps (creationTimestamp, deletionTimestamp, managedFields). */
  now?: () => Date;
  /** Custom resources to serve from the start: `defineResource(…)` results or CRD objects. */
  resources?: ({ crd(): object } | CrdLike)[];
  /** Namespaces to create at start. Default `["default"]`. */
  namespaces?: string[];
}

/** etcd keeps far more, but a test rarely writes this much between a watch's reconnects. */
export const DEFAULT_HISTORY = 10_000;

interface Route {
  kind: KindInfo;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

interface Admission {
  kind: KindInfo;
  handle(
    operation: "CREATE" | "UPDATE" | "DELETE",
    object: Obj | undefined,
    old: Obj | undefined,
  ): Promise<Obj | undefined>;
}

/**
 * An in-memory Kubernetes API server: the API semantics operators rely on, in process, for
 * reconciler unit tests that run in milliseconds. What it does not emulate, it refuses with a
 * {@link NotEmulated} error naming the feature, rather than answer differently from kube-apiserver;
 * the conformance suite (memory/conformance.test.ts) runs the same requests against both.
 *
 * @example
 * ```ts
 * import { MemoryApiServer } from "kubeloop/testing";
 * import { Nginx } from "./resources.ts";
 *
 * const server = new MemoryApiServer({ resources: [Nginx] });
 * const client = server.client();
 * await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "default" } });
 * ```
 */
export class MemoryApiServer implements MemoryHandler {
  private revision = 1;
  private readonly objects = new Map<string, Map<string, Obj>>();
  private readonly kinds = new Map<string, KindInfo>();
  private readonly byResource = new Map<string, KindInfo[]>();
  private history: StoredEvent[] = [];
  /** Where the retained history starts in `history` (dropped events are cut off in batches). */
  private historyStart = 0;
  /** Changes at or below this revision are forgotten. */
  private compactedAt = 0;
  private readonly watches = new Set<WatchStream>();
  private readonly admission: Admission[] = [];
  private readonly options: Required<Pick<MemoryApiServerOptions, "history" | "controllers">> & {
    now: () => Date;
  };

  constructor(options: MemoryApiServerOptions = {}) {
    this.options = {
      history: options.history ?? DEFAULT_HISTORY,
      controllers: options.controllers ?? true,
      now: options.now ?? (() => new Date()),
    };
    for (const kind of builtinKinds()) this.addKind(kind);
    for (const namespace of options.namespaces ?? ["default"])
      this.createDirect({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    for (const resource of options.resources ?? []) this.installCrd(resource);
  }

  /**
   * A kubeloop Client whose requests this server answers in process: as the administrator, or as
   * `user` (in `groups`, plus `system:authenticated`), whose requests RBAC authorizes from the
   * Roles, ClusterRoles and bindings stored here, as `kubectl --as` would be.
   */
  client(options: { userAgent?: string; user?: string; groups?: string[] } = {}): Client {
    const user = options.user
      ? { user: options.user, groups: [...(options.groups ?? []), "system:authenticated"] }
      : undefined;
    const transport = new MemoryTransport(this, options.userAgent ?? "kubeloop", user);
    const config: ClusterConfig = {
      server: transport.server,
      tls: { rejectUnauthorized: true },
      namespace: "default",
      source: "memory",
      authorization: async () => undefined,
    };
    return new Client(config, { transport });
  }

  /** Serves a custom resource: `defineResource(…)`'s result or a CRD object (also possible through the API). */
  installCrd(resource: { crd(): object } | CrdLike): void {
    const crd = ("crd" in resource && typeof resource.crd === "function" ? resource.crd() : resource) as Obj;
    // A CrdLike may leave out what every CRD says: the server needs them to store it as one.
    this.createDirect({ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", ...crd });
  }

  /**
   * Serves this server on a loopback HTTPS port too, with a kubeconfig for it, so kubectl and other
   * clients can be pointed at it (`kubectl --kubeconfig <kubeconfigPath> get …`). Close it when done.
   */
  serve(): Promise<ServedMemoryApiServer> {
    return serveOverHttps(this);
  }

  /**
   * Puts an object in as test data, the way a controller elsewhere in the cluster would have
   * written it (a pod a Deployment's ReplicaSet made, with the status the kubelet reported): the
   * server fills in uid, creationTimestamp and resourceVersion, watches see it, but admission and
   * defaulting do not run. For kinds whose API writes are refused (pods) and for setting up state.
   * An object that already exists is replaced.
   */
  seed<T extends KubeObject>(object: T): T {
    const kind = this.kindFor(String(object.apiVersion), String(object.kind));
    if (!kind && isListedBuiltinKind(String(object.apiVersion), String(object.kind)))
      throw new NotEmulated(notEmulatedKind(String(object.kind), String(object.apiVersion)));
    if (!kind) throw new Error(`seed: kind ${object.kind} in ${object.apiVersion} is not served here`);
    const copy = clone(object) as Obj;
    const key = keyOf(copy.metadata?.namespace, copy.metadata?.name ?? "");
    const current = this.bucket(kind).get(key);
    if (!current)
      return clone(
        this.createSync(
          { kind, namespace: copy.metadata?.namespace, name: undefined, subresource: undefined },
          copy,
          "seed",
          false,
          true,
        ),
      ) as T;
    copy.metadata = {
      ...copy.metadata,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      resourceVersion: this.nextRevision(),
    };
    this.bucket(kind).set(key, copy);
    this.record(kind, "MODIFIED", copy, current);
    return clone(this.output(kind, copy)) as T;
  }

  /** The current resourceVersion (a list's). */
  get resourceVersion(): string {
    return String(this.revision);
  }

  /** Forgets the history of changes: watches and continue tokens from before now get 410 Gone. */
  compact(): void {
    this.compactedAt = this.revision;
    this.history = [];
    this.historyStart = 0;
  }

  /**
   * Resolves once every open watch has been read to its end and its reader waits for more: the
   * informers fed by this server have seen every change so far. What `ReconcileHarness.settle` awaits.
   */
  async settled(): Promise<void> {
    for (let turn = 0; turn < 10_000; turn++) {
      if ([...this.watches].every((w) => w.drained)) {
        await new Promise((resolve) => setImmediate(resolve));
        if ([...this.watches].every((w) => w.drained)) return;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error("MemoryApiServer.settled: a watch's reader did not catch up (is something blocking it?)");
  }

  /** How many watches are open (for tests that wait for a client to start watching). */
  get watchCount(): number {
    return this.watches.size;
  }

  /** Sends a BOOKMARK with the current resourceVersion to every watch that allows them. */
  bookmark(): void {
    for (const watch of this.watches) watch.bookmark(this.revision);
  }

  /** Calls `defineWebhooks` definitions in process on writes of their kind (defaulting, then validation). */
  addWebhooks(...definitions: WebhookLike[]): void {
    for (const definition of definitions) {
      const kind = this.kindFor(
        `${definition.resource.group ? `${definition.resource.group}/` : ""}${definition.resource.version}`,
        definition.resource.kind,
      );
      const { group, version, kind: kindName } = definition.resource;
      if (!kind && isListedBuiltinKind(apiVersionOf({ group, version }), kindName))
        throw new NotEmulated(notEmulatedKind(kindName, apiVersionOf({ group, version })));
      if (!kind)
        throw new Error(
          `addWebhooks: kind ${definition.resource.kind} is not served here; install its CRD first`,
        );
      this.admission.push({ kind, handle: (op, object, old) => callWebhook(definition, op, object, old) });
    }
  }

  // ---------------------------------------------------------------- requests

  /** Answers one request; a failure throws a {@link StatusError} (the transport turns it into the client's typed error). */
  async handle(request: HttpRequest & { userAgent?: string; user?: UserInfo }): Promise<HttpResponse> {
    const [pathOnly] = request.path.split("?");
    const path = pathOnly ?? "";
    if (path === "/api" || path === "/apis") return this.discovery(path, request.accept);
    if (path === "/version") return ok({ major: "1", minor: "36", gitVersion: "v1.36.4-memory" });
    const route = this.route(path);
    const query = request.query ?? {};
    if (request.user) this.authorize(request.user, route, verbOf(request.method, route.name !== undefined));
    const body = request.body === undefined ? undefined : (parseBody(request.body) as Obj);
    const manager =
      typeof query.fieldManager === "string"
        ? query.fieldManager
        : ((request.userAgent ?? "kubeloop").split("/")[0] ?? "");
    if (query.dryRun) throw new NotEmulated("dry-run requests (dryRun=All)");
    const { kind, name, subresource } = route;
    if (kind.seedOnly && request.method !== "GET") throw new NotEmulated(kind.seedOnly);
    if (subresource && subresource !== "status" && subresource !== "scale")
      throw new NotEmulated(`the ${subresource} subresource of ${kind.resource}`);
    if (subresource === "status" && !kind.status) throw notFound(kind.group, kind.resource, name ?? "");
    if (subresource === "scale") {
      if (!kind.scale) throw notFound(kind.group, kind.resource, name ?? "");
      throw new NotEmulated("the scale subresource (use a patch of spec.replicas)");
    }
    switch (request.method) {
      case "GET":
        if (name) return ok(this.read(route));
        return ok(this.list(route, query, request.accept));
      case "POST":
        if (name) throw methodNotAllowed(`the server does not allow this method on the requested resource`);
        return created(await this.create(route, body ?? {}, manager));
      case "PUT":
        return ok(await this.replace(route, body ?? {}, manager));
      case "PATCH":
        return ok(
          await this.patch(
            route,
            body,
            request.contentType ?? "",
            manager,
            query.force === true || query.force === "true",
          ),
        );
      case "DELETE":
        if (!name) return ok(await this.deleteCollection(route, query, body));
        return ok(await this.delete(route, body));
    }
  }

  /** Opens a watch, or a streamed list. */
  async stream(request: StreamRequest & { user?: UserInfo }): Promise<MemoryStream> {
    const query = request.query ?? {};
    if (!query.watch) {
      const response = await this.handle(request);
      const bytes = new TextEncoder().encode(JSON.stringify(response.body));
      return {
        status: response.status,
        body: (async function* () {
          yield bytes;
        })(),
        close: () => undefined,
      };
    }
    const route = this.route(request.path);
    if (request.user) this.authorize(request.user, route, "watch");
    const watch = this.openWatch(route, query, request.accept);
    request.signal?.addEventListener("abort", () => watch.close(), { once: true });
    if (typeof query.timeoutSeconds === "number" || typeof query.timeoutSeconds === "string") {
      const timer = setTimeout(() => watch.close(), Number(query.timeoutSeconds) * 1000);
      timer.unref?.();
    }
    // Both ways to read it: bytes (HTTPS, a raw reader), or objects (the in-process client).
    return { status: 200, body: watch.body(), events: watch.events(), close: () => watch.close() };
  }

  private discovery(path: string, accept: string | undefined): HttpResponse {
    if (!accept?.includes("apidiscovery.k8s.io"))
      throw new NotEmulated(
        "the legacy discovery documents (ask for aggregated discovery, apidiscovery.k8s.io/v2)",
      );
    this.discoveryCache ??= discoveryDocuments([...this.kinds.values()]);
    return ok(path === "/api" ? this.discoveryCache.core : this.discoveryCache.groups);
  }

  /** The discovery documents, built once per set of kinds (every new client reads them). */
  private discoveryCache: ReturnType<typeof discoveryDocuments> | undefined;

  private route(path: string): Route {
    const parts = path
      .split("/")
      .filter(Boolean)
      .map((part) => (part.includes("%") ? decodeURIComponent(part) : part));
    let group = "";
    let rest: string[];
    if (parts[0] === "api") rest = parts.slice(1);
    else if (parts[0] === "apis") {
      group = parts[1] ?? "";
      rest = parts.slice(2);
    } else throw new NotEmulated(`the path ${path}`);
    const version = rest[0] ?? "";
    const segments = rest.slice(1);
    let namespace: string | undefined;
    let resource: string;
    let name: string | undefined;
    let subresource: string | undefined;
    const isNamespaceObject =
      segments[0] === "namespaces" &&
      (segments.length <= 2 ||
        (segments.length === 3 && (segments[2] === "status" || segments[2] === "finalize")));
    if (segments[0] === "namespaces" && !isNamespaceObject) {
      [, namespace, resource = "", name, subresource] = segments as [
        string,
        string,
        string,
        string?,
        string?,
      ];
    } else {
      [resource = "", name, subresource] = segments as [string, string?, string?];
    }
    const kind = (this.byResource.get(`${group}/${resource}`) ?? []).find((k) => k.version === version);
    if (!kind) {
      const listed = listedBuiltin(group, version, resource);
      if (listed) throw new NotEmulated(notEmulatedKind(listed, apiVersionOf({ group, version }), resource));
      if (group && !this.isKnownGroup(group))
        throw new NotEmulated(`the API group ${group}/${version} (resource ${resource})`);
      throw notFound("", "", "").status.code === 404
        ? new StatusError({
            kind: "Status",
            apiVersion: "v1",
            metadata: {},
            status: "Failure",
            message: "the server could not find the requested resource",
            reason: "NotFound",
            details: {},
            code: 404,
          } as StatusError["status"])
        : badRequest("");
    }
    if (kind.namespaced === false && namespace) throw notFound(kind.group, kind.resource, name ?? "");
    if (kind.storageVersion && kind.version !== kind.storageVersion)
      throw new NotEmulated(
        `conversion between versions (${kind.resource}.${kind.group} is stored as ${kind.storageVersion}; this request is in ${kind.version}: use the storage version)`,
      );
    return { kind, namespace, name, subresource };
  }

  private authorize(user: UserInfo, route: Route, verb: string): void {
    const rbac = "rbac.authorization.k8s.io";
    const all = (resource: string) => [...(this.objects.get(`${rbac}/${resource}`)?.values() ?? [])];
    authorize(
      {
        clusterRoleBindings: () => all("clusterrolebindings"),
        roleBindings: (namespace) => all("rolebindings").filter((b) => b.metadata.namespace === namespace),
        clusterRole: (name) => this.objects.get(`${rbac}/clusterroles`)?.get(name),
        role: (namespace, name) => this.objects.get(`${rbac}/roles`)?.get(`${namespace}/${name}`),
      },
      user,
      {
        verb,
        group: route.kind.group,
        resource: route.kind.resource,
        subresource: route.subresource,
        // A namespace object is "in" itself for RBAC (a RoleBinding there can grant get on it).
        namespace: route.kind.namespaced
          ? route.namespace
          : route.kind.kind === "Namespace" && route.kind.group === ""
            ? route.name
            : undefined,
        name: route.name,
      },
    );
  }

  private isKnownGroup(group: string): boolean {
    return [...this.kinds.values()].some((k) => k.group === group);
  }

  // ---------------------------------------------------------------- reads

  private bucket(kind: KindInfo): Map<string, Obj> {
    const key = `${kind.group}/${kind.resource}`;
    let bucket = this.objects.get(key);
    if (!bucket) {
      bucket = new Map();
      this.objects.set(key, bucket);
    }
    return bucket;
  }

  private read(route: Route): Obj {
    const stored = this.bucket(route.kind).get(keyOf(route.namespace, route.name ?? ""));
    if (!stored) throw notFound(route.kind.group, route.kind.resource, route.name ?? "");
    return this.output(route.kind, stored);
  }

  /**
   * Objects written under each kind's current schema, hence already defaulted. Stored objects are
   * never changed in place (a write stores a new object), so they can be shared by the history and
   * by answers, which the transport copies anyway.
   */
  private readonly defaulted = new WeakMap<Obj, KindInfo>();

  /**
   * The stored object as a client reads it: in the requested version, with defaults applied (a
   * custom resource written before its CRD's schema changed gets the new defaults, as on the
   * server). A shallow copy: callers may set top-level fields, never change nested ones.
   */
  private output(kind: KindInfo, stored: Obj): Obj {
    if (!kind.schema || this.defaulted.get(stored) === kind)
      return { ...stored, apiVersion: apiVersionOf(kind) };
    const object = clone(stored);
    object.apiVersion = apiVersionOf(kind);
    applyDefaults(object, kind.schema);
    return object;
  }

  /** Keeps a stored object (never changed after this) and notes that it carries its kind's defaults. */
  private store(kind: KindInfo, key: string, object: Obj): void {
    this.bucket(kind).set(key, object);
    this.defaulted.set(object, kind);
  }

  private list(route: Route, query: Record<string, unknown>, accept: string | undefined): Obj {
    const { kind } = route;
    const labels = labelMatcher(query.labelSelector as string | undefined);
    const fields = fieldMatcher(
      query.fieldSelector as string | undefined,
      new Set(["metadata.name", "metadata.namespace", ...kind.selectableFields]),
      !kind.crd && kind.selectableFields.length === 0,
    );
    let revision = this.revision;
    let start = "";
    if (query.continue) {
      const token = decodeContinue(String(query.continue));
      revision = token.rv;
      start = token.start;
      if (revision <= this.compactedAt)
        throw gone(
          "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        );
    } else if (query.resourceVersion && query.resourceVersionMatch === "Exact") {
      revision = Number(query.resourceVersion);
      if (revision <= this.compactedAt) throw gone(`The resourceVersion for the provided list is too old.`);
    }
    const bucket = revision === this.revision ? this.bucket(kind) : this.snapshot(kind, revision);
    const matching = [...bucket.entries()]
      .filter(([key]) => key > start)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .filter(([, o]) => !route.namespace || o.metadata.namespace === route.namespace)
      .filter(([, o]) => labels(o.metadata.labels ?? {}) && fields(fieldValues(o, kind.selectableFields)));
    const limit = Number(query.limit ?? 0);
    const page = limit > 0 ? matching.slice(0, limit) : matching;
    const more = limit > 0 && matching.length > limit;
    const metadataOnly = accept?.includes("as=PartialObjectMetadataList");
    const items = page.map(([, o]) => {
      const object = this.output(kind, o);
      if (metadataOnly)
        return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata };
      // Typed lists of built-in kinds leave out each item's apiVersion and kind; custom resources keep them.
      if (!kind.crd) {
        delete object.apiVersion;
        delete object.kind;
      }
      return object;
    });
    const last = page.at(-1)?.[0];
    const metadata: Obj = { resourceVersion: String(revision) };
    if (kind.crd) metadata.continue = "";
    if (more && last !== undefined) {
      metadata.continue = encodeContinue(revision, last);
      if (!query.labelSelector && !query.fieldSelector)
        metadata.remainingItemCount = matching.length - page.length;
    }
    return metadataOnly
      ? { kind: "PartialObjectMetadataList", apiVersion: "meta.k8s.io/v1", metadata, items }
      : { kind: `${kind.kind}List`, apiVersion: apiVersionOf(kind), metadata, items };
  }

  /** The objects of a kind as they were at `revision`: now, with later changes undone. */
  private snapshot(kind: KindInfo, revision: number): Map<string, Obj> {
    const bucket = new Map(this.bucket(kind));
    const resource = `${kind.group}/${kind.resource}`;
    for (let i = this.history.length - 1; i >= this.historyStart; i--) {
      const event = this.history[i] as StoredEvent;
      if (event.resourceVersion <= revision) break;
      if (event.resource !== resource) continue;
      const meta = event.object.metadata as Obj;
      const key = keyOf(meta.namespace, meta.name);
      if (event.type === "ADDED") bucket.delete(key);
      else if (event.previous) bucket.set(key, event.previous);
    }
    return bucket;
  }

  private openWatch(route: Route, query: Record<string, unknown>, accept: string | undefined): WatchStream {
    const { kind } = route;
    const watch = new WatchStream(
      {
        resource: `${kind.group}/${kind.resource}`,
        namespace: route.namespace,
        labels: labelMatcher(query.labelSelector as string | undefined),
        fields: fieldMatcher(
          query.fieldSelector as string | undefined,
          new Set(["metadata.name", "metadata.namespace", ...kind.selectableFields]),
          !kind.crd && kind.selectableFields.length === 0,
        ),
        valuesOf: (o) => ({
          labels: ((o.metadata as Obj).labels as Record<string, string>) ?? {},
          fields: fieldValues(o, kind.selectableFields),
        }),
        allowBookmarks: query.allowWatchBookmarks === true || query.allowWatchBookmarks === "true",
        metadataOnly: Boolean(accept?.includes("as=PartialObjectMetadata")),
        apiVersion: apiVersionOf(kind),
        kind: kind.kind,
      },
      (w) => this.watches.delete(w),
    );
    const rv = query.resourceVersion === undefined ? "" : String(query.resourceVersion);
    const initial = query.sendInitialEvents === true || query.sendInitialEvents === "true";
    if (rv === "" || rv === "0" || initial) {
      const state = this.list(
        route,
        { labelSelector: query.labelSelector, fieldSelector: query.fieldSelector },
        undefined,
      );
      for (const item of state.items as Obj[]) {
        item.apiVersion = apiVersionOf(kind);
        item.kind = kind.kind;
        watch.push("ADDED", item);
      }
      if (initial) watch.bookmark(this.revision, { "k8s.io/initial-events-end": "true" });
      this.watches.add(watch);
      return watch;
    }
    const from = Number(rv);
    if (from < this.compactedAt) {
      watch.error({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `too old resource version: ${from} (${this.compactedAt})`,
        reason: "Expired",
        code: 410,
      });
      return watch;
    }
    for (let i = this.historyStart; i < this.history.length; i++) {
      const event = this.history[i] as StoredEvent;
      if (event.resourceVersion > from) watch.offer(this.outputEvent(kind, event));
    }
    this.watches.add(watch);
    return watch;
  }

  private outputEvent(kind: KindInfo, event: StoredEvent): StoredEvent {
    return {
      ...event,
      object: this.output(kind, event.object),
      previous: event.previous && this.output(kind, event.previous),
    };
  }

  // ---------------------------------------------------------------- writes

  private nextRevision(): string {
    this.revision += 1;
    return String(this.revision);
  }

  /** The last timestamp written, by its second: most writes of a test fall in the same one. */
  private lastTimestamp = { second: Number.NaN, text: "" };

  private timestamp(): string {
    const now = this.options.now();
    const second = Math.floor(now.getTime() / 1000);
    if (second !== this.lastTimestamp.second)
      this.lastTimestamp = { second, text: `${now.toISOString().slice(0, 19)}Z` };
    return this.lastTimestamp.text;
  }

  private record(kind: KindInfo, type: StoredEvent["type"], object: Obj, previous: Obj | undefined): void {
    const event: StoredEvent = {
      resourceVersion: Number(object.metadata.resourceVersion),
      resource: `${kind.group}/${kind.resource}`,
      type,
      object,
      previous,
    };
    this.history.push(event);
    if (this.history.length - this.historyStart > this.options.history) {
      this.compactedAt = (this.history[this.historyStart] as StoredEvent).resourceVersion;
      this.historyStart++;
      // Cut the dropped ones off now and then, not one by one (a shift per write would copy it all).
      if (this.historyStart >= 1024 && this.historyStart * 2 >= this.history.length) {
        this.history = this.history.slice(this.historyStart);
        this.historyStart = 0;
      }
    }
    let shown: StoredEvent | undefined;
    for (const watch of this.watches) {
      if (watch.filter.resource !== event.resource) continue;
      shown ??= this.outputEvent(kind, event);
      watch.offer(shown);
    }
  }

  private kindFor(apiVersion: string, kindName: string): KindInfo | undefined {
    return this.kinds.get(`${apiVersion}/${kindName}`);
  }

  private addKind(kind: KindInfo): void {
    this.discoveryCache = undefined;
    this.kinds.set(`${apiVersionOf(kind)}/${kind.kind}`, kind);
    const key = `${kind.group}/${kind.resource}`;
    this.byResource.set(key, [
      ...(this.byResource.get(key) ?? []).filter((k) => k.version !== kind.version),
      kind,
    ]);
  }

  /** Creates an object without admission (server setup). */
  private createDirect(object: Obj): void {
    const [group, version] = splitApiVersion(String(object.apiVersion));
    const kind = this.kindFor(String(object.apiVersion), String(object.kind));
    if (!kind) throw new Error(`unknown kind ${object.apiVersion} ${object.kind}`);
    void group;
    void version;
    this.createSync(
      { kind, namespace: object.metadata?.namespace, name: undefined, subresource: undefined },
      clone(object),
      "kubeloop",
    );
  }

  private async create(route: Route, body: Obj, manager: string): Promise<Obj> {
    const object = clone(body);
    const admitted = await this.admit(route.kind, "CREATE", this.prepareCreate(route, object), undefined);
    return this.createSync(route, admitted, manager, true);
  }

  private prepareCreate(route: Route, object: Obj): Obj {
    const { kind } = route;
    object.metadata ??= {};
    if (object.kind !== undefined && object.kind !== kind.kind)
      throw badRequest(
        `the API version in the data (${object.apiVersion}) does not match the expected API version (${apiVersionOf(kind)})`,
      );
    if (kind.namespaced) {
      if (object.metadata.namespace && route.namespace && object.metadata.namespace !== route.namespace)
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      object.metadata.namespace = route.namespace ?? object.metadata.namespace;
    } else delete object.metadata.namespace;
    if (!object.metadata.name && object.metadata.generateName)
      object.metadata.name = `${object.metadata.generateName}${randomSuffix()}`;
    return object;
  }

  private createSync(
    route: Route,
    body: Obj,
    manager: string,
    prepared = false,
    seeding = false,
    appliedFields?: Obj[],
  ): Obj {
    const { kind } = route;
    const object = prepared ? body : this.prepareCreate(route, body);
    const name = object.metadata.name as string | undefined;
    const errors: FieldError[] = [];
    if (!name)
      errors.push({
        type: "FieldValueRequired",
        field: "metadata.name",
        message: "Required value: name or generateName is required",
      });
    else validateName(kind.kind, name, errors);
    if (kind.namespaced && !object.metadata.namespace)
      errors.push({ type: "FieldValueRequired", field: "metadata.namespace", message: "Required value" });
    const namespace = object.metadata.namespace as string | undefined;
    if (kind.namespaced && namespace) {
      const ns = this.bucket(this.kindFor("v1", "Namespace") as KindInfo).get(namespace);
      if (!ns) throw notFound("", "namespaces", namespace);
      if (ns.metadata.deletionTimestamp)
        throw forbidden(
          `${kind.group ? `${kind.resource}.${kind.group}` : kind.resource} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
          {
            name: name ?? "",
            ...(kind.group ? { group: kind.group } : {}),
            kind: kind.resource,
            causes: [
              {
                reason: "NamespaceTerminating",
                message: `namespace ${namespace} is being terminated`,
                field: "metadata.namespace",
              },
            ],
          },
        );
    }
    if (errors.length) throw invalid(kind.group, kind.kind, name ?? "", errors);
    const bucket = this.bucket(kind);
    if (bucket.has(keyOf(namespace, name ?? ""))) throw alreadyExists(kind.group, kind.resource, name ?? "");
    object.apiVersion = apiVersionOf(kind);
    object.kind = kind.kind;
    const metadata = object.metadata;
    for (const field of SERVER_METADATA) delete metadata[field];
    if (!seeding) this.normalise(kind, object, undefined);
    metadata.uid = randomUUID();
    metadata.creationTimestamp = this.timestamp();
    if (kind.generation) metadata.generation = 1;
    if (kind.kind === "CustomResourceDefinition") this.checkCrd(object);
    recordUpdate(
      undefined,
      object,
      manager,
      undefined,
      apiVersionOf(kind),
      kind.status,
      this.listTypes(kind),
      this.timestamp(),
    );
    // Created by an apply: the applier owns its fields (as an Apply, not an Update).
    if (appliedFields) metadata.managedFields = appliedFields;
    metadata.resourceVersion = this.nextRevision();
    if (kind.kind === "CustomResourceDefinition") this.serveCrd(object);
    if (seeding) this.bucket(kind).set(keyOf(namespace, name ?? ""), object);
    else this.store(kind, keyOf(namespace, name ?? ""), object);
    this.record(kind, "ADDED", object, undefined);
    return this.output(kind, object);
  }

  /** Defaults, pruning and validation: what every write of the object's body goes through. */
  private normalise(kind: KindInfo, object: Obj, old: Obj | undefined): void {
    const errors: FieldError[] = [];
    validateLabels(object.metadata.labels, errors);
    if (kind.schema) {
      const { apiVersion, kind: k, metadata } = object;
      // A copy: with nothing to prune (a root that preserves unknown fields) prune returns `object` itself.
      const pruned = {
        ...(prune(object, {
          ...kind.schema,
          properties: {
            ...((kind.schema.properties as Obj) ?? {}),
            apiVersion: {},
            kind: {},
            metadata: { "x-kubernetes-preserve-unknown-fields": true },
          },
        }) as Obj),
      };
      for (const key of Object.keys(object)) delete object[key];
      Object.assign(object, pruned, { apiVersion, kind: k, metadata });
      applyDefaults(object, kind.schema);
      const { apiVersion: _a, kind: _k, metadata: _m, ...content } = object;
      validate(
        content,
        { ...kind.schema, required: (kind.schema.required as string[] | undefined) ?? [] },
        "",
        errors,
      );
      for (const e of errors) e.field = e.field.replace(/^\./, "");
      for (const e of errors) e.message = e.message.replaceAll(/: \.([a-zA-Z])/g, ": $1");
    } else {
      applyBuiltinDefaults(apiVersionOf(kind), kind.kind, object);
      validateBuiltin(apiVersionOf(kind), kind.kind, object, errors);
    }
    if (errors.length) throw invalid(kind.group, kind.kind, String(object.metadata.name ?? ""), errors);
    void old;
  }

  private checkCrd(crd: Obj): void {
    for (const version of (crd.spec?.versions as Obj[] | undefined) ?? [])
      checkEmulated((version.schema?.openAPIV3Schema as Obj | undefined) ?? {});
  }

  private serveCrd(crd: Obj): void {
    for (const kind of kindsOfCrd(crd as CrdLike)) this.addKind(kind);
    crd.status = {
      acceptedNames: {
        ...crd.spec.names,
        singular: crd.spec.names.singular ?? crd.spec.names.kind.toLowerCase(),
        listKind: `${crd.spec.names.kind}List`,
      },
      conditions: [],
      storedVersions: [crd.spec.versions.find((v: Obj) => v.storage)?.name],
    };
  }

  private listTypes(kind: KindInfo): ListTypes {
    return kind.schema ? schemaListTypes(kind.schema) : builtinListTypes;
  }

  private async replace(route: Route, body: Obj, manager: string): Promise<Obj> {
    const { kind } = route;
    const name = route.name ?? "";
    const current = this.bucket(kind).get(keyOf(route.namespace, name));
    if (body.metadata?.name && body.metadata.name !== name)
      throw badRequest(
        `the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`,
      );
    if (!current) {
      if (!kind.createOnUpdate) throw notFound(kind.group, kind.resource, name);
      return this.create(route, { ...body, metadata: { ...body.metadata, name } }, manager);
    }
    const rv = body.metadata?.resourceVersion;
    if (!rv && !kind.unconditionalUpdate)
      throw invalid(
        kind.group,
        kind.kind,
        name,
        [
          {
            type: "FieldValueInvalid",
            field: "metadata.resourceVersion",
            message: "Invalid value: 0: must be specified for an update",
          },
        ],
        1,
        kind.group ? `${kind.resource}.${kind.group}` : kind.resource,
      );
    if (rv && rv !== current.metadata.resourceVersion)
      throw conflict(kind.group, kind.resource, name, STALE_OBJECT);
    return this.update(route, current, clone(body), manager);
  }

  /** The update pipeline shared by PUT, PATCH and apply: subresource rules, admission, generation, finalizers. */
  private async update(
    route: Route,
    current: Obj,
    next: Obj,
    manager: string,
    recordManager = true,
  ): Promise<Obj> {
    const { kind } = route;
    const old = current;
    next.metadata ??= {};
    let object: Obj;
    if (route.subresource === "status") {
      object = clone(old);
      if (next.status === undefined) delete object.status;
      else object.status = next.status;
      if (next.metadata.managedFields) object.metadata.managedFields = next.metadata.managedFields;
    } else {
      object = next;
      if (kind.status) {
        if (old.status === undefined) delete object.status;
        else object.status = clone(old.status);
      }
    }
    object.apiVersion = apiVersionOf(kind);
    object.kind = kind.kind;
    const metadata = object.metadata;
    for (const field of [...KEPT_METADATA, "name", "namespace"]) {
      if (old.metadata[field] === undefined) delete metadata[field];
      else metadata[field] = old.metadata[field];
    }
    metadata.resourceVersion = old.metadata.resourceVersion;
    if (old.metadata.deletionTimestamp) {
      const added = ((metadata.finalizers as string[] | undefined) ?? []).filter(
        (f) => !((old.metadata.finalizers as string[] | undefined) ?? []).includes(f),
      );
      if (added.length) {
        // kube-apiserver reports this one twice (metadata is validated on two paths); so do we.
        const error: FieldError = {
          type: "FieldValueForbidden",
          field: "metadata.finalizers",
          message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(", ")}}`,
        };
        throw invalid(kind.group, kind.kind, String(old.metadata.name), [error, error], 1);
      }
    }
    this.normalise(kind, object, old);
    object = (await this.admit(kind, "UPDATE", object, this.output(kind, old))) ?? object;
    if (recordManager)
      recordUpdate(
        old,
        object,
        manager,
        route.subresource === "status" ? "status" : undefined,
        apiVersionOf(kind),
        kind.status,
        this.listTypes(kind),
        this.timestamp(),
      );
    const strip = (o: Obj) => {
      const { metadata: m, status, ...rest } = o;
      const { managedFields: _f, resourceVersion: _r, ...meta } = m as Obj;
      return { ...rest, metadata: meta, status };
    };
    if (sameJson(strip(object), strip(old))) {
      return this.output(kind, old);
    }
    const annotationsCount =
      kind.kind === "Deployment" &&
      JSON.stringify(old.metadata.annotations ?? {}) !== JSON.stringify(metadata.annotations ?? {});
    if (kind.generation && (specChanged(old, object, kind.status) || annotationsCount))
      metadata.generation = (old.metadata.generation ?? 0) + 1;
    metadata.resourceVersion = this.nextRevision();
    const key = keyOf(route.namespace, String(old.metadata.name));
    if (metadata.deletionTimestamp && !((metadata.finalizers as string[] | undefined) ?? []).length) {
      this.bucket(kind).delete(key);
      this.record(kind, "DELETED", object, old);
      this.afterDelete(kind, object);
      // The answer carries the last stored version, as kube-apiserver's does.
      return this.output(kind, {
        ...object,
        metadata: { ...metadata, resourceVersion: old.metadata.resourceVersion },
      });
    }
    if (kind.kind === "CustomResourceDefinition" && route.subresource !== "status") this.serveCrd(object);
    this.store(kind, key, object);
    this.record(kind, "MODIFIED", object, old);
    return this.output(kind, object);
  }

  private async patch(
    route: Route,
    body: unknown,
    contentType: string,
    manager: string,
    force: boolean,
  ): Promise<Obj> {
    const { kind } = route;
    const name = route.name ?? "";
    const current = this.bucket(kind).get(keyOf(route.namespace, name));
    if (contentType.startsWith("application/apply-patch")) {
      const applied = (typeof body === "string" ? JSON.parse(body) : body) as Obj;
      return this.apply(route, current, applied, manager, force);
    }
    if (!current) throw notFound(kind.group, kind.resource, name);
    // A deep copy: the patch functions share the subtrees they leave alone, and the update writes into them.
    const base = clone(this.output(kind, current));
    let patched: Obj;
    if (contentType.startsWith("application/merge-patch+json")) patched = mergePatch(base, body) as Obj;
    else if (contentType.startsWith("application/json-patch+json")) patched = jsonPatch(base, body) as Obj;
    else if (contentType.startsWith("application/strategic-merge-patch+json")) {
      if (kind.crd)
        throw unsupportedMediaType(
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
        );
      patched = strategicMergePatch(base, body) as Obj;
    } else
      throw unsupportedMediaType(
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
      );
    const rv = (patched.metadata as Obj | undefined)?.resourceVersion;
    if (rv !== undefined && rv !== current.metadata.resourceVersion)
      throw conflict(kind.group, kind.resource, name, STALE_OBJECT);
    return this.update(route, current, patched, manager);
  }

  private async apply(
    route: Route,
    current: Obj | undefined,
    applied: Obj,
    manager: string,
    force: boolean,
  ): Promise<Obj> {
    const { kind } = route;
    if (!manager) throw badRequest("PATCH, application/apply-patch+yaml requests must have a fieldManager");
    if (applied.apiVersion !== apiVersionOf(kind) || applied.kind !== kind.kind)
      throw badRequest(
        `the API version in the data (${applied.apiVersion}) does not match the expected API version (${apiVersionOf(kind)})`,
      );
    const input: ApplyInput = {
      live: current ? this.output(kind, current) : undefined,
      applied,
      manager,
      force,
      apiVersion: apiVersionOf(kind),
      subresource: route.subresource === "status" ? "status" : undefined,
      statusSubresource: kind.status,
      listTypes: this.listTypes(kind),
      now: this.timestamp(),
    };
    if (!current) {
      if (route.subresource === "status") throw notFound(kind.group, kind.resource, route.name ?? "");
      const object: Obj = serverSideApply(input);
      object.apiVersion = applied.apiVersion;
      object.kind = applied.kind;
      object.metadata = {
        ...object.metadata,
        name: route.name,
        ...(route.namespace ? { namespace: route.namespace } : {}),
      };
      const managed = object.metadata.managedFields;
      const admitted = await this.admit(kind, "CREATE", this.prepareCreate(route, object), undefined);
      return this.createSync(route, admitted, manager, true, false, managed);
    }
    const rv = applied.metadata?.resourceVersion;
    if (rv !== undefined && rv !== current.metadata.resourceVersion)
      throw conflict(kind.group, kind.resource, route.name ?? "", STALE_OBJECT);
    const merged: Obj = serverSideApply(input);
    merged.metadata.resourceVersion = current.metadata.resourceVersion;
    return this.update(route, current, merged, manager, false);
  }

  private async delete(route: Route, body: Obj | undefined): Promise<Obj> {
    const { kind } = route;
    const name = route.name ?? "";
    const key = keyOf(route.namespace, name);
    const current = this.bucket(kind).get(key);
    if (!current) throw notFound(kind.group, kind.resource, name);
    const preconditions = body?.preconditions as { uid?: string; resourceVersion?: string } | undefined;
    if (preconditions?.uid && preconditions.uid !== current.metadata.uid)
      throw conflict(
        kind.group,
        kind.resource,
        name,
        `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    if (preconditions?.resourceVersion && preconditions.resourceVersion !== current.metadata.resourceVersion)
      throw new StatusError({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `Operation cannot be fulfilled on ${kind.group ? `${kind.kind}.${kind.group}` : kind.kind} "${name}": the ResourceVersion in the precondition (${preconditions.resourceVersion}) does not match the ResourceVersion in record (${current.metadata.resourceVersion}). The object might have been modified`,
        reason: "Conflict",
        details: { name, ...(kind.group ? { group: kind.group } : {}), kind: kind.resource },
        code: 409,
      } as StatusError["status"]);
    await this.admit(kind, "DELETE", undefined, this.output(kind, current));
    const policy =
      (body?.propagationPolicy as string | undefined) ??
      (body?.orphanDependents === true ? "Orphan" : undefined);
    const finalizers = [...((current.metadata.finalizers as string[] | undefined) ?? [])];
    if (policy === "Foreground" && !finalizers.includes("foregroundDeletion"))
      finalizers.push("foregroundDeletion");
    if (policy === "Orphan" && !finalizers.includes("orphan")) finalizers.push("orphan");
    if (kind.kind === "Namespace" && kind.group === "") return this.deleteNamespace(kind, current);
    if (finalizers.length) {
      if (current.metadata.deletionTimestamp) return this.output(kind, current);
      const old = clone(current);
      const object = clone(current);
      object.metadata.finalizers = finalizers;
      object.metadata.deletionTimestamp = this.timestamp();
      object.metadata.deletionGracePeriodSeconds = 0;
      if (kind.generation) object.metadata.generation = (object.metadata.generation ?? 0) + 1;
      object.metadata.resourceVersion = this.nextRevision();
      this.store(kind, key, object);
      this.record(kind, "MODIFIED", object, old);
      this.runControllers();
      const after = this.bucket(kind).get(key);
      return this.output(kind, after ?? object);
    }
    const old = current;
    const object = clone(current);
    object.metadata.resourceVersion = this.nextRevision();
    this.bucket(kind).delete(key);
    this.record(kind, "DELETED", object, old);
    this.afterDelete(kind, object);
    if (kind.deleteReturnsObject) return this.output(kind, object);
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: {
        name,
        ...(kind.group ? { group: kind.group } : {}),
        kind: kind.resource,
        uid: object.metadata.uid,
      },
    };
  }

  private deleteNamespace(kind: KindInfo, current: Obj): Obj {
    if (current.metadata.deletionTimestamp) return this.output(kind, current);
    const old = current;
    const object = clone(current);
    object.metadata.deletionTimestamp = this.timestamp();
    object.status = { ...object.status, phase: "Terminating" };
    object.metadata.resourceVersion = this.nextRevision();
    this.store(kind, keyOf(undefined, object.metadata.name), object);
    this.record(kind, "MODIFIED", object, old);
    this.runControllers();
    const after = this.bucket(kind).get(keyOf(undefined, object.metadata.name));
    return this.output(kind, after ?? object);
  }

  private async deleteCollection(
    route: Route,
    query: Record<string, unknown>,
    body: Obj | undefined,
  ): Promise<Obj> {
    const listed = this.list(
      route,
      { labelSelector: query.labelSelector, fieldSelector: query.fieldSelector },
      undefined,
    );
    for (const item of listed.items as Obj[]) {
      try {
        await this.delete({ ...route, namespace: item.metadata.namespace, name: item.metadata.name }, body);
      } catch (error) {
        if (!(error instanceof StatusError && error.status.code === 404)) throw error;
      }
    }
    return { ...listed, items: [] };
  }

  private afterDelete(kind: KindInfo, object: Obj): void {
    if (kind.kind === "CustomResourceDefinition" && kind.group === "apiextensions.k8s.io") {
      this.discoveryCache = undefined;
      for (const [key, k] of this.kinds) if (k.crd === object.metadata.name) this.kinds.delete(key);
      for (const [key, list] of this.byResource) {
        const rest = list.filter((k) => k.crd !== object.metadata.name);
        if (rest.length) this.byResource.set(key, rest);
        else this.byResource.delete(key);
      }
      this.objects.delete(`${object.spec.group}/${object.spec.names.plural}`);
    }
    this.runControllers();
  }

  // ---------------------------------------------------------------- controllers (kube-controller-manager's part)

  private runningControllers = false;

  /**
   * Garbage collection and namespace deletion, run to completion after each change (synchronous,
   * so tests see a settled state; kube-controller-manager does the same work a moment later).
   */
  private runControllers(): void {
    if (!this.options.controllers || this.runningControllers) return;
    this.runningControllers = true;
    try {
      for (let progress = true; progress; ) progress = this.collectGarbage();
    } finally {
      this.runningControllers = false;
    }
  }

  /** One pass of the garbage collector; true if it changed anything. */
  private collectGarbage(): boolean {
    const uids = new Map<string, { kind: KindInfo; object: Obj }>();
    const all: { kind: KindInfo; object: Obj }[] = [];
    for (const kind of new Set(this.kinds.values())) {
      if (!this.byResource.get(`${kind.group}/${kind.resource}`)?.includes(kind)) continue;
      if (this.byResource.get(`${kind.group}/${kind.resource}`)?.[0] !== kind) continue;
      for (const object of this.bucket(kind).values()) {
        uids.set(object.metadata.uid, { kind, object });
        all.push({ kind, object });
      }
    }
    for (const { kind, object } of all) {
      const meta = object.metadata;
      const finalizers = (meta.finalizers as string[] | undefined) ?? [];
      const dependents = () =>
        all.filter((d) =>
          (d.object.metadata.ownerReferences as Obj[] | undefined)?.some((r) => r.uid === meta.uid),
        );
      if (meta.deletionTimestamp && kind.kind === "Namespace" && kind.group === "") {
        const contents = all.filter((o) => o.kind.namespaced && o.object.metadata.namespace === meta.name);
        if (contents.length) {
          // Objects held by finalizers keep the namespace Terminating until they are released.
          const live = contents.filter((o) => !o.object.metadata.deletionTimestamp);
          for (const o of live) this.deleteSync(o.kind, o.object, "Background");
          if (live.length) return true;
          continue;
        }
        this.dropObject(kind, object);
        return true;
      }
      if (meta.deletionTimestamp && finalizers.includes("orphan")) {
        for (const d of dependents())
          this.writeSync(d.kind, d.object, (o) => {
            o.metadata.ownerReferences = (o.metadata.ownerReferences as Obj[]).filter(
              (r) => r.uid !== meta.uid,
            );
            if (!o.metadata.ownerReferences.length) delete o.metadata.ownerReferences;
          });
        this.writeSync(kind, object, (o) => {
          o.metadata.finalizers = finalizers.filter((f) => f !== "orphan");
        });
        return true;
      }
      if (meta.deletionTimestamp && finalizers.includes("foregroundDeletion")) {
        const blocking = dependents();
        if (blocking.length) {
          let changed = false;
          for (const d of blocking)
            if (!d.object.metadata.deletionTimestamp) {
              this.deleteSync(d.kind, d.object, "Foreground");
              changed = true;
            }
          if (changed) return true;
          continue;
        }
        this.writeSync(kind, object, (o) => {
          o.metadata.finalizers = finalizers.filter((f) => f !== "foregroundDeletion");
        });
        return true;
      }
      const owners = (meta.ownerReferences as Obj[] | undefined) ?? [];
      if (owners.length && !meta.deletionTimestamp) {
        const alive = owners.filter((r) => {
          const owner = uids.get(r.uid);
          return (
            (owner && !(owner.object.metadata.finalizers ?? []).includes("orphan")) ||
            (owner && !owner.object.metadata.deletionTimestamp)
          );
        });
        const ownerGone = owners.every((r) => !uids.has(r.uid));
        const foregroundOwner = owners.some((r) =>
          (uids.get(r.uid)?.object.metadata.finalizers ?? []).includes("foregroundDeletion"),
        );
        if (ownerGone || foregroundOwner) {
          this.deleteSync(kind, object, foregroundOwner ? "Foreground" : "Background");
          return true;
        }
        void alive;
      }
    }
    return false;
  }

  private deleteSync(kind: KindInfo, object: Obj, policy: string): void {
    const finalizers = [...((object.metadata.finalizers as string[] | undefined) ?? [])];
    if (policy === "Foreground") {
      const hasDependents = [...this.objects.values()].some((b) =>
        [...b.values()].some((o) =>
          (o.metadata.ownerReferences as Obj[] | undefined)?.some((r) => r.uid === object.metadata.uid),
        ),
      );
      if (hasDependents && !finalizers.includes("foregroundDeletion")) finalizers.push("foregroundDeletion");
    }
    if (finalizers.length) {
      this.writeSync(kind, object, (o) => {
        o.metadata.finalizers = finalizers;
        o.metadata.deletionTimestamp = this.timestamp();
        o.metadata.deletionGracePeriodSeconds = 0;
        if (kind.generation) o.metadata.generation = (o.metadata.generation ?? 0) + 1;
      });
      return;
    }
    this.dropObject(kind, object);
  }

  private dropObject(kind: KindInfo, object: Obj): void {
    const old = object;
    const gone = clone(object);
    gone.metadata.resourceVersion = this.nextRevision();
    this.bucket(kind).delete(keyOf(object.metadata.namespace, object.metadata.name));
    this.record(kind, "DELETED", gone, old);
  }

  private writeSync(kind: KindInfo, object: Obj, change: (o: Obj) => void): void {
    const old = object;
    const next = clone(object);
    change(next);
    next.metadata.resourceVersion = this.nextRevision();
    const key = keyOf(object.metadata.namespace, object.metadata.name);
    if (
      next.metadata.deletionTimestamp &&
      !((next.metadata.finalizers as string[] | undefined) ?? []).length
    ) {
      this.bucket(kind).delete(key);
      this.record(kind, "DELETED", next, old);
      return;
    }
    this.store(kind, key, next);
    this.record(kind, "MODIFIED", next, old);
  }

  // ---------------------------------------------------------------- admission

  private async admit(
    kind: KindInfo,
    operation: "CREATE" | "UPDATE" | "DELETE",
    object: Obj | undefined,
    old: Obj | undefined,
  ): Promise<Obj> {
    let current = object;
    for (const webhook of this.admission) {
      if (webhook.kind.group !== kind.group || webhook.kind.resource !== kind.resource) continue;
      current = (await webhook.handle(operation, current, old)) ?? current;
    }
    return current as Obj;
  }
}

/** What {@link MemoryApiServer.addWebhooks} takes: `defineWebhooks(…)`'s result. */
export interface WebhookLike {
  readonly resource: { group: string; version: string; kind: string };
  readonly parts: {
    default?(object: never, request: never): unknown;
    validate?(object: never, request: never): unknown;
    validateOn?: ("CREATE" | "UPDATE" | "DELETE")[];
    namespaceSelector?: unknown;
    objectSelector?: unknown;
    convert?: unknown;
  };
}

/** Calls a webhook definition as the API server would call its server: defaulting, then validation. */
async function callWebhook(
  definition: WebhookLike,
  operation: "CREATE" | "UPDATE" | "DELETE",
  object: Obj | undefined,
  old: Obj | undefined,
): Promise<Obj | undefined> {
  const parts = definition.parts as {
    default?: (object: Obj, request: Obj) => unknown;
    validate?: (object: Obj, request: Obj) => unknown;
    validateOn?: string[];
    namespaceSelector?: unknown;
    objectSelector?: unknown;
  };
  if (parts.namespaceSelector || parts.objectSelector)
    throw new NotEmulated("webhook namespaceSelector/objectSelector");
  const request = {
    operation,
    oldObject: old && clone(old),
    object,
    kind: definition.resource,
    userInfo: { username: "memory" },
    dryRun: false,
  };
  let current = object;
  if (current && parts.default && operation !== "DELETE") {
    const copy = clone(current);
    const returned = await parts.default(copy, request);
    current = (returned && typeof returned === "object" ? returned : copy) as Obj;
  }
  const validateOn = parts.validateOn ?? ["CREATE", "UPDATE"];
  if (parts.validate && validateOn.includes(operation)) {
    const verdict = (await parts.validate((current ?? old) as Obj, { ...request, object: current })) as
      | { allowed?: boolean; message?: string }
      | undefined;
    if (verdict && verdict.allowed === false) {
      const name = (current ?? old)?.metadata?.name ?? "";
      const path = `/validate-${definition.resource.group.replaceAll(".", "-")}-${definition.resource.version}-${definition.resource.kind.toLowerCase()}`;
      void path;
      throw new StatusError({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `admission webhook denied the request: ${verdict.message ?? ""}`,
        reason: "Forbidden",
        details: { name, kind: definition.resource.kind },
        code: 403,
      } as StatusError["status"]);
    }
  }
  return current;
}

/** The RBAC verb of a request. */
function verbOf(method: HttpRequest["method"], named: boolean): string {
  switch (method) {
    case "GET":
      return named ? "get" : "list";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return named ? "delete" : "deletecollection";
  }
}

function specChanged(old: Obj, next: Obj, statusSubresource: boolean): boolean {
  const content = (o: Obj) => {
    const { metadata: _m, status, apiVersion: _a, kind: _k, ...rest } = o;
    return JSON.stringify(statusSubresource ? rest : { ...rest, status });
  };
  return content(old) !== content(next);
}

function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

function splitApiVersion(apiVersion: string): [string, string] {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? ["", apiVersion] : [apiVersion.slice(0, slash), apiVersion.slice(slash + 1)];
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start: `${start}\u0000` })).toString(
    "base64url",
  );
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, "base64url").toString()) as { rv: number; start: string };
    return {
      rv: parsed.rv,
      start: parsed.start.endsWith("\u0000") ? parsed.start.slice(0, -1) : parsed.start,
    };
  } catch {
    throw badRequest(`continue key is not valid: ${token}`);
  }
}

const SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
function randomSuffix(): string {
  let suffix = "";
  for (let i = 0; i < 5; i++) suffix += SUFFIX_ALPHABET[Math.floor(Math.random() * SUFFIX_ALPHABET.length)];
  return suffix;
}

function ok(body: unknown): HttpResponse {
  return { status: 200, headers: { "content-type": "application/json" }, body };
}

function created(body: unknown): HttpResponse {
  return { status: 201, headers: { "content-type": "application/json" }, body };
}

export type { KubeObject };

/**
 * Whether two JSON documents serialise to the same text (keys in the same order, `undefined`
 * properties left out, as `JSON.stringify` does), without serialising them.
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const leftKeys = Object.keys(left).filter((key) => left[key] !== undefined);
  const rightKeys = Object.keys(right).filter((key) => right[key] !== undefined);
  if (leftKeys.length !== rightKeys.length) return false;
  for (let i = 0; i < leftKeys.length; i++) {
    const key = leftKeys[i] as string;
    if (key !== rightKeys[i] || !sameJson(left[key], right[key])) return false;
  }
  return true;
}
