import type { KubeObject, ResourceType } from "../../client/index.js";
import type { ConditionInput } from "../../resources/index.js";
import type { Duration, ReconcileResult } from "../result.js";
import type { Readiness, ReadinessContext } from "./readiness.js";

/** The shapes of a dependents declaration and of what its passes return. */

/** What happens to a child the framework made that is no longer wanted. */
export type Unwanted = "delete" | "orphan";

/**
 * What a desired function returns: an object of the child's kind, whose `apiVersion` and `kind`
 * may be plain strings (object literals built in helpers widen them); the framework checks them
 * against the declared type when it applies the child.
 */
export type Desired<U> = Omit<U, "apiVersion" | "kind"> & { apiVersion: string; kind: string };

/** The children applied so far in this pass, as the server answered (with their status). */
export interface AppliedChildren {
  /** The object the child `name` applied (a single child), or undefined if it applied none. */
  one<U extends KubeObject = KubeObject>(name: string): U | undefined;
  /** The objects the child `name` applied (bulk), in the order it declared them. */
  all<U extends KubeObject = KubeObject>(name: string): U[];
}

/**
 * What a child's own readiness check gets: the built-in checks' context, and the primary and the
 * pass's inputs (a check that needs more than the child itself, such as "its primary pod serves").
 */
export interface ChildReadinessContext<P extends KubeObject, I = undefined> extends ReadinessContext {
  readonly primary: P;
  readonly inputs: I;
}

/** How a declared child is reconciled. */
export interface ChildOptions<P extends KubeObject, U extends KubeObject, I = undefined> {
  /** Children that must be ready (or not wanted) before this one is applied. Declared earlier. */
  dependsOn?: readonly string[];
  /**
   * When it counts as ready (see `readiness`); without it, ready once applied. A `Readiness` of
   * the kind, or a function that also reads the primary and the pass's inputs.
   */
  ready?: (object: U, ctx: ChildReadinessContext<P, I>) => ReturnType<Readiness<U>>;
  /**
   * The reconcile precondition: while false, the child is not wanted (so it is deleted if it
   * exists, as when its desired function returns nothing). Children depending on it go ahead.
   */
  when?: (primary: P, inputs: I) => boolean;
  /**
   * Active only while the API server serves its kind (a CRD that may be installed later):
   * while it is not, the child and the children depending on it wait, the primary's condition says
   * so, and discovery is read again on the next reconcile (`recheckServed` from now at the latest).
   */
  activeWhenServed?: boolean;
  /**
   * What to do with what it made that is no longer wanted: `delete` (default), or `orphan`
   * (leave it, without the set's label and this primary's owner reference: a PVC to retain).
   */
  unwanted?: Unwanted | ((object: U, primary: P) => Unwanted);
  /**
   * Created when missing, never updated: once it exists, the pass reads it (for readiness) instead
   * of applying it. For objects whose spec cannot change once made, such as a Job's template (a
   * new spec would be refused on every pass); change its name to run a new one. JOSDK: a
   * dependent that is a `Creator` but not an `Updater`.
   */
  createOnly?: boolean;
  /**
   * On the primary's deletion (`cleanup`), delete this child only once these children are gone.
   * Default: the children that depend on it (creation order reversed).
   */
  deleteAfter?: readonly string[];
}

/** Options of a whole declaration. */
export interface DependentsOptions {
  /**
   * The condition type written on the primary: True when every child is ready, False naming the
   * first that is not. Default `DependentsReady`; false to write none (the outcome still has it).
   */
  condition?: string | false;
  /** While a child is not ready (and its own changes may not wake the primary), look again after. Default "10s". */
  poll?: Duration;
  /** While a child's kind is not served, read discovery again after. Default "1m" (a person installs a CRD). */
  recheckServed?: Duration;
}

/** Why a reconcile of the children stopped short. */
export interface Waiting {
  /** The declared name of the first child that is not ready. */
  child: string;
  /** `NotReady`, or `NotServed` (its kind is not served). */
  reason: "NotReady" | "NotServed";
  /** The condition's message: which child, which object, and `detail`. */
  message: string;
  /** What the child's readiness answered (or that its kind is not served), for a message of your own. */
  detail: string;
}

/** What a reconcile of the children did. */
export interface DependentsOutcome {
  /** Every active, wanted child is ready. */
  ready: boolean;
  /** The first child (in declaration order) that is not ready, and why. */
  waitingFor: Waiting | undefined;
  /** The children as applied in this pass. */
  applied: AppliedChildren;
  /** What was deleted or orphaned because no longer wanted, as `Kind/name`. */
  pruned: string[];
  /** The condition it wrote (or would have): fold it into your own status writes. */
  condition: Omit<ConditionInput, "observedGeneration">;
  /** `done()` when ready; else `after(poll)` or `after(recheckServed)`. */
  result: ReconcileResult;
}

/** What a cleanup pass did. */
export interface CleanupOutcome {
  /** Every child is gone (or orphaned): the finalizer may go. */
  done: boolean;
  /** The first child still being deleted. */
  waitingFor: string | undefined;
  /** `done()` when done, `after(poll)` while children are going. */
  result: ReconcileResult;
}

/** A declared child. @internal */
export interface ChildNode<P extends KubeObject = KubeObject> {
  readonly name: string;
  readonly type: ResourceType;
  readonly bulk: boolean;
  readonly desired: (
    primary: P,
    applied: AppliedChildren,
    inputs: unknown,
  ) => KubeObject | readonly KubeObject[] | undefined;
  readonly dependsOn: readonly string[];
  readonly options: ChildOptions<P, KubeObject, unknown>;
}

/** A declaration, as the reconcile and cleanup passes read it. @internal */
export interface Declaration<P extends KubeObject = KubeObject> {
  readonly primary: ResourceType<P>;
  readonly nodes: readonly ChildNode<P>[];
  readonly waves: readonly (readonly ChildNode<P>[])[];
  readonly deletion: readonly (readonly ChildNode<P>[])[];
  readonly condition: string | false;
  readonly pollMs: number;
  readonly recheckServedMs: number;
}
