import { ignoreNotFound, type KubeObject, objectKey, type ResourceType, refTo } from "../../client/index.js";
import { type Condition, isDeleting, setCondition } from "../../resources/index.js";
import type { ReconcileContext } from "../context.js";
import { after, done } from "../result.js";
import { applySetId, asMember, checkTooling, groupKindOf, listedGroupKinds } from "./applyset.js";
import { describe, isServed, listMembers, type Member, release, writeParent } from "./members.js";
import type {
  AppliedChildren,
  ChildNode,
  Declaration,
  DependentsOutcome,
  Unwanted,
  Waiting,
} from "./types.js";

/**
 * One reconcile of a declaration, in three steps, each safe to stop after (a crash, a restart):
 * 1. the parent lists every kind it may have members of: the kinds it listed before and every
 *    declared kind that is served, written before any member of a new kind exists, so a member is
 *    never made that a later pass could not find (the list does not shrink with each pass's
 *    wants: a kind that comes and goes would cost two writes of the parent per reconcile);
 * 2. the children, wave by wave: applied with the set's label, then read for readiness; a child
 *    whose dependencies are not ready is not touched;
 * 3. the members no child wants any more are deleted (or orphaned); a blocked child's are kept,
 *    since what it would want is not known. Then the condition says where things stand.
 */

/** Where one declared child stands after this pass. */
type State =
  | { kind: "applied"; objects: KubeObject[]; ready: true | { object: string; detail: string } }
  | { kind: "unwanted" }
  | { kind: "inactive" }
  | { kind: "blocked" };

const satisfied = (state: State | undefined) =>
  state?.kind === "unwanted" || (state?.kind === "applied" && state.ready === true);

export async function reconcileDependents<P extends KubeObject>(
  declaration: Declaration<P>,
  primary: P,
  ctx: ReconcileContext<P>,
  inputs?: unknown,
): Promise<DependentsOutcome> {
  // Being deleted (garbage collection, or a finalizer's cleanup still to come): nothing is applied,
  // nothing written; `cleanup(…)` is the pass for a deletion.
  if (ctx.deleted || isDeleting(primary)) return deleting(declaration);
  checkTooling(primary);
  const served = new Map<ResourceType, boolean>();
  await Promise.all(
    declaration.nodes.map(async (node) =>
      served.set(node.type, node.options.activeWhenServed ? await isServed(ctx, node.type) : true),
    ),
  );
  const isOn = (type: ResourceType) => served.get(type) === true;
  const activeKinds = declaration.nodes.filter((n) => isOn(n.type)).map((n) => groupKindOf(n.type));
  const parent = await writeParent(declaration, primary, ctx, [...listedGroupKinds(primary), ...activeKinds]);

  const states = new Map<string, State>();
  const applied = appliedView(states);
  const setId = applySetId(primary, declaration.primary);
  for (const wave of declaration.waves) {
    await Promise.all(
      wave.map(async (node) =>
        states.set(
          node.name,
          await reconcileChild(node, { primary, inputs, ctx, states, applied, setId, isOn }),
        ),
      ),
    );
  }

  const members = await listMembers(declaration, parent, ctx, isOn);
  const pruned = await prune(declaration, members, states, primary, ctx);
  const waitingFor = firstWaiting(declaration, states);
  const condition = conditionOf(declaration, waitingFor);
  await report(declaration, parent, ctx, condition, waitingFor);
  const result = !waitingFor
    ? done()
    : after(waitingFor.reason === "NotServed" ? declaration.recheckServedMs : declaration.pollMs);
  return { ready: !waitingFor, waitingFor, applied, pruned, condition, result };
}

/** The outcome for a primary being deleted: not ready, nothing applied or pruned, nothing to wait for. */
function deleting<P extends KubeObject>(declaration: Declaration<P>): DependentsOutcome {
  const type = declaration.condition || "DependentsReady";
  return {
    ready: false,
    waitingFor: undefined,
    applied: appliedView(new Map()),
    pruned: [],
    condition: { type, status: false, reason: "Deleting", message: "the primary is being deleted" },
    result: done(),
  };
}

