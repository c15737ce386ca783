import type { Deployment } from "kubernetes-types/apps/v1.js";
import { describe, expect, it } from "vitest";
import { type RolloutRecord, recordRollout, rolloutStatus } from "./rollout.js";

const deployment = (generation: number, status: Deployment["status"], replicas = 3): Deployment => ({
  metadata: { name: "web", generation },
  spec: { replicas, selector: {}, template: {} },
  status,
});

const deadline = {
  type: "Progressing",
  status: "False",
  reason: "ProgressDeadlineExceeded",
  message: 'ReplicaSet "web-7d" has timed out progressing.',
};

describe("rolloutStatus", () => {
  it("trusts nothing before the controller observed the current generation, not even a deadline", () => {
    const status = rolloutStatus(deployment(3, { observedGeneration: 2, conditions: [deadline] }));
    expect(status).toMatchObject({ state: "Pending", reason: "ObservedGenerationBehind" });
    expect(status.message).toContain("generation 3 (at 2)");
  });

  it("is Failed on ProgressDeadlineExceeded once the generation is observed", () => {
    const status = rolloutStatus(
      deployment(3, {
        observedGeneration: 3,
        conditions: [deadline],
        updatedReplicas: 1,
        availableReplicas: 3,
      }),
    );
    expect(status).toMatchObject({
      state: "Failed",
      reason: "ProgressDeadlineExceeded",
      updated: 1,
      available: 3,
    });
    expect(status.message).toBe(deadline.message);
  });

  it("is Progressing while replicas update, old ones terminate, or new ones become available", () => {
    const base = { observedGeneration: 1 };
    expect(rolloutStatus(deployment(1, { ...base, updatedReplicas: 1, replicas: 4 })).reason).toBe(
      "ReplicasUpdating",
    );
    expect(rolloutStatus(deployment(1, { ...base, updatedReplicas: 3, replicas: 4 })).reason).toBe(
      "OldReplicasTerminating",
    );
    expect(
      rolloutStatus(deployment(1, { ...base, updatedReplicas: 3, replicas: 3, availableReplicas: 2 }))
        .message,
    ).toBe("2 of 3 updated replicas available");
  });

  it("is Complete when every desired replica is updated and available", () => {
    const status = rolloutStatus(
      deployment(2, { observedGeneration: 2, updatedReplicas: 3, replicas: 3, availableReplicas: 3 }),
    );
    expect(status).toMatchObject({ state: "Complete", desired: 3, updated: 3, available: 3 });
  });

  it("is Pending for a Deployment not created yet", () => {
    expect(rolloutStatus(undefined)).toMatchObject({ state: "Pending", reason: "NotCreated" });
  });
});

describe("recordRollout", () => {
  const at = "2026-11-22T18:00:00Z";
  const rec = (version: string, outcome: RolloutRecord["outcome"]): RolloutRecord => ({
    version,
    outcome,
    startedAt: at,
  });

  it("puts the newest first, replacing the same version's Progressing record", () => {
    let history = recordRollout([], rec("1.0", "Progressing"));
    history = recordRollout(history, rec("1.0", "Succeeded"));
    history = recordRollout(history, rec("2.0", "Progressing"));
    history = recordRollout(history, rec("2.0", "RolledBack"));
    expect(history.map((r) => `${r.version} ${r.outcome}`)).toEqual(["2.0 RolledBack", "1.0 Succeeded"]);
  });

  it("keeps at most `limit` records and never changes its input", () => {
    const input = [rec("3", "Succeeded"), rec("2", "Succeeded"), rec("1", "Succeeded")];
    const history = recordRollout(input, rec("4", "Progressing"), 3);
    expect(history.map((r) => r.version)).toEqual(["4", "3", "2"]);
    expect(input).toHaveLength(3);
  });
});
