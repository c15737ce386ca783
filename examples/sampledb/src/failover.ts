import type { ReconcileContext } from "kubeloop";
import { type batch, type core, Pod } from "kubeloop/k8s";
import { names, oneShotJob, ROLE, type SampleDBObject } from "./objects.ts";

// PostgreSQL has no election of its own: the operator picks the primary (the seed's "pick a
// leader"). While the named primary's pod serves, it stays; when it does not and a replica does,
// the replica is named (status first, so a restarted operator carries on), the Services follow
// its label, a Job promotes it, and every other instance started before the promotion is
// restarted: it reads the new primary's name at start and follows it (a former primary is copied
// afresh).

type Ctx = ReconcileContext<SampleDBObject>;

export const isReady = (pod: core.Pod) =>
  !pod.metadata?.deletionTimestamp &&
  pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

/** The replica to promote when the primary's pod does not serve; undefined when none can. */
export function candidate(pods: core.Pod[], primary: string): string | undefined {
  if (pods.some((pod) => pod.metadata?.name === primary && isReady(pod))) return undefined;
  return pods
    .filter(
      (pod) => pod.metadata?.name !== primary && isReady(pod) && pod.metadata?.labels?.[ROLE] === "replica",
    )
    .map((pod) => pod.metadata?.name ?? "")
    .sort()[0];
}

/** Promotes `primary` (idempotent: only a server still in recovery is promoted). */
export function promoteJob(db: SampleDBObject, primary: string, promotedAt: string): batch.Job {
  const host = `${primary}.${names(db).pods}`;
  const query = (sql: string) => `psql -h ${host} -U postgres -d postgres -Atc "${sql}"`;
  return oneShotJob(db, {
    name: `${primary}-promote-${Math.floor(Date.parse(promotedAt) / 1000)}`,
    component: "init",
    backoffLimit: 20,
    ttlSeconds: 3_600,
    script: `if [ "$(${query("select pg_is_in_recovery()")})" = t ]; then ${query("select pg_promote()")}; fi`,
  });
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
    await ctx.client.delete(Pod, name, { namespace: names(db).namespace }).catch(() => {});
    ctx.event("Normal", "Following", `${name} restarts to follow the new primary ${primary}`);
  }
}
