import type { KubeObject } from "../client/index.js";
import type { Request } from "./spec.js";

/** A request's queue key: `namespace/name`, or `name` for a cluster-scoped object. */
export function keyOf(request: Request): string {
  return request.namespace ? `${request.namespace}/${request.name}` : request.name;
}

/** A queue key's namespace (undefined when cluster-scoped) and name. */
export function splitKey(key: string): [string | undefined, string] {
  const slash = key.indexOf("/");
  return slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
}

export function requestOf(object: KubeObject): Request {
  return { namespace: object.metadata?.namespace, name: object.metadata?.name ?? "" };
}

export function toArray(value: Request[] | Request | undefined): Request[] {
  if (!value) return [];
  return Array.isArray(value) ? value : [value];
}
