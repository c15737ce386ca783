import type { Lease } from "kubernetes-types/coordination/v1.js";
import type { Logger } from "pino";
import type { Informer, InformerRegistry, InformerView } from "../../cache/index.js";
import {
  type Client,
  type KubeObject,
  kindKeyOf,
  objectKey,
  type ResourceType,
  refOf,
} from "../../client/index.js";
import { typedKeyOf } from "../../client/internal.js";
import { Lease as LeaseType } from "../../k8s/index.js";
import { groupOf, microTime } from "../../resources/internal.js";
import { drainLabel, ownerOf, RING_LABEL, shardKey, shardLabel } from "./ring.js";

/**
 * The sharder: one replica of the ring (the holder of the `<ring>-sharder` Lease) writes every
 * object's shard label. It watches the ring's shard Leases and, metadata only, the sharded types.
 *
 * For each main object, with `desired` = the rendezvous owner among the available shards:
 * - no shard, or a shard that is not available (Lease gone, released, expired, or fenced):
 *   label it `desired` at once (a dead shard's expired Lease is first taken over: fenced, so
 *   that the replica, should it come back, finds it lost its Lease and stops);
 * - an available shard other than `desired`: add the drain label and wait; the shard finishes
 *   the object's reconcile, then removes both labels (its acknowledgement), and the object is
 *   unassigned: the first case;
 * - `desired` already, with a drain label (the ring changed back): remove the drain label.
 * Children (objects with a controller owner of a main type) follow their owner's current label.
 * Every patch carries the resourceVersion read: a change not seen yet makes it fail, and the next
 * pass decides again.
 *
 * Availability is judged on the sharder's own monotonic clock from the moment it saw a Lease's
 * record change (as a leader-election candidate does), never from the wall-clock times written in
 * the Lease: a replica whose clock is off by seconds is reported, and otherwise unaffected.
 */

export interface SharderOptions {
  /** Writes the shard labels and deletes dead shards' Leases. */
  client: Client;
  /** The informers it reads the objects from (the manager's). */
  registry: InformerRegistry;
  /** Where moves, fenced shards and clock skew are logged. */
  logger: Logger;
  /** The ring's name, as in {@link ShardingOptions.ring}. */
  ring: string;
  /** Where the shard Leases live. */
  namespace: string;
  /** Written into the Lease of a dead shard it fences. */
  identity: string;
  /** The main types (an object of one is the unit that moves), each with the namespaces its controller watches (`undefined`: all). */
  types: ShardedType[];
  /** The types of the main types' children, which follow their owner. */
  childTypes: ShardedType[];
  /** Concurrent label patches. Default 20: a fraction of the API server's seats, so moves never starve Lease renewals. */
  concurrency?: number;
  /** A full pass this often even without changes. Default 60 s. */
  resyncMs?: number;
  /** A Lease that has been dead this long is deleted. Default 60 s. */
  orphanAfterMs?: number;
  /** Wall-clock difference between a shard's `renewTime` and the sharder's clock reported as skew. Default 3 s. */
  skewWarningMs?: number;
}

/** A type the sharder labels, in the namespaces its controller watches (`undefined`: all). */
export interface ShardedType {
  /** The resource, as `defineResource` or kubeloop/k8s gives it. */
  type: ResourceType;
  /** The namespaces its controller watches; `undefined` for all. */
  namespaces: readonly string[] | undefined;
}

/** What a pass did, for logs and tests. */
/** A pass that left objects undecided is followed by another this soon. */
const UNSETTLED_RETRY_MS = 1_000;
/** A patched object whose new version the cache has not shown within this is decided again. */
const PATCH_SEEN_WITHIN_MS = 10_000;

export interface SharderPass {
  assigned: number;
  drained: number;
  undrained: number;
  children: number;
  conflicts: number;
}

interface ShardState {
  /** The record last seen, as a string, and when (monotonic ms). */
  record: string;
  at: number;
  /** Wall-clock ms at that moment, for skew reports. */
  wallAt: number;
  holder: string;
  durationMs: number;
  lease: Lease;
}

/** How late a watch event may reasonably arrive before its difference counts as clock skew. */
const DEFAULT_SKEW_WARNING_MS = 3_000;

