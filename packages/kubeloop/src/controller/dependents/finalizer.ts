import type { KubeObject } from "../../client/index.js";
import {
  addFinalizer,
  type FinalizerOptions,
  hasFinalizer,
  isDeleting,
  removeFinalizer,
} from "../../resources/index.js";
import type { ReconcileContext } from "../context.js";
import { done, type ReconcileResult } from "../result.js";

/** What {@link finalizer} hands the reconcile: the live object to reconcile, or one to clean up. */
export type FinalizerEvent<T extends KubeObject> =
  | { readonly type: "apply"; readonly object: T }
  | { readonly type: "cleanup"; readonly object: T };

/**
 * The finalizer protocol around a reconcile, as kube-rs's `finalizer()`: one place decides whether
 * the object is live or going, and the reconcile's own result says whether cleanup is finished.
 * - live: the finalizer is added (if missing), then `reconcile({ type: "apply" })` runs and its
 *   result is returned;
 * - being deleted, with the finalizer: `reconcile({ type: "cleanup" })` runs; `done()` removes the
 *   finalizer (the object may then go), `after(…)` keeps it and looks again, a thrown error keeps
 *   it and retries with backoff. Cleanup may run more than once: make it idempotent;
 * - being deleted without it, or already gone (`ctx.deleted`): nothing left to do, `done()`.
 * So a reconcile written with it never checks `ctx.deleted` or `isDeleting` itself. `options`
 * name the field manager of the finalizer writes (and their conflict retries).
 *
 * @example
 * ```ts
 * import { after, controller, done, finalizer } from "kubeloop";
 *
 * controller(Bucket).reconcile((bucket, ctx) =>
 *   finalizer(bucket, ctx, "storage.example.com/bucket", async (event) => {
 *     if (event.type === "cleanup") return (await emptyAndDelete(bucket)) ? done() : after("10s");
 *     await ensureBucket(bucket);
 *     return done();
 *   }),
 * );
 * ```
 */
export async function finalizer<T extends KubeObject>(
  object: T,
  ctx: ReconcileContext<T>,
  name: string,
  reconcile: (event: FinalizerEvent<T>) => ReconcileResult | Promise<ReconcileResult>,
  options: FinalizerOptions = {},
): Promise<ReconcileResult> {
  if (ctx.deleted) return done();
  if (!isDeleting(object)) {
    const live = hasFinalizer(object, name) ? object : await addFinalizer(ctx.client, object, name, options);
    return reconcile({ type: "apply", object: live });
  }
  if (!hasFinalizer(object, name)) return done();
  const result = await reconcile({ type: "cleanup", object });
  if (result.kind !== "done") return result;
  await removeFinalizer(ctx.client, object, name, options);
  return done();
}