/** What one child's reconcile reads of the pass. */
interface Pass<P extends KubeObject> {
  primary: P;
  inputs: unknown;
  ctx: ReconcileContext<P>;
  states: Map<string, State>;
  applied: AppliedChildren;
  setId: string;
  isOn: (type: ResourceType) => boolean;
}

async function reconcileChild<P extends KubeObject>(node: ChildNode<P>, pass: Pass<P>): Promise<State> {
  const { primary, inputs, ctx } = pass;
  if (node.dependsOn.some((name) => !satisfied(pass.states.get(name)))) return { kind: "blocked" };
  if (node.options.when && !node.options.when(primary, inputs)) return { kind: "unwanted" };
  const desired = node.desired(primary, pass.applied, inputs);
  const list = (desired === undefined ? [] : Array.isArray(desired) ? desired : [desired]) as KubeObject[];
  // Not served matters only for a child that is wanted: one that is not waits for nothing.
  if (list.length > 0 && !pass.isOn(node.type)) return { kind: "inactive" };
  if (!node.bulk && list.length > 1)
    throw new TypeError(
      `dependent "${node.name}" is single but its function returned a list: declare it with children(…)`,
    );
  if (list.length === 0) return { kind: "unwanted" };
  checkDesired(node, list, primary);
  const objects = await Promise.all(
    list.map((object) =>
      node.options.createOnly
        ? createOnce(node, asMember(object, pass.setId, node.name), ctx)
        : ctx.apply(asMember(object, pass.setId, node.name)),
    ),
  );
  for (const object of node.options.ready ? objects : []) {
    const answer = await node.options.ready?.(object, {
      client: ctx.client,
      signal: ctx.signal,
      primary,
      inputs,
    });
    if (answer !== true) {
      const name = `${object.kind ?? node.type.kind} ${object.metadata?.name ?? ""}`;
      return { kind: "applied", objects, ready: { object: name, detail: answer || "not ready" } };
    }
  }
  return { kind: "applied", objects, ready: true };
}

/**
 * A `createOnly` child: the object as it is when it exists (from the cache when the controller
 * owns its kind, else the API server), applied only when it does not.
 */
async function createOnce<P extends KubeObject>(
  node: ChildNode<P>,
  object: KubeObject,
  ctx: ReconcileContext<P>,
): Promise<KubeObject> {
  const ref = refTo(node.type, object.metadata?.name ?? "", object.metadata?.namespace);
  let existing: KubeObject | undefined;
  try {
    existing = ctx.cache.get(ref);
  } catch {
    // Not cached by this controller: ask the server.
    existing = await ctx.client.get(ref, { signal: ctx.signal }).catch(ignoreNotFound);
  }
  return existing ?? ctx.apply(object);
}

/** Each desired object is of the declared kind, named, in the primary's namespace, and named once. */
function checkDesired<P extends KubeObject>(node: ChildNode<P>, list: KubeObject[], primary: P): void {
  const seen = new Set<string>();
  for (const object of list) {
    const name = object.metadata?.name;
    if (!name) throw new TypeError(`dependent "${node.name}": every object needs metadata.name`);
    if (object.kind !== node.type.kind || object.apiVersion !== node.type.apiVersion)
      throw new TypeError(
        `dependent "${node.name}" is declared as ${node.type.apiVersion} ${node.type.kind} but returned ${object.apiVersion} ${object.kind} ${name}`,
      );
    const namespace = object.metadata?.namespace;
    if (node.type.namespaced !== false && namespace !== primary.metadata?.namespace)
      throw new TypeError(
        `dependent "${node.name}": ${object.kind} ${name} must be in the primary's namespace "${primary.metadata?.namespace ?? ""}" (owner references do not cross namespaces)`,
      );
    if (seen.has(name)) throw new TypeError(`dependent "${node.name}" returned ${object.kind} ${name} twice`);
    seen.add(name);
  }
}

