/**
 * `kubeloop/controller`: the reconcile loop. Build a controller with {@link controller}, return
 * {@link done}, {@link after} or throw (backoff) / {@link terminal} (no retry), and give it to a Manager.
 *
 * @example
 * ```ts
 * import { controller, done } from "kubeloop/controller";
 * import { ConfigMap } from "kubeloop/k8s";
 *
 * const echo = controller(ConfigMap).reconcile(async (cm, ctx) => {
 *   ctx.log.info({ keys: Object.keys(cm.data ?? {}) }, "seen");
 *   return done();
 * });
 * ```
 */

export type { ObjectRef } from "../client/index.js";
export type { AdaptiveConcurrency } from "./adaptive-workers.js";
export { ControllerBuilder, controller, type DeclaredChildren, type WatchOptions } from "./builder.js";
export type { CacheReader, Condition, EventSink, ReconcileContext, StatusOptions } from "./context.js";
export {
  Controller,
  type ControllerSpec,
  type MapFunc,
  type ReconcileOutcome,
  type ReconcileOutcomeResult,
  type Reconciler,
  type Source,
} from "./controller.js";
// Dependent resources and the finalizer helper (controller/dependents/).
export {
  APPLYSET_GROUP_KINDS_ANNOTATION,
  APPLYSET_ID_LABEL,
  APPLYSET_PART_OF_LABEL,
  APPLYSET_TOOLING,
  APPLYSET_TOOLING_ANNOTATION,
  type AppliedChildren,
  applySetId,
  type ChildOptions,
  type ChildReadinessContext,
  type CleanupOutcome,
  DEPENDENT_LABEL,
  Dependents,
  type DependentsOptions,
  type DependentsOutcome,
  type Desired,
  dependents,
  type FinalizerEvent,
  finalizer,
  type Readiness,
  type ReadinessContext,
  readiness,
  type Unwanted,
  type Waiting,
} from "./dependents/index.js";
export type { FairnessOptions } from "./fairness.js";
export type { ObjectRateCap } from "./object-cap.js";
export type {
  DaemonOptions,
  ObjectTask,
  ObjectTaskContext,
  ObjectTaskSpec,
  TimerOptions,
} from "./object-tasks.js";
export {
  type Attempt,
  nextAttempt,
  type OperationRecord,
  type RunOperationOptions,
  runOperation,
} from "./operation.js";
export {
  and,
  annotationsChanged,
  type Change,
  generationChanged,
  labelsChanged,
  not,
  or,
  type Predicate,
  resourceVersionChanged,
} from "./predicates.js";
export {
  type DeclaredTypes,
  LEADER_ELECTION_RULES,
  type PolicyRule,
  type RbacRoles,
  type RbacScope,
  rbacRoles,
  rbacRules,
} from "./rbac.js";
export {
  after,
  type Duration,
  done,
  parseDuration,
  type ReconcileResult,
  RetryableError,
  TerminalError,
  terminal,
} from "./result.js";
export {
  type CronSchedule,
  cronSchedule,
  InvalidSchedule,
  nextRun,
  type ScheduleState,
} from "./schedule.js";
