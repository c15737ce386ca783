import { pollUntil } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { World } from "./world.ts";

// Level 2 on real pods: a setting PostgreSQL reloads (work_mem) reaches every instance by ALTER
// SYSTEM and a reload, no pod restarted; one it reads only at start (max_connections, raised: a standby needs at least the primary's) rolls the
// StatefulSet, the replica before the primary, and the data stays.

const world = new World();
const ns = "tuning";

beforeAll(async () => {
  await world.start(1);
  await world.startOperator();
  await world.ok(["create", "namespace", ns]);
});
afterAll(() => world.stop());

const apply = (parameters: string) =>
  world.ok(
    ["-n", ns, "apply", "-f", "-"],
    `apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: conf }
spec: { instances: 2, storage: 256Mi, image: ${world.postgres}, parameters: ${parameters} }
`,
  );
/** name=uid@creationTimestamp of the instance pods, sorted by name. */
const pods = async () =>
  (
    await world.ok([
      "-n",
      ns,
      "get",
      "pods",
      "-l",
      "seed.example.com/component=instance",
      "-o",
      'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}@{.metadata.creationTimestamp}{"\\n"}{end}',
    ])
  )
    .trim()
    .split("\n")
    .sort();
/** A script that waits until `show <name>` is `value` on the host of `hostKey` (ConfigMap); 90 s, for a loaded machine. */
const waitShow = (name: string, value: string) =>
  `for i in $(seq 90); do [ "$(psql -Atc 'show ${name}' 2>/dev/null)" = "${value}" ] && { echo ok; exit 0; }; sleep 1; done; psql -Atc 'show ${name}'; exit 1`;

describe("SampleDB level 2: configuration changes", () => {
  it("reloads a reloadable setting on every instance without a restart", async () => {
    await apply("{}");
    await world.waitForPhase(ns, "conf", "Ready", 240_000);
    await world.sqlPod(
      ns,
      "conf",
      "seed",
      'psql -v ON_ERROR_STOP=1 -c "create table t (n int); insert into t values (1), (2)"',
    );
    const before = await pods();
    expect(before).toHaveLength(2);

    await apply("{ work_mem: 7MB }");
    expect(await world.sqlPod(ns, "conf", "primary-1", waitShow("work_mem", "7MB"))).toContain("ok");
    expect(
      await world.sqlPod(ns, "conf", "replica-1", waitShow("work_mem", "7MB"), "readOnlyHost"),
    ).toContain("ok");
    expect(await pods()).toEqual(before);
  }, 360_000);

  it("rolls the instances, replica first, for a setting read at start; the data stays", async () => {
    const before = await pods();
    const started = Date.now();
    await apply("{ work_mem: 7MB, max_connections: '150' }");
    await pollUntil(
      async () => {
        const now = await pods();
        return now.length === 2 && now.every((pod) => !before.includes(pod));
      },
      { timeoutMs: 180_000, intervalMs: 1_000, message: "both instance pods replaced" },
    );
    await world.waitForPhase(ns, "conf", "Ready", 120_000);
    console.log(`rolling restart of 2 instances: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const [primary, replica] = (await pods()).map((pod) => Date.parse(pod.split("@")[1] ?? ""));
    expect(replica).toBeLessThanOrEqual(primary ?? 0);
    expect(await world.sqlPod(ns, "conf", "primary-2", waitShow("max_connections", "150"))).toContain("ok");
    expect(
      await world.sqlPod(ns, "conf", "replica-2", waitShow("max_connections", "150"), "readOnlyHost"),
    ).toContain("ok");
    // The reloadable one survived the restart (postgresql.auto.conf is in the data volume).
    expect(await world.sqlPod(ns, "conf", "primary-3", waitShow("work_mem", "7MB"))).toContain("ok");
    expect((await world.sqlPod(ns, "conf", "count", 'psql -Atc "select count(*) from t"')).trim()).toBe("2");
    // Its waits (pods replaced, Ready, each setting shown) add up past vitest's default timeout.
  }, 600_000);
});
