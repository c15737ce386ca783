/**
 * kubeloop: the Kubernetes operator framework for TypeScript. This entry point is the 90% path;
 * each layer also has its own subpath (`kubeloop/client`, `kubeloop/cache`, `kubeloop/queue`,
 * `kubeloop/controller`, `kubeloop/resources`, `kubeloop/manager`, `kubeloop/testing`, `kubeloop/k8s`).
 *
 * @example
 * ```ts
 * import { controller, done, Manager } from "kubeloop";
 * import { ConfigMap } from "kubeloop/k8s";
 *
 * const echo = controller(ConfigMap).named("echo").reconcile((cm, ctx) => {
 *   ctx.log.info("seen");
 *   return done();
 * });
 * await new Manager().add(echo).start();
 * ```
 */
import { createRequire } from "node:module";

export {
  AlreadyExists,
  ApiError,
  Client,
  Conflict,
  Forbidden,
  Gone,
  Invalid,
  ignoreNotFound,
  type KubeObject,
  NotFound,
  type ObjectKey,
  type ObjectList,
  type ObjectOf,
  type ObjectRef,
  objectKey,
  type ResourceType,
  refTo,
  resourceType,
  type TypedObjectRef,
} from "./client/index.js";
export {
  after,
  and,
  annotationsChanged,
  controller,
  dependents,
  done,
  finalizer,
  generationChanged,
  labelsChanged,
  not,
  or,
  type ReconcileContext,
  type ReconcileResult,
  type Reconciler,
  RetryableError,
  readiness,
  resourceVersionChanged,
  TerminalError,
  terminal,
} from "./controller/index.js";
export {
  Manager,
  type ManagerOptions,
  optionsFromCommandLine,
  type Runnable,
  type RunnableContext,
  type RunnableGroup,
} from "./manager/index.js";
export {
  type Condition,
  controllerReference,
  defineResource,
  findCondition,
  handleFinalizer,
  isTrue,
  setCondition,
  setControllerReference,
} from "./resources/index.js";

const packageJson = createRequire(import.meta.url)("../package.json") as { version: string };

/** The version of this kubeloop, from its package.json. */
export const VERSION: string = packageJson.version;
