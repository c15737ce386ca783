import { pollUntil } from "kubeloop/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { World, writeOutage } from "./world.ts";

// Level 5 on real nodes: the machine of the primary is lost. Its kubelet stops, its containers run
// on, nobody force-deletes anything. Three SampleDBs share the loss (one plane, one outage): two
// instances with durability preferred, three with durability required, two with durability
// required. Every primary is put on node-0 and every other instance elsewhere; writers on node-1
// insert through the read-write Service, and one more client keeps a single connection to the
// primary across the failover.

const world = new World();
const ns = "loss";
const LOST = "node-0";
const WRITER_NODE = "node-1";
const DBS = {
  pref: "instances: 2",
  req3: "instances: 3, replication: { durability: required }",
  req2: "instances: 2, replication: { durability: required }",
} as const;
type Name = keyof typeof DBS;
const NAMES = Object.keys(DBS) as Name[];

beforeAll(async () => {
  await world.start(3);
  await world.startOperator();
  await world.ok(["create", "namespace", ns]);
});
afterAll(() => world.stop());
afterEach(async (context) => {
  if (context.task.result?.state !== "fail") return;
  const events = await get(["events", "--sort-by=.lastTimestamp"]).catch((e: Error) => e.message);
  console.log(`events in ${ns}:\n${events}`);
});

const get = (args: string[]) => world.ok(["-n", ns, "get", ...args]);
const field = (db: string, path: string) => get(["sampledb", db, "-o", `jsonpath=${path}`]);

async function nodesOf(db: Name): Promise<string[]> {
  const out = await get([
    "pods",
    "-l",
    `app.kubernetes.io/instance=${db},seed.example.com/component=instance`,
    "-o",
    'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\\n"}{end}',
  ]);
  return out.trim().split("\n").sort();
}

/** The ids on `db`'s primary, and whether it is in recovery. */
async function rowsOnPrimary(db: Name): Promise<{ recovery: string; ids: Set<number> }> {
  const out = await world.sqlPod(
    ns,
    db,
    `check-${db}`,
    `psql -Atc "select pg_is_in_recovery()" -c "select id from t order by id"`,
  );
  const [recovery = "", ...ids] = out.trim().split("\n");
  return { recovery, ids: new Set(ids.map(Number)) };
}

/** Required with 2: the only standby is on the lost node, so commits wait, and the status and an event say why. */
async function expectWritesWait(): Promise<void> {
  await world.waitFor(ns, "req2", "{.status.primary}", (p) => p === "req2-1", "req2-1 promoted", 90_000);
  await world.waitFor(
    ns,
    "req2",
    "{.status.replication.writes}",
    (w) => w === "Waiting",
    "req2 waiting",
    30_000,
  );
  const condition = await field("req2", '{.status.conditions[?(@.type=="Ready")].reason}');
  const message = await field("req2", '{.status.conditions[?(@.type=="Ready")].message}');
  console.log(`req2: Ready ${condition}: ${message}`);
  expect(condition).toBe("WritesWait");
  expect(message).toContain("req2-0");
  const events = await get([
    "events",
    "--field-selector",
    "reason=WritesWait,involvedObject.name=req2",
    "-o",
    "jsonpath={.items[*].message}",
  ]);
  expect(events).toContain("durability required");
}

/**
 * Writes acknowledged by the new primary (after `status.promotedAt`: the old one is fenced before)
 * within 40 s of the loss.
 */
async function expectWritesAgain(db: Name, rows: [number, number][], lost: number): Promise<void> {
  const promotedAt = Date.parse(await field(db, "{.status.promotedAt}"));
  const again = rows.find(([at]) => at > promotedAt)?.[0] ?? Number.POSITIVE_INFINITY;
  const { pauseMs } = writeOutage(rows, lost);
  console.log(
    `${db}: primary named ${((promotedAt - lost) / 1000).toFixed(1)} s after the loss, writes acknowledged again ${((again - lost) / 1000).toFixed(1)} s after it (longest pause ${(pauseMs / 1000).toFixed(1)} s), ${rows.length} rows`,
  );
  expect(again - lost, `${db}: writes acknowledged by the new primary`).toBeLessThan(40_000);
}

