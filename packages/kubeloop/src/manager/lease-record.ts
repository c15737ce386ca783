import type { Lease, LeaseSpec } from "kubernetes-types/coordination/v1.js";

/** The fields of a Lease's spec the election reads and writes (client-go's `LeaderElectionRecord`). */
export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: string | undefined;
  renewTime: string | undefined;
  leaseTransitions: number;
}

/** The election's record of a Lease. */
export function recordOf(lease: Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? "",
    leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
    acquireTime: spec.acquireTime,
    renewTime: spec.renewTime,
    leaseTransitions: spec.leaseTransitions ?? 0,
  };
}

/** The Lease spec of a record. */
export function specOf(record: LeaseRecord): LeaseSpec {
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    ...(record.acquireTime ? { acquireTime: record.acquireTime } : {}),
    ...(record.renewTime ? { renewTime: record.renewTime } : {}),
    leaseTransitions: record.leaseTransitions,
  };
}

/** The record as a comparable string (client-go compares the raw record bytes). */
export function recordKey(record: LeaseRecord): string {
  return JSON.stringify([
    record.holderIdentity,
    record.leaseDurationSeconds,
    record.acquireTime ?? "",
    record.renewTime ?? "",
    record.leaseTransitions,
  ]);
}