/** The members no child wants any more: deleted or orphaned, as their child says. */
async function prune<P extends KubeObject>(
  declaration: Declaration<P>,
  members: Member[],
  states: Map<string, State>,
  primary: P,
  ctx: ReconcileContext<P>,
): Promise<string[]> {
  const wanted = new Set<string>();
  for (const [name, state] of states)
    if (state.kind === "applied")
      for (const o of state.objects) wanted.add(`${name}|${o.kind}|${objectKey(o)}`);
  const unwanted = members.filter((member) => {
    const state = member.dependent === undefined ? undefined : states.get(member.dependent);
    if (state?.kind === "blocked" || state?.kind === "inactive") return false;
    return !wanted.has(`${member.dependent}|${member.type.kind}|${objectKey(member.object)}`);
  });
  await Promise.all(
    unwanted.map(async (member) => {
      const node = declaration.nodes.find((n) => n.name === member.dependent);
      const policy = node?.options.unwanted ?? "delete";
      const how: Unwanted = typeof policy === "function" ? policy(member.object, primary) : policy;
      await release(member, how, primary, ctx);
      ctx.log.info({ dependent: member.dependent, object: describe(member), how }, "no longer wanted");
    }),
  );
  return unwanted.map(describe);
}

function appliedView(states: Map<string, State>): AppliedChildren {
  const objects = (name: string) => {
    const state = states.get(name);
    return state?.kind === "applied" ? state.objects : [];
  };
  return {
    one: <U extends KubeObject>(name: string) => objects(name)[0] as U | undefined,
    all: <U extends KubeObject>(name: string) => objects(name) as U[],
  };
}

/** The first child in declaration order that is not ready or not served (blocked ones follow from it). */
function firstWaiting<P extends KubeObject>(
  declaration: Declaration<P>,
  states: Map<string, State>,
): Waiting | undefined {
  for (const node of declaration.nodes) {
    const state = states.get(node.name);
    if (state?.kind === "inactive") {
      const detail = `the API server does not serve ${node.type.kind} (${node.type.apiVersion}); is its CRD installed?`;
      return {
        child: node.name,
        reason: "NotServed",
        message: `dependent "${node.name}": ${detail}`,
        detail,
      };
    }
    if (state?.kind === "applied" && state.ready !== true)
      return {
        child: node.name,
        reason: "NotReady",
        message: `waiting for dependent "${node.name}": ${state.ready.object}: ${state.ready.detail}`,
        detail: state.ready.detail,
      };
  }
  return undefined;
}

function conditionOf<P extends KubeObject>(declaration: Declaration<P>, waiting: Waiting | undefined) {
  const type = declaration.condition || "DependentsReady";
  return waiting
    ? { type, status: false, reason: waiting.reason, message: waiting.message }
    : { type, status: true, reason: "Ready", message: "every dependent is ready" };
}

/** Writes the condition and an event when it changed (not on every pass: events are for news). */
async function report<P extends KubeObject>(
  declaration: Declaration<P>,
  primary: P,
  ctx: ReconcileContext<P>,
  condition: ReturnType<typeof conditionOf>,
  waiting: Waiting | undefined,
): Promise<void> {
  if (declaration.condition === false) return;
  const conditions = (primary as { status?: { conditions?: Condition[] } }).status?.conditions ?? [];
  const current = conditions.find((c) => c.type === condition.type);
  const status = condition.status ? "True" : "False";
  if (
    current?.status === status &&
    current.reason === condition.reason &&
    current.message === condition.message
  )
    return;
  const generation = primary.metadata?.generation;
  await ctx.status({
    conditions: setCondition(conditions, {
      ...condition,
      ...(generation ? { observedGeneration: generation } : {}),
    }),
  });
  if (waiting)
    ctx.event(
      "Normal",
      waiting.reason === "NotServed" ? "DependentNotServed" : "WaitingForDependent",
      waiting.message,
    );
  else ctx.event("Normal", "DependentsReady", condition.message);
}
