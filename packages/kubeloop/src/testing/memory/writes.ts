import { randomUUID } from "node:crypto";
import { type ApplyInput, KEPT_METADATA, recordUpdate, SERVER_METADATA, serverSideApply } from "./apply.js";
import { validateName } from "./builtins.js";
import { clone } from "./clone.js";
import {
  alreadyExists,
  badRequest,
  conflict,
  type FieldError,
  forbidden,
  invalid,
  notFound,
  STALE_OBJECT,
  unsupportedMediaType,
} from "./errors.js";
import type { GarbageCollector } from "./garbage-collector.js";
import { apiVersionOf, type KindInfo } from "./kinds.js";
import { checkCrd, listTypes, normalise, serveCrd } from "./normalise.js";
import {
  keyOf,
  type Obj,
  type Route,
  randomSuffix,
  sameJson,
  specChanged,
  splitApiVersion,
} from "./objects.js";
import { builtinLists, jsonPatch, mergePatch, strategicMergePatch } from "./patch.js";
import type { MemoryStore } from "./store.js";

/**
 * Writes: create (also by apply, and without admission for set-up and seeding), replace, the
 * patches, server-side apply, and the update pipeline they share (subresource rules, admission,
 * managed fields, generation, finalizers).
 */
export class Writes {
  constructor(
    private readonly store: MemoryStore,
    private readonly gc: GarbageCollector,
  ) {}

  /** Creates an object without admission (server setup). */
  createDirect(object: Obj): void {
    const [group, version] = splitApiVersion(String(object.apiVersion));
    const kind = this.store.kindFor(String(object.apiVersion), String(object.kind));
    if (!kind) throw new Error(`unknown kind ${object.apiVersion} ${object.kind}`);
    void group;
    void version;
    this.createSync(
      { kind, namespace: object.metadata?.namespace, name: undefined, subresource: undefined },
      clone(object),
      "kubeloop",
    );
  }

  async create(route: Route, body: Obj, manager: string): Promise<Obj> {
    const object = clone(body);
    const admitted = await this.store.admit(
      route.kind,
      "CREATE",
      this.prepareCreate(route, object),
      undefined,
    );
    return this.createSync(route, admitted, manager, true);
  }

