// Tutorial step 8: the test, envtest-style. startTestEnvironment starts a real kube-apiserver (no
// controller-manager: nothing runs the Jobs, so the test writes their status), installs the CRD from
// the resource definition, and runs the controller in a Manager in this process, on a clock the test
// jumps to the next slot.
import { type Client, isTrue } from "kubeloop";
import { Job } from "kubeloop/k8s";
import {
  JumpClock,
  PollTimeoutError,
  pollUntil,
  startTestEnvironment,
  type TestEnvironment,
} from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CronJobObject, cronJobControllerWith, SCHEDULED_AT } from "../src/cronjob.ts";
import { CronJob } from "../src/resources.ts";

const clock = new JumpClock();
let env: TestEnvironment;
let client: Client;

beforeAll(async () => {
  env = await startTestEnvironment({ crds: [CronJob], controllers: [cronJobControllerWith(clock)] });
  client = env.client;
});
afterAll(async () => {
  await env?.stop();
});

async function create(namespace: string, name: string, spec: Partial<CronJobObject["spec"]> = {}) {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  await client.create({
    apiVersion: CronJob.apiVersion,
    kind: "CronJob",
    metadata: { name, namespace },
    spec: { schedule: "*/5 * * * *", image: "busybox:1.37", command: ["date"], ...spec },
  } as CronJobObject);
}

const jobs = async (namespace: string) => (await client.list(Job, { namespace })).items;

/**
 * Jumps the operator's clock to just past the next 5-minute slot, once the CronJob's status shows
 * no Job running, until `started` holds. A reconcile can still be under way then (its status
 * written, its wait not yet scheduled): it computes that wait from before the jump and sleeps
 * through the slot, so when nothing starts within 5 s the clock jumps to the slot after.
 */
async function jumpUntil(namespace: string, name: string, started: () => Promise<boolean>) {
  await expect
    .poll(
      async () => {
        const status = (await client.get({ type: CronJob, namespace, name })).status;
        return isTrue(status?.conditions, "Ready") && status?.active?.length === 0;
      },
      { timeout: 20_000 },
    )
    .toBe(true);
  for (let jump = 1; ; jump++) {
    const now = clock.now();
    clock.jump(5 * 60_000 - (now % (5 * 60_000)) + 1_000);
    try {
      await pollUntil(started, { timeoutMs: 5_000, message: `a Job of ${namespace}/${name} to start` });
      return;
    } catch (error) {
      if (!(error instanceof PollTimeoutError) || jump === 4) throw error;
    }
  }
}

/** What the Job controller would write once a Job's pod succeeded (no controller-manager here). */
async function finish(namespace: string) {
  for (const job of await jobs(namespace)) {
    if (job.status?.conditions) continue;
    const now = new Date().toISOString();
    const conditions = [
      { type: "SuccessCriteriaMet", status: "True", lastTransitionTime: now },
      { type: "Complete", status: "True", lastTransitionTime: now },
    ];
    await client.patch(
      Job,
      job.metadata?.name ?? "",
      { status: { startTime: now, completionTime: now, conditions } },
      { namespace, subresource: "status" },
    );
  }
}

describe("the tutorial's CronJob operator", () => {
  it("starts a Job at each slot, owned by the CronJob, and records it in the status", async () => {
    await create("tick", "tick");
    await expect
      .poll(async () =>
        isTrue(
          (await client.get({ type: CronJob, namespace: "tick", name: "tick" })).status?.conditions,
          "Ready",
        ),
      )
      .toBe(true);
    expect(await jobs("tick")).toEqual([]); // no slot has passed since it was created

    await jumpUntil("tick", "tick", async () => (await jobs("tick")).length > 0);
    expect(await jobs("tick")).toHaveLength(1);
    const [job] = await jobs("tick");
    expect(job?.spec?.template.spec?.containers[0]).toMatchObject({
      image: "busybox:1.37",
      command: ["date"],
    });
    expect(job?.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "CronJob",
      name: "tick",
      controller: true,
    });
    await expect
      .poll(
        async () =>
          (await client.get({ type: CronJob, namespace: "tick", name: "tick" })).status?.lastScheduleTime,
      )
      .toBe(job?.metadata?.annotations?.[SCHEDULED_AT]);
  });

  it("keeps historyLimit finished Jobs and deletes the older ones", async () => {
    // (The clock ran ahead of the API server's in the test above: a slot may fall due at creation.)
    await create("tidy", "tidy", { historyLimit: 1 });
    for (let slot = 1; slot <= 2; slot++) {
      await finish("tidy");
      await jumpUntil(
        "tidy",
        "tidy",
        async () =>
          (await client.get({ type: CronJob, namespace: "tidy", name: "tidy" })).status?.active?.length === 1,
      );
    }
    await finish("tidy");
    // Two or more finished Jobs, a limit of one: only the newest stays.
    await expect.poll(async () => (await jobs("tidy")).length, { timeout: 20_000 }).toBe(1);
    const [kept] = await jobs("tidy");
    const status = (await client.get({ type: CronJob, namespace: "tidy", name: "tidy" })).status;
    expect(kept?.metadata?.annotations?.[SCHEDULED_AT]).toBe(status?.lastScheduleTime);
  });

  it("reports a schedule that is not cron in its Ready condition", async () => {
    await create("broken", "broken", { schedule: "every day" });
    await expect
      .poll(
        async () =>
          (await client.get({ type: CronJob, namespace: "broken", name: "broken" })).status?.conditions?.find(
            (c) => c.type === "Ready",
          )?.reason,
      )
      .toBe("InvalidSchedule");
  });
});
