import { Conflict, type KubeObject, NotFound, type ResourceType, UnknownKind } from "../../client/index.js";
import type { ReconcileContext } from "../context.js";
import {
  APPLYSET_PART_OF_LABEL,
  applySetId,
  DEPENDENT_LABEL,
  groupKindOf,
  listedGroupKinds,
  parentMetadata,
} from "./applyset.js";
import type { Declaration, Unwanted } from "./types.js";

/**
 * The set's members (from the controller's cache where it has one, else from the API server),
 * and the two ways one leaves the set.
 */

/** A member of the set, with the type it was listed as. */
export interface Member {
  type: ResourceType;
  object: KubeObject;
  /** The declared child it was made for (its `kubeloop.dev/dependent` label). */
  dependent: string | undefined;
}

/** `Kind/name` of a member, for logs, events and outcomes. */
export const describe = (member: Member) => `${member.type.kind}/${member.object.metadata?.name ?? ""}`;

/**
 * Lists the members of every kind the declaration names (that is served): from the cache or one
 * labelled list per kind, in the primary's namespace (cluster-wide for cluster-scoped kinds). Only
 * objects carrying the set's id, and controlled by this primary when they have a controller, are
 * members: someone else's object of the same kind and labels never is.
 */
export async function listMembers<P extends KubeObject>(
  declaration: Declaration<P>,
  primary: P,
  ctx: ReconcileContext<P>,
  served: (type: ResourceType) => boolean,
): Promise<Member[]> {
  const id = applySetId(primary, declaration.primary);
  const types = new Map<string, ResourceType>();
  for (const node of declaration.nodes) if (served(node.type)) types.set(groupKindOf(node.type), node.type);
  for (const listed of listedGroupKinds(primary))
    if (!types.has(listed))
      ctx.log.warn(
        { groupKind: listed },
        "the ApplySet lists a kind no dependent declares: its members are kept",
      );
  const lists = await Promise.all(
    [...types.values()].map(async (type) =>
      (await membersOfType(type, id, ctx)).map((object) => ({
        type,
        object,
        dependent: object.metadata?.labels?.[DEPENDENT_LABEL],
      })),
    ),
  );
  const uid = primary.metadata?.uid;
  return lists.flat().filter(({ object }) => {
    const controller = object.metadata?.ownerReferences?.find((ref) => ref.controller);
    if (!controller || controller.uid === uid) return true;
    ctx.log.warn(
      { kind: object.kind, name: object.metadata?.name, controller: controller.name },
      "carries this primary's ApplySet label but another controller owns it: left alone",
    );
    return false;
  });
}

/**
 * The objects of one kind carrying the set's id: from the controller's cache when it has one for
 * the kind (`.owns(…)`: no request per reconcile, and read-your-writes makes sure it shows this
 * controller's own writes), else one labelled list from the API server. A cache that lags can only
 * make a prune late, never wrong: what is deleted is decided from what is wanted now, by uid.
 */
async function membersOfType<P extends KubeObject>(
  type: ResourceType,
  id: string,
  ctx: ReconcileContext<P>,
): Promise<KubeObject[]> {
  const namespace = type.namespaced === false ? undefined : (ctx.namespace ?? "");
  const where = namespace ? { namespace } : {};
  try {
    return ctx.cache.list(type, { ...where, labels: { [APPLYSET_PART_OF_LABEL]: id } });
  } catch {
    // Not cached by this controller (no .owns of the kind, or another namespace): ask the server.
  }
  const list = await ctx.client.list(type, {
    ...where,
    labelSelector: `${APPLYSET_PART_OF_LABEL}=${id}`,
    signal: ctx.signal,
  });
  return list.items;
}

/** Whether the API server serves the type (discovery, refreshed on a miss). */
export async function isServed<P extends KubeObject>(
  ctx: ReconcileContext<P>,
  type: ResourceType,
): Promise<boolean> {
  try {
    await ctx.client.resolve(type);
    return true;
  } catch (error) {
    if (error instanceof UnknownKind) return false;
    throw error;
  }
}

/**
 * Takes a member out of the set: deletes it (only the very object listed: its uid is a
 * precondition), or orphans it (drops the set's labels and this primary's owner reference, guarded
 * by its resourceVersion). Gone already, or changed meanwhile, is fine: the next pass looks again.
 * Returns the object while it stays, being deleted (finalizers), else undefined.
 */
export async function release<P extends KubeObject>(
  member: Member,
  how: Unwanted,
  primary: P,
  ctx: ReconcileContext<P>,
): Promise<KubeObject | undefined> {
  const { type, object } = member;
  const name = object.metadata?.name ?? "";
  const namespace = object.metadata?.namespace ? { namespace: object.metadata.namespace } : {};
  try {
    if (how === "delete") {
      const left = await ctx.client.delete(type, name, {
        ...namespace,
        propagationPolicy: "Background",
        preconditions: { uid: object.metadata?.uid ?? "" },
      });
      return left.kind !== "Status" && left.metadata?.finalizers?.length ? left : undefined;
    }
    const owners = (object.metadata?.ownerReferences ?? []).filter(
      (ref) => ref.uid !== primary.metadata?.uid,
    );
    await ctx.client.patch(
      type,
      name,
      {
        metadata: {
          resourceVersion: object.metadata?.resourceVersion,
          labels: { [APPLYSET_PART_OF_LABEL]: null, [DEPENDENT_LABEL]: null },
          ownerReferences: owners.length ? owners : null,
        },
      },
      { ...namespace, type: "merge", signal: ctx.signal },
    );
    return undefined;
  } catch (error) {
    if (error instanceof NotFound || error instanceof Conflict) return undefined;
    throw error;
  }
}

/**
 * Writes the parent's ApplySet label and annotations for these group-kinds (no request when it
 * has them): as a field manager of its own, so the controller's own apply of the primary (if any)
 * and this never take each other's fields.
 */
export async function writeParent<P extends KubeObject>(
  declaration: Declaration<P>,
  primary: P,
  ctx: ReconcileContext<P>,
  groupKinds: Iterable<string>,
): Promise<P> {
  const body = parentMetadata(primary, declaration.primary, groupKinds);
  if (!body) return primary;
  return (await ctx.apply(body as P, { owned: false, fieldManager: "kubeloop-applyset" })) as P;
}
