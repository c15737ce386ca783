import { describe, expect, it } from "vitest";
import { type SampleDBObject, statefulSet } from "../src/objects.ts";
import { reloadJob, reservedNames } from "../src/parameters.ts";
import { standbyNames } from "../src/replication.ts";

// Level 5, without a cluster: what the operator sets synchronous_standby_names to for each
// replication setting as standbys come and go (level5-node-loss.test.ts runs it on real nodes).

function db(instances: number, replication: Partial<SampleDBObject["spec"]["replication"]> = {}) {
  return {
    apiVersion: "seed.example.com/v1",
    kind: "SampleDB",
    metadata: { name: "db", namespace: "ns" },
    spec: {
      instances,
      image: "postgres",
      storage: "1Gi",
      database: "app",
      extensions: [],
      parameters: { synchronous_standby_names: "*", work_mem: "8MB" },
      deletionPolicy: "Snapshot",
      replication: { mode: "synchronous", number: 1, durability: "preferred", ...replication },
    },
  } as SampleDBObject;
}

describe("SampleDB replication: synchronous_standby_names", () => {
  it("preferred names the standbys that are Ready and streaming, and none when none is", () => {
    expect(standbyNames(db(2), "db-0", ["db-0", "db-1"], ["db-1"])).toMatchObject({
      value: 'ANY 1 ("db-1")',
      writes: "Synchronous",
    });
    // Streaming, but its pod not Ready (its node lost): not waited for.
    const lost = standbyNames(db(2), "db-0", ["db-0"], ["db-1"]);
    expect(lost).toMatchObject({ value: "", writes: "Degraded" });
    expect(lost.message).toContain("db-1");
    expect(standbyNames(db(3, { number: 2 }), "db-1", ["db-0", "db-1"], ["db-0"])).toMatchObject({
      value: 'ANY 1 ("db-0")',
      writes: "Degraded",
    });
  });

  it("required names every other instance, and says writes wait while too few stream", () => {
    const three = standbyNames(db(3, { durability: "required" }), "db-1", ["db-1", "db-2"], ["db-2"]);
    expect(three).toMatchObject({ value: 'ANY 1 ("db-0", "db-2")', writes: "Synchronous" });
    const two = standbyNames(db(2, { durability: "required" }), "db-1", ["db-1"], []);
    expect(two).toMatchObject({ value: 'ANY 1 ("db-0")', writes: "Waiting" });
    expect(two.message).toMatch(/durability required: .*not streaming: db-0/);
  });

  it("asynchronous, or a single instance, waits for no standby; number is capped by the instances", () => {
    expect(standbyNames(db(2, { mode: "asynchronous" }), "db-0", ["db-0", "db-1"], ["db-1"]).value).toBe("");
    expect(standbyNames(db(1, { durability: "required" }), "db-0", ["db-0"], []).writes).toBe("Asynchronous");
    expect(standbyNames(db(2, { number: 3 }), "db-0", ["db-0", "db-1"], ["db-1"]).value).toBe(
      'ANY 1 ("db-1")',
    );
  });

  it("leaves the settings it owns out of spec.parameters and out of the reload Job's resets", () => {
    expect(reservedNames(db(2))).toEqual(["synchronous_standby_names"]);
    const script = reloadJob(db(2)).spec?.template.spec?.containers[0]?.command?.[2] ?? "";
    expect(script).toContain("ALTER SYSTEM SET work_mem = '8MB'");
    expect(script).not.toContain("synchronous_standby_names = ");
    expect(script).toContain("NOT IN ('synchronous_standby_names', 'default_transaction_read_only')\\gexec");
  });
});

describe("SampleDB's StatefulSet across the upgrade to Parallel pods", () => {
  it("makes new instances Parallel and keeps the policy a StatefulSet was made with (the field is immutable)", () => {
    expect(statefulSet(db(2), []).spec?.podManagementPolicy).toBe("Parallel");
    const before = statefulSet(db(2), []);
    before.spec = { ...before.spec, podManagementPolicy: "OrderedReady" } as typeof before.spec;
    expect(statefulSet(db(2), [], before).spec?.podManagementPolicy).toBe("OrderedReady");
  });
});
