import type { ResourceType } from "../client/index.js";
import { Forbidden } from "../client/index.js";

/**
 * An informer's list or watch was refused by RBAC. It is a `Forbidden` (so `instanceof Forbidden`
 * still holds) whose message names what the informer was doing, where, and the grant that fixes
 * it: in a multi-tenant cluster the usual cause is a namespace the operator watches without a Role
 * there, or a cluster-wide watch where only Roles were granted.
 *
 * @example
 * ```ts
 * const { lastError } = informer.health;
 * if (lastError instanceof WatchForbidden) log.error({ namespace: lastError.namespace }, lastError.message);
 * ```
 */
export class WatchForbidden extends Forbidden {
  override name = "WatchForbidden";
  /** The namespace the informer watches; `undefined` for a cluster-wide informer. */
  readonly namespace: string | undefined;
  /** The resource (plural) that could not be listed or watched, e.g. `configmaps`. */
  readonly resource: string;

  constructor(cause: Forbidden, type: ResourceType, namespace: string | undefined) {
    super(cause.code, cause.status, cause.request);
    this.cause = cause;
    this.namespace = namespace;
    const details = cause.status?.details;
    this.resource = details?.kind ?? type.plural ?? type.kind.toLowerCase();
    // The server names the group in the Status (omitted for the core group).
    const what = details?.kind
      ? `${details.kind}${details.group ? `.${details.group}` : ""}`
      : `${this.resource} (${type.apiVersion})`;
    const informer = `${type.kind} (${type.apiVersion})`;
    this.message = namespace
      ? `${informer} in namespace "${namespace}": ${cause.message}. Grant get, list and watch on ${what} ` +
        `in "${namespace}" (a Role and a RoleBinding there; \`kubeloop generate --namespaces\` writes them), ` +
        "or stop watching that namespace"
      : type.namespaced === false
        ? `${informer}, cluster-scoped: ${cause.message}. Grant get, list and watch on ${what} with a ` +
          "ClusterRole (a Role cannot grant a cluster-scoped type)"
        : `${informer} in all namespaces: ${cause.message}. Grant get, list and watch on ${what} ` +
          "with a ClusterRole, or watch only the namespaces you have Roles in (the Manager's `namespaces`, " +
          "or WATCH_NAMESPACE=a,b)";
  }
}