/** Once the node is back: every SampleDB Ready, its old primary streaming again, no acknowledged row missing. */
async function expectRejoined(written: Record<Name, [number, number][]>): Promise<void> {
  await Promise.all(NAMES.map((db) => world.waitForPhase(ns, db, "Ready", 240_000)));
  for (const db of NAMES) {
    const { recovery, ids } = await rowsOnPrimary(db);
    expect(recovery, `${db}'s primary in recovery`).toBe("f");
    const acknowledged = written[db];
    const missing = acknowledged.filter(([, id]) => !ids.has(id));
    console.log(`${db}: ${missing.length} of ${acknowledged.length} acknowledged rows missing`);
    expect(missing).toEqual([]);
    // The old primary is back, as a standby the new one streams to.
    await world.waitFor(
      ns,
      db,
      "{.status.replication.streaming}",
      (s) => s.includes(`${db}-0`),
      `${db}-0 streaming again`,
    );
  }
  expect(await field("req2", "{.status.replication.writes}")).toBe("Synchronous");
}

describe("SampleDB level 5: the primary's node is lost", () => {
  it("keeps taking writes (preferred; required with 3), waits (required with 2), fences the old primary, loses nothing", async () => {
    await world.createOnNode(ns, DBS, LOST);
    await Promise.all(NAMES.map((db) => world.waitForPhase(ns, db, "Ready", 300_000)));
    for (const db of NAMES) {
      const placed = await nodesOf(db);
      console.log(`${db}: ${placed.join(" ")}`);
      expect(placed[0]).toBe(`${db}-0=${LOST}`);
      expect(placed.slice(1).every((line) => !line.endsWith(`=${LOST}`))).toBe(true);
    }
    // Each commit returns once a standby has it (status: Synchronous): the table's creation too.
    for (const db of NAMES)
      await world.waitFor(
        ns,
        db,
        "{.status.replication.writes}",
        (w) => w === "Synchronous",
        `${db} synchronous`,
      );
    await Promise.all(
      NAMES.map((db) =>
        world.sqlPod(ns, db, `table-${db}`, `psql -qc "create table t (id serial primary key)"`),
      ),
    );

    for (const db of NAMES) await world.startWriter(ns, db, `writer-${db}`, 75, { node: WRITER_NODE });
    await world.startHeldWriter(ns, "pref", "held", 600, { node: WRITER_NODE });
    await pollUntil(
      async () => {
        const logs = await Promise.all(
          [...NAMES.map((db) => `writer-${db}`), "held"].map((pod) =>
            world.ok(["-n", ns, "logs", pod]).catch(() => ""),
          ),
        );
        return logs.every((log) => log.split("\n").length > 10);
      },
      { timeoutMs: 60_000, intervalMs: 500, message: "every writer to write" },
    );

    const lost = Date.now();
    await world.plane.stopKubelet(LOST);
    await expectWritesWait();
    for (const db of ["pref", "req3"] as const)
      await world.waitFor(ns, db, "{.status.primary}", (p) => p !== `${db}-0`, `${db} failed over`, 90_000);

    const finished = async (pod: string) =>
      (await get(["pod", pod, "-o", "jsonpath={.status.phase}"])) === "Succeeded";
    await pollUntil(
      async () => (await Promise.all(NAMES.map((db) => finished(`writer-${db}`)))).every(Boolean),
      {
        timeoutMs: 120_000,
        intervalMs: 1_000,
        message: "the writers to finish",
      },
    );
    const written = Object.fromEntries(
      await Promise.all(
        NAMES.map(async (db) => [db, (await world.writerRows(ns, `writer-${db}`)).rows] as const),
      ),
    ) as Record<Name, [number, number][]>;
    for (const db of ["pref", "req3"] as const) await expectWritesAgain(db, written[db], lost);
    const promotedAt = Date.parse(await field("pref", "{.status.promotedAt}"));
    const held = await world.writerRows(ns, "held");
    console.log(`held connection: ${held.rows.length} rows, then:\n${held.other.join("\n")}`);
    // Its last acknowledged commit came before the promotion; then its session was ended.
    expect(held.rows.length).toBeGreaterThan(0);
    expect(Math.max(...held.rows.map(([at]) => at))).toBeLessThan(promotedAt);
    expect(held.other.join("\n")).toMatch(/terminat|connection|read-only/i);

    await world.plane.startKubelet(LOST);
    await expectRejoined({ ...written, pref: [...written.pref, ...held.rows] });
  }, 900_000);
});
