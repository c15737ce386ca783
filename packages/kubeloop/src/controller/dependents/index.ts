/**
 * Dependent resources: a primary's children declared with order, readiness, activation and
 * pruning by ApplySet membership (`dependents(…)`), and a finalizer whose cleanup returns the
 * reconcile's result (`finalizer(…)`). Re-exported by `kubeloop/controller` and `kubeloop`.
 */
export {
  APPLYSET_GROUP_KINDS_ANNOTATION,
  APPLYSET_ID_LABEL,
  APPLYSET_PART_OF_LABEL,
  APPLYSET_TOOLING,
  APPLYSET_TOOLING_ANNOTATION,
  applySetId,
  DEPENDENT_LABEL,
} from "./applyset.js";
export { Dependents, dependents } from "./dependents.js";
export { type FinalizerEvent, finalizer } from "./finalizer.js";
export { type Readiness, type ReadinessContext, readiness } from "./readiness.js";
export type {
  AppliedChildren,
  ChildOptions,
  ChildReadinessContext,
  CleanupOutcome,
  DependentsOptions,
  DependentsOutcome,
  Desired,
  Unwanted,
  Waiting,
} from "./types.js";