export class Sharder {
  private readonly options: SharderOptions;
  private readonly log: Logger;
  private readonly shardKey: string;
  private readonly drainKey: string;
  private readonly states = new Map<string, ShardState>();
  private readonly warned = new Map<string, string>();
  private readonly held: { release(): Promise<void> }[] = [];
  private leases: Informer<Lease> | undefined;
  private readonly mains = new Map<string, { type: ResourceType; view: InformerView<KubeObject> }>();
  private readonly children: { type: ResourceType; view: InformerView<KubeObject> }[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** When the pending pass is due (monotonic ms). */
  private dueAt = 0;
  private tick: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private available: string[] = [];
  /**
   * Objects patched and the resourceVersion each patch was based on: until the cache shows a newer
   * version, a pass leaves them alone (a second patch could only conflict).
   */
  private readonly patched = new Map<string, { resourceVersion: string; at: number }>();
  /** Whether the last pass left an object undecided (a conflict, or a patch not yet seen). */
  private unsettled = false;
  /** Passes done, for tests. */
  passes = 0;
  last: SharderPass | undefined;

  constructor(options: SharderOptions) {
    this.options = options;
    this.log = options.logger.child({ sharder: options.ring });
    this.shardKey = shardLabel(options.ring);
    this.drainKey = drainLabel(options.ring);
  }

  /** The shards objects are assigned to now. */
  get shards(): readonly string[] {
    return this.available;
  }

  /** Starts watching; resolves once the caches have synced and the first pass is done. */
  async start(): Promise<void> {
    const { registry } = this.options;
    const leases = registry.acquire(LeaseType, {
      namespace: this.options.namespace,
      labelSelector: `${RING_LABEL}=${this.options.ring}`,
    });
    this.held.push(leases);
    this.leases = leases.informer as unknown as Informer<Lease>;
    this.leases.on({
      added: (lease) => this.observeLease(lease),
      updated: (_, lease) => this.observeLease(lease),
      deleted: (lease) => {
        this.states.delete(lease.metadata?.name ?? "");
        this.schedule(0);
      },
    });
    const watch = ({ type, namespaces }: ShardedType) => {
      if (type.namespaced !== false && namespaces && namespaces.length > 1) {
        const shared = registry.acquireNamespaces(type, namespaces, { metadataOnly: true });
        this.held.push(shared);
        return shared.view as unknown as InformerView<KubeObject>;
      }
      const namespace = type.namespaced !== false && namespaces ? namespaces[0] : undefined;
      const shared = registry.acquire(type, { metadataOnly: true, ...(namespace ? { namespace } : {}) });
      this.held.push(shared);
      return shared.informer as unknown as InformerView<KubeObject>;
    };
    const onChange = { added: () => this.schedule(), updated: () => this.schedule() };
    for (const sharded of this.options.types) {
      if (this.mains.has(typeId(sharded.type))) continue;
      const view = watch(sharded);
      view.on(onChange);
      this.mains.set(typeId(sharded.type), { type: sharded.type, view });
    }
    for (const sharded of this.options.childTypes) {
      if (this.mains.has(typeId(sharded.type)) || this.children.some((c) => c.type === sharded.type))
        continue;
      const view = watch(sharded);
      view.on(onChange);
      this.children.push({ type: sharded.type, view });
    }
    await Promise.all([
      this.leases.synced,
      ...[...this.mains.values(), ...this.children].map(({ view }) => view.synced),
    ]);
    // Expiry happens without any event: look once a second whether a shard came or went.
    this.tick = setInterval(() => {
      if (this.availabilityChanged()) this.schedule(0);
    }, 1_000);
    this.availabilityChanged();
    this.schedule(0);
    await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.tick);
    await this.running;
    await Promise.all(this.held.splice(0).map((held) => held.release()));
  }

