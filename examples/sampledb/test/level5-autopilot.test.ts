import { pollUntil } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { World, writeOutage } from "./world.ts";

// Level 5 on real pods: the operator elects the primary. With synchronous replication, a writer
// inserts rows one by one through the read-write Service and counts those acknowledged; the
// primary's pod is deleted; the operator promotes the replica, the Services follow it, the old
// primary comes back as a replica; every acknowledged row is on the new primary.

const world = new World();
const ns = "auto";

beforeAll(async () => {
  await world.start(2);
  await world.startOperator();
  await world.ok(["create", "namespace", ns]);
});
afterAll(() => world.stop());

const status = (path: string) => world.ok(["-n", ns, "get", "sampledb", "ha", "-o", `jsonpath=${path}`]);

describe("SampleDB level 5: the operator elects the primary", () => {
  it("promotes the replica when the primary's pod is deleted, losing no acknowledged row", async () => {
    await world.ok(
      ["-n", ns, "apply", "-f", "-"],
      `apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: ha }
spec: { instances: 2, storage: 256Mi, image: ${world.postgres} }
`,
    );
    await world.waitForPhase(ns, "ha", "Ready", 240_000);
    // The default replication: synchronous, preferred; the operator names the streaming standby.
    await world.waitFor(
      ns,
      "ha",
      "{.status.replication.writes}",
      (w) => w === "Synchronous",
      "a synchronous standby",
    );
    const sync = await world.sqlPod(
      ns,
      "ha",
      "sync",
      `psql -Atc "show synchronous_standby_names" && psql -qc "create table t (id serial primary key)"`,
    );
    expect(sync.trim()).toBe('ANY 1 ("ha-1")');

    await world.startWriter(ns, "ha", "writer", 50);
    await pollUntil(
      async () => (await world.ok(["-n", ns, "logs", "writer"]).catch(() => "")).split("\n").length > 20,
      { timeoutMs: 60_000, intervalMs: 500, message: "the writer to write" },
    );
    const deleted = Date.now();
    await world.ok(["-n", ns, "delete", "pod", "ha-0", "--wait=false"]);
    await pollUntil(async () => (await status("{.status.primary}")) === "ha-1", {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: "the operator to name ha-1 the primary",
    });
    await pollUntil(
      async () =>
        (await world.ok(["-n", ns, "get", "pod", "writer", "-o", "jsonpath={.status.phase}"])) ===
        "Succeeded",
      { timeoutMs: 90_000, intervalMs: 1_000, message: "the writer to finish" },
    );
    const { rows: acknowledged, other } = await world.writerRows(ns, "writer");
    if (other.length > 0) console.log(`writer's other output:\n${other.join("\n")}`);
    const after = acknowledged.filter(([at]) => at >= deleted);
    expect(after.length, "rows acknowledged after the failover").toBeGreaterThan(0);
    const { pauseMs, resumedMs } = writeOutage(acknowledged, deleted);
    console.log(
      `failover: longest pause in acknowledged writes ${(pauseMs / 1000).toFixed(1)} s, writes accepted again ${(resumedMs / 1000).toFixed(1)} s after the deletion; rows acknowledged: ${acknowledged.length}`,
    );
    // The Services follow: writes go to ha-1, now out of recovery.
    const onPrimary = await world.sqlPod(
      ns,
      "ha",
      "check",
      `psql -Atc "select pg_is_in_recovery(), count(*) from t" -c "select id from t order by id"`,
    );
    const [head = "", ...ids] = onPrimary.trim().split("\n");
    expect(head.split("|")[0]).toBe("f");
    const present = new Set(ids.map(Number));
    const lost = acknowledged.filter(([, id]) => !present.has(id));
    console.log(`rows lost: ${lost.length}`);
    expect(lost).toEqual([]);
    // The old primary rejoins as a replica.
    await world.waitForPhase(ns, "ha", "Ready", 120_000);
    expect(await world.ok(["-n", ns, "get", "sampledb", "ha"])).toMatch(/ha\s+Ready\s+ha-1\s+2\/2/);
    const replica = await world.sqlPod(
      ns,
      "ha",
      "replica",
      `for i in $(seq 30); do out=$(psql -Atc "select pg_is_in_recovery()" 2>/dev/null) && [ "$out" = t ] && { echo "$out"; exit 0; }; sleep 1; done; exit 1`,
      "readOnlyHost",
    );
    expect(replica.trim()).toBe("t");
    // Its waits (Ready, the writer's 50 s, the rejoin) add up past vitest's default timeout.
  }, 600_000);
});
