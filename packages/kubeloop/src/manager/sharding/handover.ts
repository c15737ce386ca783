import {
  Conflict,
  type KubeObject,
  NotFound,
  type ObjectKey,
  objectKey,
  type ResourceType,
} from "../../client/index.js";
import type { Change } from "../../controller/index.js";
import type { ControllerShard, ShardedController } from "../../controller/internal.js";
import { sleep } from "../../util/index.js";

/** A replica's shard as the handover needs it (`ShardMember`). */
export interface ShardOwnership {
  ownership(object: KubeObject): "own" | "drain" | "foreign";
  release(type: ResourceType, object: KubeObject): Promise<void>;
}

/**
 * One controller's gate on a sharded replica: which of its primary objects may be reconciled here,
 * and the handover of those the sharder asks this replica to let go (drain-then-assign).
 *
 * A drain request (the drain label on one of our objects) stops the key from being reconciled
 * again; once its reconcile in flight, if any, has ended, the assignment is removed under an
 * optimistic lock, and only then can the sharder give the object to its new shard. An object that
 * is ours again after a handover is reconciled as new.
 */
export class Handover implements ControllerShard {
  /** Keys this replica is letting go (`waiting` for their reconcile) or has let go (`released`). */
  private readonly handingOver = new Map<ObjectKey, "waiting" | "released">();

  constructor(
    private readonly member: ShardOwnership,
    private readonly controller: ShardedController,
  ) {}

  admit(change: Change): boolean {
    const key = objectKey(change.object);
    if (change.type === "deleted") {
      this.handingOver.delete(key);
      return true;
    }
    const ownership = this.member.ownership(change.object);
    if (ownership === "drain") {
      this.start(key);
      return false;
    }
    if (ownership === "foreign") return false;
    const state = this.handingOver.get(key);
    if (state === "waiting") return false; // the handover sees the drain was called off, and requeues
    if (state === "released") this.handingOver.delete(key);
    return true;
  }

  mayReconcile(key: ObjectKey, cached: KubeObject | undefined): boolean {
    return !this.handingOver.has(key) && (!cached || this.member.ownership(cached) === "own");
  }

  deleted(object: KubeObject, tombstone: boolean, deleted: () => void): void {
    const key = objectKey(object);
    // An object that left this replica's label selector moved away: not a deletion.
    const moved = () => {
      this.handingOver.delete(key);
      this.controller.forget(key);
    };
    // An object that stops matching a watch's label selector comes as deleted with its content
    // from before the change: our own release shows as deleted with our labels still on it.
    const ownership = this.member.ownership(object);
    if (ownership === "foreign" || this.handingOver.get(key) === "released") {
      moved();
      return;
    }
    if (!tombstone && ownership === "own" && !this.handingOver.has(key)) {
      deleted();
      return;
    }
    // Draining (our release may be on its way), or gone from a relist (its last state here still
    // carries our label, and it may have moved while the watch was down): only the server can
    // tell (if it cannot answer, the object is taken as moved: finalizers, not delete events, are
    // how no deletion is missed).
    const { name = "", namespace } = object.metadata ?? {};
    void this.controller.client.get(this.controller.primary, name, namespace ? { namespace } : {}).then(
      (current) => (this.member.ownership(current) === "own" ? deleted() : moved()),
      (error: unknown) => (error instanceof NotFound ? deleted() : moved()),
    );
  }

  private start(key: ObjectKey): void {
    if (this.handingOver.has(key)) return;
    this.handingOver.set(key, "waiting");
    void this.run(key);
  }

  private async run(key: ObjectKey): Promise<void> {
    const { controller } = this;
    while (!controller.signal.aborted && this.handingOver.get(key) === "waiting") {
      await controller.idle(key);
      const object = controller.cached(key);
      const ownership = object ? this.member.ownership(object) : "foreign";
      if (!object || ownership !== "drain") {
        // Deleted, moved, or the sharder called the drain off: back to normal.
        this.handingOver.delete(key);
        if (ownership === "own") controller.requeue(key);
        return;
      }
      const { namespace, name } = object.metadata ?? {};
      try {
        await this.member.release(controller.primary, object);
        this.handingOver.set(key, "released");
        controller.forget(key);
        controller.logger.debug(
          { controller: controller.name, namespace, name },
          "handed over to another shard",
        );
        return;
      } catch (error) {
        // A Conflict: the object changed; wait for the cache to show it, then decide again.
        const conflict = error instanceof Conflict;
        if (!conflict)
          controller.logger.warn(
            { err: error, controller: controller.name, namespace, name },
            "could not hand over; retrying",
          );
        await sleep(conflict ? 100 : 1_000);
      }
    }
  }
}
