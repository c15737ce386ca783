import type { KubeObject, ResourceType } from "../../client/index.js";
import type { ReconcileContext } from "../context.js";
import { parseDuration } from "../result.js";
import { cleanupDependents } from "./cleanup.js";
import { creationWaves, deletionWaves } from "./graph.js";
import { reconcileDependents } from "./run.js";
import type {
  AppliedChildren,
  ChildNode,
  ChildOptions,
  CleanupOutcome,
  Declaration,
  DependentsOptions,
  DependentsOutcome,
  Desired,
} from "./types.js";

/**
 * A primary's children, declared: each a function of the primary, in dependency order, with
 * readiness, preconditions and activation; the framework applies them, stops at the first that is
 * not ready, and deletes the ones it made that are no longer wanted, found by ApplySet membership.
 * See docs/dependents.md for the model next to JOSDK's workflows and a plain reconcile.
 */

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * A primary's children, declared once beside the controller and reconciled from its reconcile.
 *
 * @example
 * ```ts
 * import { controller, dependents, readiness } from "kubeloop";
 * import { ConfigMap, Deployment } from "kubeloop/k8s";
 *
 * const children = dependents(Site)
 *   .child("config", ConfigMap, (site) => configFor(site))
 *   .child("web", Deployment, (site: SiteObject) => (site.spec.serve ? webFor(site) : undefined), {
 *     dependsOn: ["config"],
 *     ready: readiness.deployment,
 *   });
 *
 * controller(Site)
 *   .dependents(children) // owns ConfigMap and Deployment
 *   .reconcile(async (site, ctx) => (await children.reconcile(site, ctx)).result);
 * ```
 */
export class Dependents<P extends KubeObject, I = undefined> {
  private readonly nodes: ChildNode<P>[] = [];
  private compiled: Declaration<P> | undefined;

  /** @internal Use {@link dependents}. */
  constructor(
    private readonly primary: ResourceType<P>,
    private readonly options: DependentsOptions = {},
  ) {
    if (
      options.condition !== undefined &&
      options.condition !== false &&
      !/^[A-Z][A-Za-z0-9]*$/.test(options.condition)
    )
      throw new TypeError(
        `dependents: condition "${options.condition}" must be a CamelCase condition type, or false`,
      );
    parseDuration(options.poll ?? 0);
    parseDuration(options.recheckServed ?? 0);
  }

  /** One child of kind `type`: `desired` returns it, or undefined when the primary does not want it now. */
  child<U extends KubeObject>(
    name: string,
    type: ResourceType<U>,
    desired: (primary: P, applied: AppliedChildren, inputs: I) => Desired<NoInfer<U>> | undefined,
    options: ChildOptions<P, NoInfer<U>, I> = {},
  ): this {
    return this.add(name, type, false, desired, options);
  }

  /** A list of children of kind `type` (bulk): those it no longer returns are deleted (a scale-down). */
  children<U extends KubeObject>(
    name: string,
    type: ResourceType<U>,
    desired: (primary: P, applied: AppliedChildren, inputs: I) => readonly Desired<NoInfer<U>>[],
    options: ChildOptions<P, NoInfer<U>, I> = {},
  ): this {
    return this.add(name, type, true, desired, options);
  }

  /**
   * Applies the wanted children in dependency order (independent ones together), stops where one
   * is not ready, deletes those made before and no longer wanted, and writes the condition.
   * Call it from the reconcile of a live primary; on deletion, call {@link Dependents.cleanup}. For
   * a primary being deleted it does nothing (`ready` false, `waitingFor` undefined, `done()`).
   * `inputs` (declared with `dependents<P, I>(…)`) are what this pass's desired functions,
   * preconditions and readiness checks read besides the primary: values the reconcile computed
   * before (a password read from a Secret, the instance it elected), so they stay plain functions.
   */
  reconcile(
    primary: P,
    ctx: ReconcileContext<P>,
    ...inputs: undefined extends I ? [inputs?: I] : [inputs: I]
  ): Promise<DependentsOutcome> {
    return reconcileDependents(this.declaration(), primary, ctx, inputs[0]);
  }