  private observeLease(lease: Lease): void {
    const name = lease.metadata?.name ?? "";
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.leaseDurationSeconds, spec.renewTime]);
    const previous = this.states.get(name);
    if (previous?.record === record) {
      if (previous) previous.lease = lease;
      return;
    }
    const now = performance.now();
    const wallAt = Date.now();
    this.states.set(name, {
      record,
      at: now,
      wallAt,
      holder: spec.holderIdentity ?? "",
      durationMs: (spec.leaseDurationSeconds ?? 0) * 1000,
      lease,
    });
    // Skew shows only in a renewal seen as it happens, not in a record found at start.
    if (previous) this.checkLease(name, lease, wallAt);
    else this.checkHolder(name, lease);
    if (this.availabilityChanged()) this.schedule(0);
  }

  /** Reports a renewal whose `renewTime` is seconds away from the sharder's clock (once per skew). */
  private checkLease(name: string, lease: Lease, wallAt: number): void {
    if (!this.checkHolder(name, lease)) return;
    const spec = lease.spec ?? {};
    const renewed = spec.renewTime ? Date.parse(spec.renewTime) : Number.NaN;
    const skewMs = renewed - wallAt;
    const limit = this.options.skewWarningMs ?? DEFAULT_SKEW_WARNING_MS;
    // Ahead is unambiguous; behind is also what a late watch event looks like, so only a lag past
    // the Lease's duration counts (the sharder would then see it expire early, harmlessly).
    const lagLimit = Math.max(limit, (spec.leaseDurationSeconds ?? 0) * 1000);
    const skewed = skewMs > limit || skewMs < -lagLimit;
    if (spec.holderIdentity !== name || !Number.isFinite(skewMs) || !skewed) return;
    const key = `skew:${name}`;
    const seconds = Math.round(skewMs / 1000);
    if (this.warned.get(key) === String(seconds)) return;
    this.warned.set(key, String(seconds));
    this.log.warn(
      { lease: name, skewSeconds: skewMs / 1000 },
      `shard ${name}'s clock is ${Math.abs(seconds)}s ${skewMs > 0 ? "ahead of" : "behind"} the sharder's (renewTime ${spec.renewTime}): ` +
        "expiry is judged on the sharder's own clock, so assignments are unaffected; fix the node's time sync",
    );
  }

  /** Reports a shard Lease edited into something no shard writes (once per problem); false if so. */
  private checkHolder(name: string, lease: Lease): boolean {
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    let problem: string | undefined;
    if (holder && holder !== name && !holder.startsWith("sharder:"))
      problem =
        `shard Lease ${name} names holder "${holder}", not the shard it is named after (edited by hand?): ` +
        "the shard is treated as unavailable and its objects move; delete the Lease to let its replica take it again";
    else if (holder && !(Number(spec.leaseDurationSeconds) > 0))
      problem = `shard Lease ${name} has no positive leaseDurationSeconds (${spec.leaseDurationSeconds ?? "unset"}): treated as unavailable`;
    if (problem) {
      if (this.warned.get(name) !== problem) this.log.warn({ lease: name, holder }, problem);
      this.warned.set(name, problem);
      return false;
    }
    this.warned.delete(name);
    return true;
  }

  /** Whether a shard may be given objects: its Lease held by itself and not expired on our clock. */
  private isAvailable(name: string, now: number): boolean {
    const state = this.states.get(name);
    return !!state && state.holder === name && state.durationMs > 0 && now - state.at < state.durationMs;
  }

  private availabilityChanged(): boolean {
    const now = performance.now();
    const available = [...this.states.keys()].filter((name) => this.isAvailable(name, now)).sort();
    if (available.join(",") === this.available.join(",")) return false;
    this.log.info({ shards: available, previous: this.available }, "ring membership changed");
    this.available = available;
    return true;
  }

  /**
   * A pass soon; changes that come together share one. A pass already due sooner covers the
   * request; one due later (the resync) gives way, or a new object would wait for it unlabelled.
   */
  private schedule(delayMs = 100): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const due = performance.now() + delayMs;
    if (this.timer && delayMs > 0 && this.dueAt <= due) return;
    clearTimeout(this.timer);
    this.dueAt = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.pass().finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.schedule(100);
        } else {
          // Work left undone comes back soon, not at the resync: an object whose patch conflicted
          // with a concurrent write, or whose patch the cache has not shown yet, would otherwise
          // wait up to a minute unassigned (its replica gone), or for its next unrelated change.
          this.schedule(this.unsettled ? UNSETTLED_RETRY_MS : (this.options.resyncMs ?? 60_000));
        }
      });
    }, delayMs);
  }

  private async pass(): Promise<void> {
    const pass: SharderPass = { assigned: 0, drained: 0, undrained: 0, children: 0, conflicts: 0 };
    this.unsettled = false;
    await this.fenceAndTidy(performance.now());
    if (this.available.length === 0) {
      this.last = pass;
      this.passes++;
      return;
    }
    // Each object is decided when its turn comes, on the latest cached version and the ring of
    // that moment: a pass over many objects takes a while, and members may come or go meanwhile.
    const work: (() => Promise<void> | undefined)[] = [];
    for (const { type, view } of this.mains.values())
      for (const listed of view.list()) work.push(() => this.settleMain(type, latest(view, listed), pass));
    for (const { type, view } of this.children)
      for (const listed of view.list()) work.push(() => this.settleChild(type, latest(view, listed), pass));
    await runPool(work, this.options.concurrency ?? 20);
    this.passes++;
    this.last = pass;
    if (pass.assigned || pass.drained || pass.undrained || pass.children)
      this.log.info({ ...pass, shards: this.available }, "sharder pass");
  }

  private settleMain(
    type: ResourceType,
    object: KubeObject | undefined,
    pass: SharderPass,
  ): Promise<void> | undefined {
    const shards = this.available;
    if (!object || shards.length === 0 || this.waiting(type, object)) return;
    const labels = object.metadata?.labels ?? {};
    const current = labels[this.shardKey];
    const draining = this.drainKey in labels;
    const desired = ownerOf(shardKey(object, type), shards) as string;
    if (!current || !this.isAvailable(current, performance.now())) {
      pass.assigned++;
      return this.patch(type, object, { [this.shardKey]: desired, [this.drainKey]: null }, pass);
    }
    if (current !== desired && !draining) {
      pass.drained++;
      return this.patch(type, object, { [this.drainKey]: "true" }, pass);
    }
    if (current === desired && draining) {
      pass.undrained++;
      return this.patch(type, object, { [this.drainKey]: null }, pass);
    }
    return;
  }

  private settleChild(
    type: ResourceType,
    object: KubeObject | undefined,
    pass: SharderPass,
  ): Promise<void> | undefined {
    const owner = object?.metadata?.ownerReferences?.find((ref) => ref.controller);
    if (!object || !owner || this.waiting(type, object)) return;
    const main = [...this.mains.values()].find(
      ({ type: t }) => t.kind === owner.kind && groupOf(t.apiVersion) === groupOf(owner.apiVersion),
    );
    const shard = main?.view.get({ namespace: object.metadata?.namespace, name: owner.name })?.metadata
      ?.labels?.[this.shardKey];
    if (!shard || object.metadata?.labels?.[this.shardKey] === shard) return;
    pass.children++;
    return this.patch(type, object, { [this.shardKey]: shard }, pass);
  }

  /** Whether this object's last patch is not in the cache yet (a second one could only conflict). */
  private waiting(type: ResourceType, object: KubeObject): boolean {
    const id = patchId(type, object);
    const based = this.patched.get(id);
    if (based === undefined) return false;
    // The cache shows the patch (a newer version), or has not for too long (a patch that changed
    // nothing leaves no event to wait for): decide again.
    if (
      based.resourceVersion === object.metadata?.resourceVersion &&
      performance.now() - based.at < PATCH_SEEN_WITHIN_MS
    ) {
      this.unsettled = true;
      return true;
    }
    this.patched.delete(id);
    return false;
  }

  /**
   * A shard whose Lease expired on our clock is fenced (its Lease taken over by the sharder, for
   * twice its duration), so its replica, if only cut off, finds the Lease lost and stops; a Lease
   * dead past the orphan time is deleted.
   */
  private async fenceAndTidy(now: number): Promise<void> {
    const { client, namespace } = this.options;
    for (const [name, state] of this.states) {
      const expired = now - state.at >= state.durationMs;
      try {
        if (state.holder === name && expired) {
          this.log.warn(
            { lease: name, expiredForSeconds: Math.round((now - state.at - state.durationMs) / 1000) },
            `shard ${name} stopped renewing its Lease: fencing it and moving its objects`,
          );
          const time = microTime();
          await client.update({
            ...state.lease,
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            spec: {
              ...state.lease.spec,
              holderIdentity: `sharder:${this.options.identity}`,
              leaseDurationSeconds: Math.max(1, Math.round((2 * state.durationMs) / 1000)),
              acquireTime: time,
              renewTime: time,
            },
          });
        } else if (state.holder !== name && now - state.at > (this.options.orphanAfterMs ?? 60_000)) {
          this.log.info({ lease: name }, `shard Lease ${name} unused for a minute: deleted`);
          await client.delete(LeaseType, name, {
            namespace,
            preconditions: { resourceVersion: state.lease.metadata?.resourceVersion ?? "" },
          });
        }
      } catch (error) {
        if (!["Conflict", "NotFound"].includes((error as Error).name))
          this.log.warn({ err: error, lease: name }, "could not fence or tidy a shard Lease");
      }
    }
  }

  private async patch(
    type: ResourceType,
    object: KubeObject,
    labels: Record<string, string | null>,
    pass: SharderPass,
  ): Promise<void> {
    if (this.stopped) return;
    const id = patchId(type, object);
    this.patched.set(id, { resourceVersion: object.metadata?.resourceVersion ?? "", at: performance.now() });
    const metadata = object.metadata ?? {};
    try {
      await this.options.client.patch(
        type,
        metadata.name ?? "",
        { metadata: { resourceVersion: metadata.resourceVersion, labels } },
        {
          ...(metadata.namespace ? { namespace: metadata.namespace } : {}),
          fieldManager: "kubeloop-sharder",
        },
      );
    } catch (error) {
      this.patched.delete(id); // not written: the next pass decides again
      this.unsettled = true;
      const name = (error as Error).name;
      if (name === "Conflict") pass.conflicts++;
      else if (name !== "NotFound")
        this.log.warn(
          { err: error, kind: type.kind, namespace: metadata.namespace, name: metadata.name },
          "could not write a shard label; the next pass retries",
        );
    }
  }
}

function typeId(type: ResourceType): string {
  return kindKeyOf(type);
}

function patchId(type: ResourceType, object: KubeObject): string {
  return typedKeyOf(kindKeyOf(type), objectKey(object));
}

/** The cache's version of a listed object when its turn comes (undefined once it is gone). */
function latest(view: InformerView<KubeObject>, listed: KubeObject): KubeObject | undefined {
  return view.get(refOf(listed));
}

/** Runs `tasks` with at most `limit` at once. */
async function runPool(tasks: (() => Promise<void> | undefined)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]?.();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}
