import { pollUntil } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { World } from "./world.ts";

// Level 1 on real pods: a SampleDB becomes PostgreSQL in a StatefulSet on PersistentVolumeClaims
// the default StorageClass binds, configured by a Job; an application pod reaches it through the
// read-write Service with the credentials Secret and the connection ConfigMap; with 3 instances
// the replicas stream from the primary and serve reads through the read-only Service; scaled to 1
// and back, the read-only Service and the removed instances' volumes go, then come back.

const world = new World();
const ns = "shop";

beforeAll(async () => {
  await world.start();
  await world.startOperator();
  await world.ok(["create", "namespace", ns]);
});
afterAll(() => world.stop());

const apply = (name: string, instances: number) =>
  world.ok(
    ["-n", ns, "apply", "-f", "-"],
    `apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: ${name} }
spec: { instances: ${instances}, storage: 256Mi, database: shop, extensions: [pgcrypto], image: ${world.postgres} }
`,
  );

describe("SampleDB level 1: install", () => {
  it("creates a database an application pod uses through the Service, with the Secret", async () => {
    await apply("orders", 1);
    const seconds = await world.waitForPhase(ns, "orders", "Ready");
    console.log(`create → Ready, 1 instance: ${seconds.toFixed(1)} s`);

    const wide = await world.ok(["-n", ns, "get", "sampledb", "orders", "-o", "wide"]);
    expect(wide).toMatch(/NAME\s+PHASE\s+PRIMARY\s+READY\s+VERSION\s+LAST BACKUP\s+AGE/);
    expect(wide).toMatch(/orders\s+Ready\s+orders-0\s+1\/1\s+15\s/);
    // The volume is a claim the default StorageClass bound, owned by the StatefulSet's template.
    const pvc = await world.ok([
      "-n",
      ns,
      "get",
      "pvc",
      "data-orders-0",
      "-o",
      "jsonpath={.status.phase} {.spec.storageClassName}",
    ]);
    expect(pvc).toBe("Bound standard");
    const job = await world.ok(["-n", ns, "get", "job", "orders-init", "-o", "jsonpath={.status.succeeded}"]);
    expect(job).toBe("1");

    // The application's role owns its database, with the extension the Job created.
    const out = await world.sqlPod(
      ns,
      "orders",
      "app",
      `psql -v ON_ERROR_STOP=1 -Atq <<'SQL'
create table items (id uuid primary key default gen_random_uuid(), n int);
insert into items (n) select generate_series(1, 1000);
select count(*), current_user, current_database() from items;
SQL`,
    );
    expect(out.trim()).toBe("1000|shop|shop");
    // Without the password the server refuses (scram-sha-256 for every network connection).
    await expect(
      world.sqlPod(ns, "orders", "intruder", 'PGPASSWORD=wrong psql -Atc "select 1"'),
    ).rejects.toThrow(/password authentication failed/);
  });

  it("runs 3 instances: the replicas stream from the primary and serve reads on the read-only Service", async () => {
    await apply("catalog", 3);
    const seconds = await world.waitForPhase(ns, "catalog", "Ready", 240_000);
    console.log(`create → Ready, 3 instances: ${seconds.toFixed(1)} s`);
    expect(await world.ok(["-n", ns, "get", "sampledb", "catalog"])).toMatch(
      /catalog\s+Ready\s+catalog-0\s+3\/3/,
    );
    const roles = await world.ok([
      "-n",
      ns,
      "get",
      "pods",
      "-l",
      "app.kubernetes.io/instance=catalog,seed.example.com/component=instance",
      "-o",
      "jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.seed\\.example\\.com/role} {end}",
    ]);
    expect(roles.trim().split(" ").sort()).toEqual([
      "catalog-0=primary",
      "catalog-1=replica",
      "catalog-2=replica",
    ]);

    await world.sqlPod(
      ns,
      "catalog",
      "writer",
      'psql -v ON_ERROR_STOP=1 -c "create table t (n int); insert into t values (42)"',
    );
    // A replica answers (read-only, in recovery) with the row written on the primary.
    const read = await world.sqlPod(
      ns,
      "catalog",
      "reader",
      `for i in $(seq 30); do
  out=$(psql -Atc "select pg_is_in_recovery(), n from t" 2>/dev/null) && [ -n "$out" ] && { echo "$out"; exit 0; }
  sleep 1
done; exit 1`,
      "readOnlyHost",
    );
    expect(read.trim()).toBe("t|42");
  });

  it("scales 3 → 1 and back: the read-only Service and the removed instances' volumes go, then return", async () => {
    const claims = async () =>
      (await world.ok(["-n", ns, "get", "pvc", "-l", "app.kubernetes.io/instance=catalog", "-o", "name"]))
        .split("\n")
        .filter((claim) => claim.includes("data-"))
        .sort();
    const services = () =>
      world.ok(["-n", ns, "get", "svc", "-l", "app.kubernetes.io/instance=catalog", "-o", "name"]);
    await apply("catalog", 1);
    // deletionPolicy Snapshot: a removed standby's volume goes (its data is a copy of the primary's).
    await pollUntil(async () => (await claims()).length === 1, {
      timeoutMs: 120_000,
      intervalMs: 1_000,
      message: "the volumes of instances 1 and 2 deleted",
    });
    expect(await claims()).toEqual(["persistentvolumeclaim/data-catalog-0"]);
    expect(await services()).not.toContain("catalog-ro");
    await world.waitFor(ns, "catalog", "{.status.ready}", (ready) => ready === "1/1", "1/1 ready");

    await apply("catalog", 3);
    await world.waitFor(ns, "catalog", "{.status.ready}", (ready) => ready === "3/3", "3/3 ready", 240_000);
    expect(await services()).toContain("catalog-ro");
    // The new standbys copied the primary afresh: the row is there, read in recovery.
    const read = await world.sqlPod(
      ns,
      "catalog",
      "reader-again",
      `for i in $(seq 30); do
  out=$(psql -Atc "select pg_is_in_recovery(), n from t" 2>/dev/null) && [ -n "$out" ] && { echo "$out"; exit 0; }
  sleep 1
done; exit 1`,
      "readOnlyHost",
    );
    expect(read.trim()).toBe("t|42");
  });
});
