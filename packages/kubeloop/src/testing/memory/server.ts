import type {
  ClusterConfig,
  HttpRequest,
  HttpResponse,
  KubeObject,
  StreamRequest,
} from "../../client/index.js";
import { Client } from "../../client/index.js";
import { clone } from "./clone.js";
import { Deletion } from "./deletion.js";
import { methodNotAllowed, NotEmulated, notFound, StatusError } from "./errors.js";
import { GarbageCollector } from "./garbage-collector.js";
import type { MemoryHandler, MemoryStream } from "./handler.js";
import { type ServedMemoryApiServer, serveOverHttps } from "./https.js";
import { apiVersionOf, builtinKinds, type CrdLike, isListedBuiltinKind, notEmulatedKind } from "./kinds.js";
import { created, keyOf, type Obj, ok } from "./objects.js";
import { parseBody } from "./patch.js";
import type { UserInfo } from "./rbac.js";
import { list, openWatch, read } from "./reads.js";
import { authorizeRoute, discovery, route as route_, verbOf } from "./routing.js";
import { MemoryStore } from "./store.js";
import { MemoryTransport } from "./transport.js";
import { Writes } from "./writes.js";

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
  private readonly store: MemoryStore;
  private readonly writes: Writes;
  private readonly deletion: Deletion;

  constructor(options: MemoryApiServerOptions = {}) {
    this.store = new MemoryStore({
      history: options.history ?? DEFAULT_HISTORY,
      now: options.now ?? (() => new Date()),
    });
    const gc = new GarbageCollector(this.store, options.controllers ?? true);
    this.writes = new Writes(this.store, gc);
    this.deletion = new Deletion(this.store, gc);
    for (const kind of builtinKinds()) this.store.addKind(kind);
    for (const namespace of options.namespaces ?? ["default"])
      this.writes.createDirect({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
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
    this.writes.createDirect({
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      ...crd,
    });
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
    const kind = this.store.kindFor(String(object.apiVersion), String(object.kind));
    if (!kind && isListedBuiltinKind(String(object.apiVersion), String(object.kind)))
      throw new NotEmulated(notEmulatedKind(String(object.kind), String(object.apiVersion)));
    if (!kind) throw new Error(`seed: kind ${object.kind} in ${object.apiVersion} is not served here`);
    const copy = clone(object) as Obj;
    const key = keyOf(copy.metadata?.namespace, copy.metadata?.name ?? "");
    const current = this.store.bucket(kind).get(key);
    if (!current)
      return clone(
        this.writes.createSync(
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
      resourceVersion: this.store.nextRevision(),
    };
    this.store.bucket(kind).set(key, copy);
    this.store.record(kind, "MODIFIED", copy, current);
    return clone(this.store.output(kind, copy)) as T;
  }

  /** The current resourceVersion (a list's). */
  get resourceVersion(): string {
    return String(this.store.revision);
  }

  /** Forgets the history of changes: watches and continue tokens from before now get 410 Gone. */
  compact(): void {
    this.store.compact();
  }

  /**
   * Resolves once every open watch has been read to its end and its reader waits for more: the
   * informers fed by this server have seen every change so far. What `ReconcileHarness.settle` awaits.
   */
  async settled(): Promise<void> {
    for (let turn = 0; turn < 10_000; turn++) {
      if ([...this.store.watches].every((w) => w.drained)) {
        await new Promise((resolve) => setImmediate(resolve));
        if ([...this.store.watches].every((w) => w.drained)) return;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error("MemoryApiServer.settled: a watch's reader did not catch up (is something blocking it?)");
  }

  /** How many watches are open (for tests that wait for a client to start watching). */
  get watchCount(): number {
    return this.store.watches.size;
  }

  /** Sends a BOOKMARK with the current resourceVersion to every watch that allows them. */
  bookmark(): void {
    for (const watch of this.store.watches) watch.bookmark(this.store.revision);
  }

  /** Calls `defineWebhooks` definitions in process on writes of their kind (defaulting, then validation). */
  addWebhooks(...definitions: WebhookLike[]): void {
    for (const definition of definitions) {
      const kind = this.store.kindFor(
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
      this.store.admission.push({
        kind,
        handle: (op, object, old) => callWebhook(definition, op, object, old),
      });
    }
  }

  // ---------------------------------------------------------------- requests

  /** Answers one request; a failure throws a {@link StatusError} (the transport turns it into the client's typed error). */
  async handle(request: HttpRequest & { userAgent?: string; user?: UserInfo }): Promise<HttpResponse> {
    const [pathOnly] = request.path.split("?");
    const path = pathOnly ?? "";
    if (path === "/api" || path === "/apis") return discovery(this.store, path, request.accept);
    if (path === "/version") return ok({ major: "1", minor: "36", gitVersion: "v1.36.4-memory" });
    const route = route_(this.store, path);
    const query = request.query ?? {};
    if (request.user)
      authorizeRoute(this.store, request.user, route, verbOf(request.method, route.name !== undefined));
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
        if (name) return ok(read(this.store, route));
        return ok(list(this.store, route, query, request.accept));
      case "POST":
        if (name) throw methodNotAllowed(`the server does not allow this method on the requested resource`);
        return created(await this.writes.create(route, body ?? {}, manager));
      case "PUT":
        return ok(await this.writes.replace(route, body ?? {}, manager));
      case "PATCH":
        return ok(
          await this.writes.patch(
            route,
            body,
            request.contentType ?? "",
            manager,
            query.force === true || query.force === "true",
          ),
        );
      case "DELETE":
        if (!name) return ok(await this.deletion.deleteCollection(route, query, body));
        return ok(await this.deletion.delete(route, body));
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
    const route = route_(this.store, request.path);
    if (request.user) authorizeRoute(this.store, request.user, route, "watch");
    const watch = openWatch(this.store, route, query, request.accept);
    request.signal?.addEventListener("abort", () => watch.close(), { once: true });
    if (typeof query.timeoutSeconds === "number" || typeof query.timeoutSeconds === "string") {
      const timer = setTimeout(() => watch.close(), Number(query.timeoutSeconds) * 1000);
      timer.unref?.();
    }
    // Both ways to read it: bytes (HTTPS, a raw reader), or objects (the in-process client).
    return { status: 200, body: watch.body(), events: watch.events(), close: () => watch.close() };
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

export type { KubeObject };