  /**
   * Deletes the children in reverse order (or `deleteAfter`'s), each wave once the one before is
   * gone. For a finalizer's cleanup: `done` once all are gone.
   */
  cleanup(primary: P, ctx: ReconcileContext<P>): Promise<CleanupOutcome> {
    return cleanupDependents(this.declaration(), primary, ctx);
  }

  /** The types of the children: give the declaration to the builder's `.dependents(…)`, which owns them. */
  get types(): ResourceType[] {
    return [...new Set(this.nodes.map((node) => node.type))];
  }

  /** The kinds some child needs always served: `.dependents(…)` owns them (watched, cached). */
  get ownedTypes(): ResourceType[] {
    return this.types.filter((type) =>
      this.nodes.some((node) => node.type === type && !node.options.activeWhenServed),
    );
  }

  /** The kinds only `activeWhenServed` children make: `.dependents(…)` grants RBAC, without a watch. */
  get optionalTypes(): ResourceType[] {
    const owned = this.ownedTypes;
    return this.types.filter((type) => !owned.includes(type));
  }

  private add<U extends KubeObject>(
    name: string,
    type: ResourceType<U>,
    bulk: boolean,
    desired: (
      primary: P,
      applied: AppliedChildren,
      inputs: I,
    ) => Desired<U> | readonly Desired<U>[] | undefined,
    options: ChildOptions<P, U, I>,
  ): this {
    if (this.compiled)
      throw new Error(
        `dependents: "${name}" is declared after the first reconcile; declare every child up front`,
      );
    if (!NAME.test(name) || name.length > 63)
      throw new TypeError(
        `dependent name "${name}" must be lowercase letters, digits, "-" and "." (it becomes a label value)`,
      );
    if (this.nodes.some((node) => node.name === name))
      throw new TypeError(`dependent "${name}" is declared twice`);
    for (const dependency of options.dependsOn ?? []) {
      if (!this.nodes.some((node) => node.name === dependency))
        throw new TypeError(
          `dependent "${name}" depends on "${dependency}": declare "${dependency}" first (children are declared in an order their dependencies respect)`,
        );
    }
    this.nodes.push({
      name,
      type,
      bulk,
      desired: desired as ChildNode<P>["desired"],
      dependsOn: options.dependsOn ?? [],
      options: options as ChildOptions<P, KubeObject, unknown>,
    });
    return this;
  }

  private declaration(): Declaration<P> {
    if (this.compiled) return this.compiled;
    const names = new Set(this.nodes.map((node) => node.name));
    for (const node of this.nodes)
      for (const other of node.options.deleteAfter ?? [])
        if (!names.has(other))
          throw new TypeError(
            `dependent "${node.name}": deleteAfter names "${other}", which is not declared`,
          );
    this.compiled = {
      primary: this.primary,
      nodes: this.nodes,
      waves: creationWaves(this.nodes),
      deletion: deletionWaves(this.nodes, (node) => node.options.deleteAfter),
      condition: this.options.condition ?? "DependentsReady",
      pollMs: parseDuration(this.options.poll ?? "10s"),
      recheckServedMs: parseDuration(this.options.recheckServed ?? "1m"),
    };
    return this.compiled;
  }
}

/**
 * Starts a declaration of `primary`'s children. With `I` (`dependents<DbObject, Inputs>(Db)`), each
 * pass is given inputs of that type (`children.reconcile(db, ctx, inputs)`), which the desired
 * functions, `when` and readiness checks receive.
 */
export function dependents<P extends KubeObject, I = undefined>(
  primary: ResourceType<P>,
  options: DependentsOptions = {},
): Dependents<P, I> {
  return new Dependents<P, I>(primary, options);
}
