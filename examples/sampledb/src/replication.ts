import type { ReconcileContext } from "kubeloop";
import type { core } from "kubeloop/k8s";
import { isReady } from "./failover.ts";
import { names, type SampleDBObject } from "./objects.ts";
import { type Instance, promote, readPrimary, setStandbyNames } from "./sql.ts";

// The operator owns synchronous replication (spec.replication): it sets the primary's
// synchronous_standby_names (a quorum, `ANY n (...)`, of standbys named by their pods, which each
// standby gives as its application_name) with ALTER SYSTEM and a reload, from the instances that
// stream, and changes it as they come and go. With durability `required` every other instance is
// named whether it streams or not, so commits wait while fewer than n stream; with `preferred` only
// the standbys that are Ready and streaming are named, and none when none is, so writes go on.

type Ctx = ReconcileContext<SampleDBObject>;

export type Writes = "Synchronous" | "Asynchronous" | "Degraded" | "Waiting";

export interface ReplicationStatus {
  synchronousStandbyNames: string;
  streaming: string[];
  writes: Writes;
}

/** What synchronous_standby_names should be on `primary`, and what writes get with it. */
export function standbyNames(
  db: SampleDBObject,
  primary: string,
  readyPods: string[],
  streaming: string[],
): { value: string; writes: Writes; message: string } {
  const { name } = names(db);
  const others = Array.from({ length: db.spec.instances }, (_, i) => `${name}-${i}`).filter(
    (pod) => pod !== primary,
  );
  const { mode, durability } = db.spec.replication;
  const n = Math.min(db.spec.replication.number, others.length);
  if (mode === "asynchronous" || n === 0)
    return { value: "", writes: "Asynchronous", message: "commits wait for no standby" };
  const live = others.filter((pod) => streaming.includes(pod) && readyPods.includes(pod));
  const quorum = (count: number, pods: string[]) => `ANY ${count} (${pods.map((p) => `"${p}"`).join(", ")})`;
  const missing = others.filter((pod) => !live.includes(pod));
  if (durability === "required") {
    if (live.length >= n)
      return {
        value: quorum(n, others),
        writes: "Synchronous",
        message: `each commit waits for ${n} of ${others.join(", ")}`,
      };
    return {
      value: quorum(n, others),
      writes: "Waiting",
      message: `durability required: each commit waits for ${n} of ${others.join(", ")} to confirm, and ${live.length} streams (not streaming: ${missing.join(", ")})`,
    };
  }
  if (live.length >= n)
    return {
      value: quorum(n, live),
      writes: "Synchronous",
      message: `each commit waits for ${n} of ${live.join(", ")}`,
    };
  if (live.length > 0)
    return {
      value: quorum(live.length, live),
      writes: "Degraded",
      message: `durability preferred: each commit waits for ${live.length} of ${live.join(", ")}, not ${n} (not streaming: ${missing.join(", ")})`,
    };
  return {
    value: "",
    writes: "Degraded",
    message: `durability preferred: no standby streams (${missing.join(", ")}), commits wait for none`,
  };
}

/**
 * On the primary (Ready): promotes it when it is still in recovery during a failover, then sets
 * synchronous_standby_names as spec.replication and the standbys say. Undefined when the primary
 * cannot be read (the status keeps what it had).
 */
export async function replicate(
  db: SampleDBObject,
  ctx: Ctx,
  pods: core.Pod[],
  primary: string,
  options: { password: string; promoting: boolean },
): Promise<(ReplicationStatus & { message: string }) | undefined> {
  const pod = pods.find((p) => p.metadata?.name === primary);
  if (!pod || !isReady(pod) || !pod.status?.podIP) return undefined;
  const instance: Instance = { host: pod.status.podIP, password: options.password };
  let state = await readPrimary(instance);
  if (state.inRecovery) {
    // Outside a failover a named primary is never a standby; inside one, this is the promotion.
    if (!options.promoting) return undefined;
    await promote(instance);
    ctx.event("Normal", "Promoted", `${primary} accepts writes`);
    state = await readPrimary(instance);
  }
  const readyPods = pods.filter(isReady).map((p) => p.metadata?.name ?? "");
  const desired = standbyNames(db, primary, readyPods, state.streaming);
  if (state.synchronousStandbyNames !== desired.value) {
    await setStandbyNames(instance, desired.value);
    ctx.event(
      "Normal",
      "SynchronousStandbys",
      `synchronous_standby_names on ${primary}: ${desired.value ? desired.value : "'' (commits wait for no standby)"}`,
    );
  }
  const previous = db.status?.replication?.writes;
  if (desired.writes === "Waiting") ctx.event("Warning", "WritesWait", desired.message);
  if (desired.writes === "Degraded" && previous !== "Degraded")
    ctx.event("Warning", "ReplicationDegraded", desired.message);
  return {
    synchronousStandbyNames: desired.value,
    streaming: state.streaming,
    writes: desired.writes,
    message: desired.message,
  };
}
