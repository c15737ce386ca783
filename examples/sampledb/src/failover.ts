import type { ReconcileContext } from "kubeloop";
import { type core, Pod } from "kubeloop/k8s";
import { names, ROLE, type SampleDBObject } from "./objects.ts";
import { fence, receivedBytes } from "./sql.ts";

// PostgreSQL has no election of its own: the operator picks the primary (the seed's "pick a
// leader"). While the named primary's pod serves, it stays; when it does not and a replica does:
// the old primary is fenced when the operator can still reach it (its node lost to the control
// plane, its containers running on), the replica furthest along is named (status first, so a
// restarted operator carries on), promoted (replication.ts, before the Services move to it by its
// label), and every other instance started before the promotion is restarted: it reads the new
// primary's name at start and follows it (a former primary is copied afresh).

type Ctx = ReconcileContext<SampleDBObject>;

export const isReady = (pod: core.Pod) =>
  !pod.metadata?.deletionTimestamp &&
  pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

/** The replicas that could be promoted when the primary's pod does not serve; none while it does. */
export function candidates(pods: core.Pod[], primary: string): core.Pod[] {
  if (pods.some((pod) => pod.metadata?.name === primary && isReady(pod))) return [];
  return pods.filter(
    (pod) => pod.metadata?.name !== primary && isReady(pod) && pod.metadata?.labels?.[ROLE] === "replica",
  );
}

/**
 * When the primary's pod does not serve and a replica does: fences the old primary (so no client
 * still connected to it is told of a commit after this point), then returns the replica that has
 * received the most WAL (ties and unreadable ones by name), which the caller names. Undefined when
 * no replica can take over.
 */
export async function elect(
  ctx: Ctx,
  pods: core.Pod[],
  primary: string,
  password: string,
): Promise<string | undefined> {
  const ready = candidates(pods, primary);
  if (ready.length === 0) return undefined;
  const old = pods.find((pod) => pod.metadata?.name === primary);
  const host = old?.status?.podIP;
  if (host) {
    try {
      const ended = await fence({ host, password });
      ctx.event("Warning", "Fenced", `${primary} is read-only now; ${ended} client sessions ended`);
    } catch (error) {
      // A deleted pod's server is going anyway; a lost machine's is unreachable, and so to clients.
      if (!old?.metadata?.deletionTimestamp)
        ctx.event("Warning", "FenceFailed", `${primary} could not be fenced: ${(error as Error).message}`);
    }
  }
  const positions = await Promise.all(
    ready.map(async (pod) => ({
      name: pod.metadata?.name ?? "",
      bytes: pod.status?.podIP
        ? await receivedBytes({ host: pod.status.podIP, password }).catch(() => -1)
        : -1,
    })),
  );
  positions.sort((a, b) => b.bytes - a.bytes || a.name.localeCompare(b.name));
  return positions[0]?.name;
}

/** After a promotion: restarts the instances started before it, so they follow the new primary. */
export async function restartFollowers(
  db: SampleDBObject,
  ctx: Ctx,
  pods: core.Pod[],
  primary: string,
  promotedAtText: string,
): Promise<void> {
  const promotedAt = Date.parse(promotedAtText);
  for (const pod of pods) {
    const name = pod.metadata?.name ?? "";
    if (name === primary || pod.metadata?.deletionTimestamp) continue;
    if (Date.parse(pod.metadata?.creationTimestamp ?? "") >= promotedAt) continue;
    // A short grace: PostgreSQL's SIGTERM is a smart shutdown, which waits for every session (the
    // operator's own metrics reads included) up to the pod's 30 s, and with durability required the
    // new primary's writes wait for this standby. A standby stopped hard recovers from its WAL.
    await ctx.client
      .delete(Pod, name, { namespace: names(db).namespace, gracePeriodSeconds: 2 })
      .catch(() => {});
    ctx.event("Normal", "Following", `${name} restarts to follow the new primary ${primary}`);
  }
}
