import { Deque } from "./deque.js";

/**
 * Fair turns among groups of keys within one priority (controller-runtime's open PR #3261 asks for
 * the same): a tenant that queues 5,000 keys must not push every other tenant's change behind them.
 *
 * {@link WorkQueueOptions.fairness} names each key's group (a controller gives the namespace). The
 * rule, per priority:
 *
 * - each group keeps its keys in FIFO order;
 * - the groups that have queued keys form a ring; a group joins the back of the ring when it gets
 *   a queued key while not in it;
 * - `get` takes the first key of the group at the front of the ring; that group keeps the front for
 *   `weight` takes in a row (default 1), then goes to the back;
 * - a group with no queued keys left leaves the ring (its count of takes starts over when it returns);
 * - with `maxInFlight`, a group that has that many keys processing is passed over: the take goes to
 *   the first group in ring order below its limit, counts as that group's turn, and the groups
 *   passed over keep their places (and their count of takes).
 *
 * With no fairness every key is in one group, and this is plain FIFO: the queue's rules are
 * unchanged. Groups are created on demand and dropped as soon as they are empty, so a queue sees
 * thousands of namespaces come and go without keeping a map entry for each.
 */

/** How a queue groups its keys for fair turns; see {@link FairLine}. */
export interface Fairness<K> {
  /** The group of a key (e.g. its namespace). Called once each time the key is queued. */
  key(key: K): string;
  /**
   * Takes in a row a group gets when it reaches the front of the ring: a whole number ≥ 1
   * (default 1). Read once when the group forms (a group forms when it gets its first queued key).
   */
  weight?(group: string): number;
  /**
   * The most keys of one group processing at once (a whole number ≥ 1; default: no limit). A group
   * at its limit is passed over and its keys wait, even while workers are free: with one worker
   * more than the limit, a busy group never holds every worker, and another group's key starts as
   * soon as it is queued instead of waiting for a busy group's reconcile to end.
   */
  maxInFlight?: number;
}

/** What a fair line holds: an entry that can be left behind as a tombstone. */
export interface FairEntry<K> {
  readonly key: K;
  /** Left in its group's line after it moved elsewhere; skipped when reached. */
  stale: boolean;
  /** The group it was queued in (set by the line). */
  group: string;
}

class Group<E> {
  readonly line = new Deque<E>();
  /** Entries in `line` that are not stale. */
  live = 0;
  /** Takes since it reached the front of the ring. */
  turns = 0;
  prev: Group<E> | undefined;
  next: Group<E> | undefined;
  constructor(
    readonly name: string,
    readonly weight: number,
  ) {}
}

function checkWeight(group: string, weight: number): number {
  if (!Number.isSafeInteger(weight) || weight < 1)
    throw new RangeError(`fairness weight of group "${group}" must be a whole number ≥ 1, got ${weight}`);
  return weight;
}

/** The queued entries of one priority, handed out in fair turns among their groups. */
export class FairLine<K, E extends FairEntry<K>> {
  /** Entries that are not stale, in all groups. */
  live = 0;
  private readonly groups = new Map<string, Group<E>>();
  private head: Group<E> | undefined;
  private tail: Group<E> | undefined;

  constructor(private readonly fairness: Fairness<K> | undefined) {}

  /** Queues `entry` at the back of its group's line. */
  push(entry: E): void {
    const name = this.fairness === undefined ? "" : this.fairness.key(entry.key);
    entry.group = name;
    let group = this.groups.get(name);
    if (group === undefined) {
      const weight = this.fairness?.weight === undefined ? 1 : checkWeight(name, this.fairness.weight(name));
      group = new Group<E>(name, weight);
      this.groups.set(name, group);
      this.append(group);
    }
    group.line.push(entry);
    group.live++;
    this.live++;
  }

  /** `entry` (already marked stale) no longer counts; its group leaves the ring if now empty. */
  discard(entry: E): void {
    const group = this.groups.get(entry.group);
    if (group === undefined) return;
    group.live--;
    this.live--;
    if (group.live === 0) this.drop(group);
  }

  /**
   * Takes the next entry in fair order, or undefined when none is queued. `blocked(group)`: groups
   * to pass over (at their `maxInFlight`); undefined when every queued group is blocked.
   */
  shift(blocked?: (group: string) => boolean): E | undefined {
    let group = this.head;
    if (blocked !== undefined) while (group !== undefined && blocked(group.name)) group = group.next;
    if (group === undefined) return undefined;
    for (let entry = group.line.shift(); entry !== undefined; entry = group.line.shift()) {
      if (entry.stale) continue;
      group.live--;
      this.live--;
      if (group.live === 0) {
        this.drop(group);
      } else if (++group.turns >= group.weight && group !== this.tail) {
        group.turns = 0;
        this.unlink(group);
        this.append(group);
      } else if (group.turns >= group.weight) {
        group.turns = 0; // alone in the ring: it stays at the front
      }
      return entry;
    }
    return undefined; // unreachable while `live` is right: a group in the ring has a live entry
  }

  /** Groups with queued keys (for tests and debugging). */
  get groupCount(): number {
    return this.groups.size;
  }

  private drop(group: Group<E>): void {
    group.line.clear();
    this.groups.delete(group.name);
    this.unlink(group);
  }

  private append(group: Group<E>): void {
    group.prev = this.tail;
    group.next = undefined;
    if (this.tail === undefined) this.head = group;
    else this.tail.next = group;
    this.tail = group;
  }

  private unlink(group: Group<E>): void {
    if (group.prev === undefined) this.head = group.next;
    else group.prev.next = group.next;
    if (group.next === undefined) this.tail = group.prev;
    else group.next.prev = group.prev;
    group.prev = undefined;
    group.next = undefined;
  }
}
