import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { World } from "./world.ts";

// Level 3 on real pods: scheduled backups are Jobs whose pods connect with the credentials Secret
// and write pg_dump files into the backup volume, keeping `retention` of them; deleting a SampleDB
// takes a final backup first, then removes its StatefulSet and data volumes (deletionPolicy
// Snapshot), and a new SampleDB restored from that backup has the same rows; Delete removes the
// backups too, Retain keeps the volumes.

const world = new World();
const ns = "books";

beforeAll(async () => {
  await world.start(1);
  await world.startOperator();
  await world.ok(["create", "namespace", ns]);
});
afterAll(() => world.stop());

const apply = (name: string, extra: string) =>
  world.ok(
    ["-n", ns, "apply", "-f", "-"],
    `apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: ${name} }
spec: { storage: 256Mi, database: ledger, image: ${world.postgres}${extra} }
`,
  );
const claims = async () =>
  (await world.ok(["-n", ns, "get", "pvc", "-o", "jsonpath={.items[*].metadata.name}"]))
    .split(" ")
    .filter(Boolean);
/** Count and sum of the rows, as one string: equal only if the rows are. */
const fingerprint = "select count(*) || ':' || sum(amount) from entries";

describe("SampleDB level 3: backups, deletion with a snapshot, restore", () => {
  let rows = "";

  it("backs up on schedule into the backup volume and keeps `retention` backups", async () => {
    await apply("ledger", ", backup: { schedule: 15s, retention: 2 }");
    await world.waitForPhase(ns, "ledger", "Ready");
    rows = (
      await world.sqlPod(
        ns,
        "ledger",
        "writer",
        `psql -v ON_ERROR_STOP=1 -Atq <<'SQL'
create table entries (id serial primary key, amount int, memo text);
insert into entries (amount, memo) select n, md5(n::text) from generate_series(1, 20000) n;
${fingerprint};
SQL`,
      )
    ).trim();
    expect(rows).toBe("20000:200010000");
    // Three backups: the third makes retention remove the first.
    const seen = new Set<string>();
    await world.waitFor(
      ns,
      "ledger",
      "{.status.lastBackupFile}",
      (file) => {
        if (file) seen.add(file);
        return seen.size >= 3;
      },
      "three scheduled backups",
      120_000,
    );
    const files = await world.backupFiles(ns, "ledger", "list-1");
    expect(files).toHaveLength(2);
    expect(files.at(-1)).toBe([...seen].sort().at(-1));
    // LAST BACKUP is a date column: kubectl shows how long ago.
    expect(await world.ok(["-n", ns, "get", "sampledb", "ledger", "-o", "wide"])).toMatch(
      /ledger\s+Ready\s+ledger-0\s+1\/1\s+15\s+\d+s\s/,
    );
    const job = await world.ok([
      "-n",
      ns,
      "get",
      "jobs",
      "-o",
      'jsonpath={range .items[?(@.status.succeeded==1)]}{.metadata.name} {.status.startTime} {.status.completionTime}{"\\n"}{end}',
    ]);
    console.log(`completed Jobs (name, start, completion):\n${job}`);
  });

  it("deletes with a final backup first (Snapshot), and a new SampleDB restored from it has the same rows", async () => {
    // A row after the last scheduled backup: only the final backup has it.
    rows = (
      await world.sqlPod(
        ns,
        "ledger",
        "late-writer",
        `psql -v ON_ERROR_STOP=1 -Atq -c "insert into entries (amount, memo) values (7, 'late')" -c "${fingerprint}"`,
      )
    ).trim();
    expect(rows).toBe("20001:200010007");
    const started = Date.now();
    await world.ok(["-n", ns, "delete", "sampledb", "ledger", "--wait=false"]);
    await world.ok(["-n", ns, "wait", "--for=delete", "sampledb/ledger", "--timeout=120s"]);
    console.log(
      `delete (final backup, StatefulSet and volume removed): ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    // The data volume went, the backup volume stayed with the final backup in it.
    expect(await claims()).toEqual(["ledger-backups"]);
    expect(await world.ok(["-n", ns, "get", "statefulsets", "-o", "name"])).toBe("");
    const events = await world.ok(["-n", ns, "get", "events", "-o", "jsonpath={.items[*].reason}"]);
    expect(events).toContain("FinalBackupStarted");

    const restoreStarted = Date.now();
    await apply("ledger-copy", ", restore: { from: ledger }, deletionPolicy: Delete");
    await world.waitForPhase(ns, "ledger-copy", "Ready");
    console.log(`create from backup → Ready: ${((Date.now() - restoreStarted) / 1000).toFixed(1)} s`);
    const restored = await world.sqlPod(ns, "ledger-copy", "reader", `psql -Atc "${fingerprint}"`);
    expect(restored.trim()).toBe(rows);
  });

  it("deletionPolicy Delete removes the backups too; Retain keeps the data volume", async () => {
    await world.ok(["-n", ns, "delete", "sampledb", "ledger-copy", "--timeout=120s"]);
    expect((await claims()).filter((claim) => claim.includes("ledger-copy"))).toEqual([]);

    await apply("kept", ", deletionPolicy: Retain");
    await world.waitForPhase(ns, "kept", "Ready");
    await world.ok(["-n", ns, "delete", "sampledb", "kept", "--timeout=120s"]);
    expect((await claims()).filter((claim) => claim.includes("kept")).sort()).toEqual([
      "data-kept-0",
      "kept-backups",
    ]);
    expect(await world.ok(["-n", ns, "get", "statefulsets", "-o", "name"])).toBe("");
  });
});
