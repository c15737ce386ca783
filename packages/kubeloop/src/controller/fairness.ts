import { type ObjectRef, refOfKey } from "../client/index.js";
import type { Fairness } from "../queue/index.js";

/**
 * Fair turns among tenants within each priority of a controller's queue (the queue's rule is in
 * queue/fair-line.ts): one namespace that changes 5,000 objects takes one turn in each round, and
 * the other namespaces' changes do not wait behind all 5,000.
 *
 * On by default, by namespace: a level-triggered controller's keys are namespaced objects, and the
 * namespace is the tenant boundary in most clusters. Within a namespace keys stay FIFO, so a
 * single-tenant operator sees no change. Under the multi-cluster manager each cluster's controllers
 * have a queue and workers of their own, so clusters are already apart and namespaces take turns
 * within each; a controller that serves several clusters from one queue gives `by` a function that
 * returns `cluster/namespace`.
 */
export interface FairnessOptions {
  /**
   * The group a reconcile request belongs to: the key that takes turns. Default: its namespace
   * (`""` for cluster-scoped objects, which then share one group).
   */
  by?: (request: ObjectRef) => string;
  /**
   * Reconciles in a row a group gets on its turn: a whole number ≥ 1 (default 1). E.g. a paying
   * tenant's namespace 4, the rest 1.
   */
  weight?: (group: string) => number;
}

const byNamespace = (request: ObjectRef): string => request.namespace ?? "";

/** The queue's `fairness` option for a controller's choice (`false`: FIFO within a priority). */
export function queueFairness(options: FairnessOptions | false | undefined): Fairness<string> | undefined {
  if (options === false) return undefined;
  const by = options?.by ?? byNamespace;
  const weight = options?.weight;
  return {
    key: (key) => by(refOfKey(key)),
    ...(weight ? { weight } : {}),
  };
}
