import type { HttpRequest, HttpResponse } from "../../client/index.js";
import { badRequest, NotEmulated, notFound, StatusError } from "./errors.js";
import { apiVersionOf, discoveryDocuments, listedBuiltin, notEmulatedKind } from "./kinds.js";
import { keyOf, ok, type Route } from "./objects.js";
import { authorize, type UserInfo } from "./rbac.js";
import type { MemoryStore } from "./store.js";

// Routing: a request's path to the kind it names, RBAC on it, and the discovery documents.

export function discovery(s: MemoryStore, path: string, accept: string | undefined): HttpResponse {
  if (!accept?.includes("apidiscovery.k8s.io"))
    throw new NotEmulated(
      "the legacy discovery documents (ask for aggregated discovery, apidiscovery.k8s.io/v2)",
    );
  s.discoveryCache ??= discoveryDocuments([...s.kinds.values()]);
  return ok(path === "/api" ? s.discoveryCache.core : s.discoveryCache.groups);
}

export function route(s: MemoryStore, path: string): Route {
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
    [, namespace, resource = "", name, subresource] = segments as [string, string, string, string?, string?];
  } else {
    [resource = "", name, subresource] = segments as [string, string?, string?];
  }
  const kind = (s.byResource.get(`${group}/${resource}`) ?? []).find((k) => k.version === version);
  if (!kind) {
    const listed = listedBuiltin(group, version, resource);
    if (listed) throw new NotEmulated(notEmulatedKind(listed, apiVersionOf({ group, version }), resource));
    if (group && !s.isKnownGroup(group))
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

export function authorizeRoute(s: MemoryStore, user: UserInfo, route: Route, verb: string): void {
  const rbac = "rbac.authorization.k8s.io";
  const all = (resource: string) => [...(s.objects.get(`${rbac}/${resource}`)?.values() ?? [])];
  authorize(
    {
      clusterRoleBindings: () => all("clusterrolebindings"),
      roleBindings: (namespace) => all("rolebindings").filter((b) => b.metadata.namespace === namespace),
      clusterRole: (name) => s.objects.get(`${rbac}/clusterroles`)?.get(name),
      role: (namespace, name) => s.objects.get(`${rbac}/roles`)?.get(keyOf(namespace, name)),
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

/** The RBAC verb of a request. */
export function verbOf(method: HttpRequest["method"], named: boolean): string {
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
