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
  /**
   * Workers kept for the groups other than a busy one: the controller runs `concurrency +
   * spareWorkers` workers and one group holds at most `concurrency` of them, so a quiet tenant's
   * change starts as soon as it is queued rather than when one of the busy tenant's reconciles
   * ends (bench/fairness.mjs measures the wait it saves). A whole number ≥ 0; default 0. Not with
   * adaptive workers, whose number moves.
   */
  spareWorkers?: number;
}

const byNamespace = (request: ObjectRef): string => request.namespace ?? "";

/** The spare workers a controller runs beside its `concurrency` (0 without fairness). */
export function spareWorkers(options: FairnessOptions | false | undefined): number {
  if (options === false || options?.spareWorkers === undefined) return 0;
  const spare = options.spareWorkers;
  if (!Number.isSafeInteger(spare) || spare < 0)
    throw new RangeError(`fairness spareWorkers must be a whole number ≥ 0, got ${spare}`);
  return spare;
}

/**
 * The queue's `fairness` option for a controller's choice (`false`: FIFO within a priority); with
 * spare workers, one group's limit is the controller's `concurrency`.
 */
export function queueFairness(
  options: FairnessOptions | false | undefined,
  concurrency?: number,
): Fairness<string> | undefined {
  if (options === false) return undefined;
  const by = options?.by ?? byNamespace;
  const weight = options?.weight;
  const limited = concurrency !== undefined && spareWorkers(options) > 0;
  return {
    key: (key) => by(refOfKey(key)),
    ...(weight ? { weight } : {}),
    ...(limited ? { maxInFlight: concurrency } : {}),
  };
}
