import type { KubeObject, ResourceType } from "../../client/index.js";
import { isDeleting } from "../../resources/index.js";
import type { ReconcileContext } from "../context.js";
import { after, done } from "../result.js";
import { checkTooling } from "./applyset.js";
import { describe, isServed, listMembers, type Member, release } from "./members.js";
import type { ChildNode, CleanupOutcome, Declaration, Unwanted } from "./types.js";

/**
 * The children's side of a primary's deletion: wave by wave in deletion order (by default the
 * reverse of creation), each wave's members deleted (or orphaned, as their child's `unwanted`
 * says) and the next wave started only once they are gone. Members of children no longer declared
 * go first. Each pass re-lists the members, so a restart in the middle picks up where it stopped.
 */
export async function cleanupDependents<P extends KubeObject>(
  declaration: Declaration<P>,
  primary: P,
  ctx: ReconcileContext<P>,
): Promise<CleanupOutcome> {
  checkTooling(primary);
  const served = new Map<ResourceType, boolean>();
  await Promise.all(declaration.nodes.map(async (n) => served.set(n.type, await isServed(ctx, n.type))));
  const members = await listMembers(declaration, primary, ctx, (type) => served.get(type) === true);
  const declared = new Set(declaration.nodes.map((node) => node.name));
  const waves: { names: string[]; nodes: readonly ChildNode<P>[] }[] = [
    { names: [], nodes: [] }, // members of children no longer declared
    ...declaration.deletion.map((nodes) => ({ names: nodes.map((n) => n.name), nodes })),
  ];
  for (const [index, wave] of waves.entries()) {
    const inWave = members.filter((m) =>
      index === 0 ? !declared.has(m.dependent ?? "") : wave.names.includes(m.dependent ?? ""),
    );
    const left = (await Promise.all(inWave.map((member) => remove(member, wave.nodes, primary, ctx)))).filter(
      (member): member is Member => member !== undefined,
    );
    if (left.length > 0) {
      const names = left.map(describe).join(", ");
      ctx.log.info({ waitingFor: names }, "waiting for dependents to be deleted");
      return { done: false, waitingFor: names, result: after(declaration.pollMs) };
    }
  }
  return { done: true, waitingFor: undefined, result: done() };
}

/** Deletes or orphans one member; returns it while it is still there (being deleted). */
async function remove<P extends KubeObject>(
  member: Member,
  nodes: readonly ChildNode<P>[],
  primary: P,
  ctx: ReconcileContext<P>,
): Promise<Member | undefined> {
  if (isDeleting(member.object)) return member;
  const policy = nodes.find((n) => n.name === member.dependent)?.options.unwanted ?? "delete";
  const how: Unwanted = typeof policy === "function" ? policy(member.object, primary) : policy;
  const left = await release(member, how, primary, ctx);
  return left ? { ...member, object: left } : undefined;
}
