import { describe, expect, it } from "vitest";
import { pipelineFor } from "./autopilot-pipeline.ts";

// Seed 003's error-rate rule end to end: the operator deployed with `"autoscale":
// "reconcile-errors"` (errors a minute per pod over 2 minutes above 5, held for 2 minutes: the
// generated HPA and adapter rule, unchanged). Its reconciles fail on purpose: the Nginx live in a
// namespace whose ResourceQuota allows no Deployment, so every apply is refused and retried with
// backoff. The HPA must scale the operator up; once the quota is lifted the errors stop and it
// scales back down (one pod per 15 s, no window, as in autopilot.test.ts).
//
// Minutes long (the rule itself waits 2 minutes): `npm run chaos -- --real-pods --autopilot` runs
// it after autopilot.test.ts; npm test's config leaves it out.

const OBJECTS = 30;

describe("the nginx operator autoscaled on its reconcile errors (seed 003's rule)", () => {
  const run = pipelineFor({
    image: "kubeloop.local/nginx-operator:autopilot-errors",
    nodes: 1,
    max: 3,
    autoscale: "reconcile-errors",
    downPeriodSeconds: 15,
  });

  it("scales up while reconciles fail and down once they succeed", async () => {
    const { c } = run;
    expect(await run.scaledTo()).toBe(1);
    const quota = `apiVersion: v1
kind: Namespace
metadata: { name: failing }
---
apiVersion: v1
kind: ResourceQuota
metadata: { name: no-deployments, namespace: failing }
spec: { hard: { count/deployments.apps: "0" } }
`;
    expect((await c.k(["apply", "-f", "-"], quota)).code).toBe(0);
    const items = Array.from({ length: OBJECTS }, (_, i) => ({
      apiVersion: "proxy.example.com/v1",
      kind: "Nginx",
      metadata: { name: `web-${i}`, namespace: "failing" },
      spec: { replicas: 0, image: "docker.io/library/nginx:1.0" },
    }));
    const created = await c.k(
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items }),
    );
    expect(created.code, created.stderr).toBe(0);
    const began = Date.now();
    const reading = () =>
      c.jsonpath(
        ["-n", "nginx-operator-system", "get", "hpa", "nginx-operator"],
        "{.status.currentMetrics[0].pods.current.averageValue}",
      );
    // The rule's 2-minute hold, the HPA's 15 s sync and a pod start.
    await c.wait(async () => (await run.replicas()) >= 2, 330_000, "the HPA to scale the operator up");
    const upAfterMs = Date.now() - began;
    const errorsPerMinute = await reading();
    const peak = await run.scaledTo();

    expect((await c.k(["-n", "failing", "delete", "resourcequota", "no-deployments"])).code).toBe(0);
    // The next retry (backoff doubles, so up to minutes away) would succeed; a spec change wakes each one now.
    const changed = items.map((item) => ({
      ...item,
      spec: { ...item.spec, image: "docker.io/library/nginx:1.1" },
    }));
    const applied = await c.k(
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: changed }),
    );
    expect(applied.code, applied.stderr).toBe(0);
    const liftedAt = Date.now();
    await c.wait(
      async () => {
        const deployments = await c.jsonpath(
          ["-n", "failing", "get", "deployments"],
          "{.items[*].metadata.name}",
        );
        return deployments.split(" ").filter(Boolean).length === OBJECTS;
      },
      120_000,
      "every Nginx's Deployment once the quota is lifted",
    );
    // The errors leave the rule's 2-minute window, then one pod per 15 s.
    await c.wait(
      async () => (await run.scaledTo()) === 1 && (await run.replicas()) === 1,
      330_000,
      "the HPA to scale the operator back to 1",
    );
    const downAfterMs = Date.now() - liftedAt;
    console.log(
      `autopilot (errors): ${OBJECTS} failing Nginx; ≥2 replicas ${(upAfterMs / 1000).toFixed(0)} s after the failures began (HPA reading ${errorsPerMinute} errors/min per pod, peak ${peak}); back to 1 ${(downAfterMs / 1000).toFixed(0)} s after the quota was lifted`,
    );
  }, 900_000);
});
