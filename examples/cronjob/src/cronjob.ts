// Tutorial step 2: the controller. Each slot of the schedule starts a Job the CronJob owns, so a
// Job's change wakes its CronJob. A plain reconcile, not dependents (docs/dependents.md): a
// dependent is re-applied from the spec on every pass and deleted once not wanted; a Job is made
// once for its slot, never changed after (its template is immutable), and goes by age.
import { controller, done, type ObjectOf, type ReconcileContext } from "kubeloop";
import { type CronSchedule, cronSchedule, InvalidSchedule, nextRun } from "kubeloop/controller";
import { Job } from "kubeloop/k8s";
import type { Clock } from "kubeloop/queue";
import { CronJob } from "./resources.ts";

export type CronJobObject = ObjectOf<typeof CronJob>;
type JobObject = ObjectOf<typeof Job>;

/** The label that ties a Job to its CronJob, and the annotation that records its slot. */
export const CRONJOB_LABEL = "tutorial.example.com/cronjob";
export const SCHEDULED_AT = "tutorial.example.com/scheduled-at";

/** Names a Job after its slot, so two reconciles of one slot start one Job, never two. */
export function jobName(cronJob: CronJobObject, slot: Date): string {
  return `${cronJob.metadata?.name}-${Math.floor(slot.getTime() / 60_000)}`;
}

function jobFor(cronJob: CronJobObject, slot: Date): JobObject {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: jobName(cronJob, slot),
      namespace: cronJob.metadata?.namespace ?? "",
      labels: { [CRONJOB_LABEL]: cronJob.metadata?.name ?? "" },
      annotations: { [SCHEDULED_AT]: slot.toISOString() },
    },
    spec: {
      template: {
        spec: {
          restartPolicy: "Never",
          containers: [
            {
              name: "job",
              image: cronJob.spec.image,
              ...(cronJob.spec.command ? { command: cronJob.spec.command } : {}),
            },
          ],
        },
      },
    },
  };
}

function finished(job: JobObject): boolean {
  return (job.status?.conditions ?? []).some(
    (c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True",
  );
}

/** ISO times sort as strings: oldest slot first. */
function bySlot(a: JobObject, b: JobObject): number {
  return (a.metadata?.annotations?.[SCHEDULED_AT] ?? "").localeCompare(
    b.metadata?.annotations?.[SCHEDULED_AT] ?? "",
  );
}

export async function reconcileCronJob(cronJob: CronJobObject, ctx: ReconcileContext<CronJobObject>) {
  if (ctx.gone) return done(); // its Jobs are owned: garbage collection deletes them

  // Step 3: its Jobs, from the cache (never a list call per reconcile).
  const jobs = ctx.cache.list(Job, { namespace: ctx.namespace ?? "", labels: { [CRONJOB_LABEL]: ctx.name } });
  const active = jobs.filter((job) => !finished(job)).map((job) => job.metadata?.name ?? "");

  // Step 4: keep the newest `historyLimit` finished Jobs, delete the older ones.
  const finishedJobs = jobs.filter(finished).sort(bySlot);
  const limit = cronJob.spec.historyLimit ?? 3;
  for (const job of finishedJobs.slice(0, Math.max(0, finishedJobs.length - limit))) {
    await ctx.client.delete(Job, job.metadata?.name ?? "", {
      namespace: ctx.namespace,
      propagationPolicy: "Background",
    });
  }

  // Step 5: the schedule. A bad one is the user's to fix: say so in the status, do not retry.
  let schedule: CronSchedule;
  try {
    schedule = cronSchedule(cronJob.spec.schedule);
  } catch (error) {
    if (!(error instanceof InvalidSchedule)) throw error;
    await ctx.status(
      { active },
      { ready: { status: false, reason: "InvalidSchedule", message: error.message } },
    );
    return done();
  }
  const now = ctx.now();
  const state = nextRun(schedule, {
    last: cronJob.status?.lastScheduleTime,
    since: cronJob.metadata?.creationTimestamp ?? now.toISOString(),
    now,
  });
  let lastScheduleTime = cronJob.status?.lastScheduleTime;
  if (state.due && !cronJob.spec.suspend) {
    const job = await ctx.apply(jobFor(cronJob, state.due));
    ctx.event("Normal", "JobStarted", `Job ${job.metadata?.name} for the ${state.due.toISOString()} slot`);
    active.push(job.metadata?.name ?? "");
    lastScheduleTime = state.due.toISOString();
  }
  await ctx.status(
    { active: active.sort(), ...(lastScheduleTime ? { lastScheduleTime } : {}) },
    { ready: true },
  );

  // Step 6: come back at the next slot; a Job's change wakes it in between.
  return state.wait;
}

/** The controller; `clock` is for tests, which move time instead of waiting for the next slot. */
export function cronJobControllerWith(clock?: Clock) {
  const builder = controller(CronJob).named("cronjob-operator").owns(Job);
  return (clock ? builder.clock(clock) : builder).reconcile(reconcileCronJob);
}

export const cronJobController = cronJobControllerWith();
