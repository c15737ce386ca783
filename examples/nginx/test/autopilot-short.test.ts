import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { churn, pipelineFor } from "./autopilot-pipeline.ts";

// The short form of autopilot.test.ts for `npm test`: the same pipeline (the sharded operator
// built and deployed by kubeloop with its generated HPA on `reconciles`, Prometheus, the adapter
// serving the generated rule), one node, at most 2 replicas, a small load. To fit in minutes the
// rule's rate window is 20 s instead of the generated 1 m (it follows the load up and down sooner),
// the HPA removes a pod every 5 s with no stabilization window (generated: 300 s, 1 pod/60 s), and
// the readiness probe runs every 2 s (generated: 10 s); the HPA controller's own 15 s sync stays.

const OBJECTS = 20;
const RATE = 8;
/** Reconciles a second per pod: a fraction of what one replica does, so the churn doubles it. */
const TARGET = 2;

describe("the nginx operator autoscaled on its own series, short form", () => {
  const run = pipelineFor({
    image: "kubeloop.local/nginx-operator:autopilot-short",
    nodes: 1,
    max: 2,
    autoscale: `reconciles=${TARGET}`,
    downPeriodSeconds: 5,
    rateWindow: "20s",
    readinessPeriodSeconds: 2,
  });

  it("scales 1 → 2 under churn and back to 1, losing no update and never reconciling an object twice at once", async () => {
    const { c, journal } = run;
    expect(await run.scaledTo()).toBe(1);
    const load = await churn(run, OBJECTS, RATE, 4);
    const began = Date.now();
    await c.wait(async () => (await run.scaledTo()) === 2, 120_000, "the HPA to ask for 2 replicas");
    const decidedAfterMs = Date.now() - began;
    await c.wait(async () => (await run.replicas()) === 2, 60_000, "the second replica to be Ready");
    const upAfterMs = Date.now() - began;
    // Churn on until the new replica has reconciled objects of its shards: the handover is what is checked.
    await c
      .wait(async () => journal.podsThatReconciled().size >= 2, 30_000, "a second pod to reconcile")
      .catch(() => {});
    await load.stop();
    const quietAt = Date.now();
    await c.wait(
      async () => (await run.scaledTo()) === 1 && (await run.replicas()) === 1,
      150_000,
      "the HPA to scale the operator back to 1",
    );
    const downAfterMs = Date.now() - quietAt;
    const lost = await load.lost(30_000);
    await sleep(2000); // the last spans' batch
    const overlaps = journal.overlaps();
    const pods = journal.podsThatReconciled();
    console.log(
      `autopilot (short): ${OBJECTS} Nginx, ${RATE} changes/s; HPA asked for 2 after ${(decidedAfterMs / 1000).toFixed(0)} s, 2 Ready ${(upAfterMs / 1000).toFixed(0)} s after the churn began, back to 1 ${(downAfterMs / 1000).toFixed(0)} s after it ended; ${journal.reconciles.length} reconciles by ${pods.size} pods, ${overlaps.length} overlapping, ${lost.length} lost updates`,
    );
    expect(lost, "Nginx whose last change never reached its Deployment").toEqual([]);
    expect(overlaps.map(([a, b]) => `${a.key} by ${a.pod} and ${b.pod}`)).toEqual([]);
    expect(pods.size, "pods that reconciled").toBe(2);
  }, 330_000);
});