  prepareCreate(route: Route, object: Obj): Obj {
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

  createSync(
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
      const ns = this.store.bucket(this.store.kindFor("v1", "Namespace") as KindInfo).get(namespace);
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
    const bucket = this.store.bucket(kind);
    if (bucket.has(keyOf(namespace, name ?? ""))) throw alreadyExists(kind.group, kind.resource, name ?? "");
    object.apiVersion = apiVersionOf(kind);
    object.kind = kind.kind;
    const metadata = object.metadata;
    for (const field of SERVER_METADATA) delete metadata[field];
    if (!seeding) normalise(kind, object, undefined);
    metadata.uid = randomUUID();
    metadata.creationTimestamp = this.store.timestamp();
    if (kind.generation) metadata.generation = 1;
    if (kind.kind === "CustomResourceDefinition") checkCrd(object);
    recordUpdate(
      undefined,
      object,
      manager,
      undefined,
      apiVersionOf(kind),
      kind.status,
      listTypes(kind),
      this.store.timestamp(),
    );
    // Created by an apply: the applier owns its fields (as an Apply, not an Update).
    if (appliedFields) metadata.managedFields = appliedFields;
    metadata.resourceVersion = this.store.nextRevision();
    if (kind.kind === "CustomResourceDefinition") serveCrd(this.store, object);
    if (seeding) this.store.bucket(kind).set(keyOf(namespace, name ?? ""), object);
    else this.store.store(kind, keyOf(namespace, name ?? ""), object);
    this.store.record(kind, "ADDED", object, undefined);
    return this.store.output(kind, object);
  }

  async replace(route: Route, body: Obj, manager: string): Promise<Obj> {
    const { kind } = route;
    const name = route.name ?? "";
    const current = this.store.bucket(kind).get(keyOf(route.namespace, name));
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
  async update(route: Route, current: Obj, next: Obj, manager: string, recordManager = true): Promise<Obj> {
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
    if (old.metadata.deletionTimestamp) refuseNewFinalizers(kind, old, object);
    normalise(kind, object, old);
    object = (await this.store.admit(kind, "UPDATE", object, this.store.output(kind, old))) ?? object;
    if (recordManager)
      recordUpdate(
        old,
        object,
        manager,
        route.subresource === "status" ? "status" : undefined,
        apiVersionOf(kind),
        kind.status,
        listTypes(kind),
        this.store.timestamp(),
      );
    const strip = (o: Obj) => {
      const { metadata: m, status, ...rest } = o;
      const { managedFields: _f, resourceVersion: _r, ...meta } = m as Obj;
      return { ...rest, metadata: meta, status };
    };
    if (sameJson(strip(object), strip(old))) {
      return this.store.output(kind, old);
    }
    const annotationsCount =
      kind.kind === "Deployment" &&
      JSON.stringify(old.metadata.annotations ?? {}) !== JSON.stringify(metadata.annotations ?? {});
    if (kind.generation && (specChanged(old, object, kind.status) || annotationsCount))
      metadata.generation = (old.metadata.generation ?? 0) + 1;
    metadata.resourceVersion = this.store.nextRevision();
    const key = keyOf(route.namespace, String(old.metadata.name));
    if (metadata.deletionTimestamp && !((metadata.finalizers as string[] | undefined) ?? []).length) {
      this.store.bucket(kind).delete(key);
      this.store.record(kind, "DELETED", object, old);
      this.gc.deleted(kind, object);
      // The answer carries the last stored version, as kube-apiserver's does.
      return this.store.output(kind, {
        ...object,
        metadata: { ...metadata, resourceVersion: old.metadata.resourceVersion },
      });
    }
    if (kind.kind === "CustomResourceDefinition" && route.subresource !== "status") {
      checkCrd(object); // a changed schema's rules are checked as a new CRD's are
      serveCrd(this.store, object);
    }
    this.store.store(kind, key, object);
    this.store.record(kind, "MODIFIED", object, old);
    return this.store.output(kind, object);
  }

  async patch(
    route: Route,
    body: unknown,
    contentType: string,
    manager: string,
    force: boolean,
  ): Promise<Obj> {
    const { kind } = route;
    const name = route.name ?? "";
    const current = this.store.bucket(kind).get(keyOf(route.namespace, name));
    if (contentType.startsWith("application/apply-patch")) {
      const applied = (typeof body === "string" ? JSON.parse(body) : body) as Obj;
      return this.apply(route, current, applied, manager, force);
    }
    if (!current) throw notFound(kind.group, kind.resource, name);
    // A deep copy: the patch functions share the subtrees they leave alone, and the update writes into them.
    const base = clone(this.store.output(kind, current));
    let patched: Obj;
    if (contentType.startsWith("application/merge-patch+json")) patched = mergePatch(base, body) as Obj;
    else if (contentType.startsWith("application/json-patch+json")) patched = jsonPatch(base, body) as Obj;
    else if (contentType.startsWith("application/strategic-merge-patch+json")) {
      if (kind.crd)
        throw unsupportedMediaType(
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
        );
      patched = strategicMergePatch(base, body, builtinLists(kind)) as Obj;
    } else
      throw unsupportedMediaType(
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
      );
    const rv = (patched.metadata as Obj | undefined)?.resourceVersion;
    if (rv !== undefined && rv !== current.metadata.resourceVersion)
      throw conflict(kind.group, kind.resource, name, STALE_OBJECT);
    return this.update(route, current, patched, manager);
  }

  async apply(
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
      live: current ? this.store.output(kind, current) : undefined,
      applied,
      manager,
      force,
      apiVersion: apiVersionOf(kind),
      subresource: route.subresource === "status" ? "status" : undefined,
      statusSubresource: kind.status,
      listTypes: listTypes(kind),
      now: this.store.timestamp(),
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
      const admitted = await this.store.admit(kind, "CREATE", this.prepareCreate(route, object), undefined);
      return this.createSync(route, admitted, manager, true, false, managed);
    }
    const rv = applied.metadata?.resourceVersion;
    if (rv !== undefined && rv !== current.metadata.resourceVersion)
      throw conflict(kind.group, kind.resource, route.name ?? "", STALE_OBJECT);
    const merged: Obj = serverSideApply(input);
    merged.metadata.resourceVersion = current.metadata.resourceVersion;
    return this.update(route, current, merged, manager, false);
  }
}

/** An object being deleted takes no new finalizers (kube-apiserver's metadata validation). */
function refuseNewFinalizers(kind: KindInfo, old: Obj, next: Obj): void {
  const before = (old.metadata.finalizers as string[] | undefined) ?? [];
  const added = ((next.metadata.finalizers as string[] | undefined) ?? []).filter((f) => !before.includes(f));
  if (!added.length) return;
  // kube-apiserver reports this one twice (metadata is validated on two paths); so do we.
  const error: FieldError = {
    type: "FieldValueForbidden",
    field: "metadata.finalizers",
    message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(", ")}}`,
  };
  throw invalid(kind.group, kind.kind, String(old.metadata.name), [error, error], 1);
}
