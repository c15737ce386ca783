import type { Client, KubeObject, ResourceType } from "../../client/index.js";
import type { ControllerShard, ShardedController, ShardGate } from "../../controller/internal.js";
import { Handover } from "./handover.js";
import { drainLabel, RING_LABEL, shardLabel } from "./ring.js";

/**
 * One replica's side of sharding: its label selector (its informers cache and watch only its
 * objects), the ownership check before every reconcile, and the drain acknowledgement.
 *
 * Its membership is its shard Lease (named after the shard id, labelled with the ring), held by
 * the manager's {@link LeaderElector} like a leader Lease: controllers run only while it is held,
 * it is released on shutdown (the sharder moves the objects at once), and a crashed replica's
 * objects move once the sharder has seen the Lease expire.
 */
export class ShardMember implements ShardGate {
  readonly labelSelector: string;
  private readonly shardKey: string;
  private readonly drainKey: string;

  constructor(
    private readonly client: Client,
    readonly ring: string,
    readonly id: string,
    private readonly fieldManager = "kubeloop-shard",
  ) {
    this.shardKey = shardLabel(ring);
    this.drainKey = drainLabel(ring);
    this.labelSelector = `${this.shardKey}=${id}`;
  }

  /** The labels of this shard's Lease. */
  get leaseLabels(): Record<string, string> {
    return { [RING_LABEL]: this.ring };
  }

  /** The gate of one controller: its objects' ownership checks and handovers. */
  bind(controller: ShardedController): ControllerShard {
    return new Handover(this, controller);
  }

  /** `own`: reconcile it; `drain`: the sharder asks this replica to let it go; `foreign`: another's (it moved). */
  ownership(object: KubeObject): "own" | "drain" | "foreign" {
    const labels = object.metadata?.labels ?? {};
    if (labels[this.shardKey] !== this.id) return "foreign";
    return this.drainKey in labels ? "drain" : "own";
  }

  /**
   * Lets `object` go once its last reconcile here has ended. Acknowledges a drain: both labels removed, guarded by the resourceVersion this replica last
   * saw, so a change it has not seen (a new drain decision, an edit) makes it look again.
   */
  async release(type: ResourceType, object: KubeObject): Promise<void> {
    const metadata = object.metadata ?? {};
    await this.client.patch(
      type,
      metadata.name ?? "",
      {
        metadata: {
          resourceVersion: metadata.resourceVersion,
          labels: { [this.shardKey]: null, [this.drainKey]: null },
        },
      },
      { ...(metadata.namespace ? { namespace: metadata.namespace } : {}), fieldManager: this.fieldManager },
    );
  }
}
