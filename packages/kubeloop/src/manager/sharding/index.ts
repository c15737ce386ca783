import { hostname } from "node:os";
import type { Logger } from "pino";
import type { InformerRegistry } from "../../cache/index.js";
import { type Client, keyOfRef } from "../../client/index.js";
import { LeaderElector, type LeaderElectorOptions, type StoppedLeading } from "../leader-election.js";
import { checkRing, checkShardId } from "./ring.js";
import { ShardMember } from "./shard.js";
import { type ShardedType, Sharder } from "./sharder.js";

export { drainLabel, ownerOf, RING_LABEL, shardKey, shardLabel } from "./ring.js";
export { ShardMember } from "./shard.js";
export { type ShardedType, Sharder, type SharderOptions, type SharderPass } from "./sharder.js";

/**
 * Sharding for a manager (`new Manager({ sharding: { ring: "nginx-operator" } })`): every replica
 * is active and reconciles its share of the objects. See `docs/scale-out.md`.
 *
 * - Membership: each replica holds its own shard Lease (named after its id, labelled with the
 *   ring), through the same {@link LeaderElector} as leader election: it reconciles only while
 *   the Lease is held, releases it on shutdown, and exits if it cannot renew it.
 * - Assignment: one replica, the holder of the `<ring>-sharder` Lease, runs the {@link Sharder},
 *   which writes each object's shard label; every replica's informers select their own label
 *   server-side, so each caches and watches about 1/N of the objects.
 * - Handover: drain, then assign (see `Sharder`): two replicas never reconcile an object at once.
 */
export interface ShardingOptions {
  /** The ring's name: all replicas of one operator share it; part of label keys (≤ 63 characters). */
  ring: string;
  /** This replica's shard id: names its Lease, and labels its objects. Default `$POD_NAME`, else the hostname. */
  id?: string;
  /** Where the Leases live. Default: the manager's Lease namespace (`$POD_NAMESPACE`, …). */
  namespace?: string;
  /** Run for the sharder role too (one replica holds it). Default true; false when an external sharder writes the labels. */
  sharder?: boolean;
  /** The duration of this replica's shard Lease and of the sharder Lease. Default 15 s (client-go's). */
  leaseDurationMs?: number;
  /** How long a replica tries to renew a Lease before it gives it up. Default 10 s. */
  renewDeadlineMs?: number;
  /** The pause between two tries to acquire or renew. Default 2 s. */
  retryPeriodMs?: number;
}

export interface ShardingEnvironment {
  client: Client;
  registry: InformerRegistry;
  logger: Logger;
  namespace: string;
  /** The controllers' primary types and their children's, with the namespaces each controller watches. */
  types: ShardedType[];
  childTypes: ShardedType[];
  metrics?: (lease: string) => LeaderElectorOptions["metrics"];
}

/** One replica's sharding: its shard Lease, and its campaign for the sharder role. */
export class Sharding {
  readonly member: ShardMember;
  readonly id: string;
  private readonly options: ShardingOptions;
  private readonly env: ShardingEnvironment;
  private shardElector: LeaderElector | undefined;
  private sharderElector: LeaderElector | undefined;
  private sharderInstance: Sharder | undefined;
  private sharderRunning: Promise<void> | undefined;
  private campaign: Promise<void> | undefined;
  private stopping = false;

  constructor(options: ShardingOptions, env: ShardingEnvironment) {
    this.options = options;
    this.env = env;
    checkRing(options.ring);
    this.id = checkShardId(options.id ?? process.env.POD_NAME ?? hostname());
    this.member = new ShardMember(env.client, options.ring, this.id);
  }

  /** The sharder, while this replica holds the role. */
  get sharder(): Sharder | undefined {
    return this.sharderInstance;
  }

  get isShardHeld(): boolean {
    return this.shardElector?.isLeader ?? false;
  }

  private timings(): Pick<LeaderElectorOptions, "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs"> {
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = this.options;
    return {
      ...(leaseDurationMs ? { leaseDurationMs } : {}),
      ...(renewDeadlineMs ? { renewDeadlineMs } : {}),
      ...(retryPeriodMs ? { retryPeriodMs } : {}),
    };
  }

  /**
   * Takes the shard Lease (then `onStarted`: controllers may run) and campaigns for the sharder
   * role. `onLost` when the shard Lease could not be renewed: stop reconciling at once.
   */
  start(onStarted: () => void, onLost: (error: Error) => void): void {
    const { client, logger, namespace } = this.env;
    this.shardElector = new LeaderElector({
      client,
      id: this.id,
      namespace,
      identity: this.id,
      labels: this.member.leaseLabels,
      releaseOnCancel: true,
      ...this.timings(),
      ...(this.env.metrics ? { metrics: this.env.metrics(this.id) } : {}),
      onStartedLeading: () => {
        logger.info(
          { ring: this.options.ring, shard: this.id, lease: keyOfRef({ namespace, name: this.id }) },
          "shard Lease held",
        );
        onStarted();
      },
      onStoppedLeading: (event: StoppedLeading) => {
        if (event.lost) onLost(event.error);
      },
      onError: (error) => logger.warn({ err: error }, "shard Lease"),
    });
    logger.info({ ring: this.options.ring, shard: this.id }, "taking the shard Lease");
    void this.shardElector.run();
    if (this.options.sharder ?? true) this.campaign = this.campaignForSharder();
  }

  /** Runs for the sharder role until stopped; after a loss, runs again. */
  private async campaignForSharder(): Promise<void> {
    const { client, logger, namespace } = this.env;
    const name = `${this.options.ring}-sharder`;
    while (!this.stopping) {
      let lost = false;
      this.sharderElector = new LeaderElector({
        client,
        id: name,
        namespace,
        identity: this.id,
        releaseOnCancel: true,
        ...this.timings(),
        onStartedLeading: (signal) => {
          logger.info({ ring: this.options.ring, lease: keyOfRef({ namespace, name }) }, "sharder role held");
          const sharder = new Sharder({
            client,
            registry: this.env.registry,
            logger,
            ring: this.options.ring,
            namespace,
            identity: this.id,
            types: this.env.types,
            childTypes: this.env.childTypes,
          });
          this.sharderInstance = sharder;
          const stop = () => sharder.stop();
          this.sharderRunning = sharder.start().then(
            () =>
              signal.aborted
                ? stop()
                : new Promise<void>((resolve) =>
                    signal.addEventListener("abort", () => resolve(stop()), { once: true }),
                  ),
            (error: unknown) => {
              logger.error({ err: error }, "sharder failed");
              return stop();
            },
          );
        },
        onStoppedLeading: (event) => {
          lost = event.lost;
          if (event.lost) logger.error({ err: event.error }, "sharder role lost; running for it again");
        },
        onError: (error) => logger.warn({ err: error }, "sharder Lease"),
      });
      await this.sharderElector.run();
      await this.sharderRunning;
      this.sharderInstance = undefined;
      if (!lost) return;
    }
  }

  /** Stops the sharder (releasing its role), then releases the shard Lease: its objects move at once. */
  async stop(): Promise<void> {
    this.stopping = true;
    // The sharder's last pass ends before its role is handed on: never two sharders at once.
    await this.sharderInstance?.stop();
    await this.sharderElector?.stop();
    await this.campaign;
    await this.shardElector?.stop();
  }
}
