import type { batch } from "../k8s/index.js";

type Job = batch.Job;

import { describe, expect, it } from "vitest";
import { finishedJobsToPrune, jobStatus } from "./jobs.js";

const job = (name: string, status: Job["status"], created = "2026-01-01T00:00:00Z"): Job => ({
  metadata: { name, creationTimestamp: created },
  status,
});
const condition = (type: string, reason = "", message = "") => ({
  type,
  status: "True",
  reason,
  message,
});

describe("jobStatus", () => {
  it("is Absent without a Job, Running while its pods run or wait", () => {
    expect(jobStatus(undefined).state).toBe("Absent");
    expect(jobStatus(job("b", {}))).toMatchObject({ state: "Running", reason: "PodsPending" });
    expect(jobStatus(job("b", { active: 1, failed: 2 }))).toMatchObject({
      state: "Running",
      reason: "PodsActive",
      message: "Job b: 1 pod(s) active, 2 failed attempt(s)",
    });
  });

  it("is Running, not yet Complete or Failed, on the interim SuccessCriteriaMet and FailureTarget", () => {
    expect(jobStatus(job("b", { conditions: [condition("SuccessCriteriaMet")] })).state).toBe("Running");
    expect(jobStatus(job("b", { conditions: [condition("FailureTarget")] })).state).toBe("Running");
  });

  it("is Complete with its completion time, or Failed with the controller's reason", () => {
    expect(
      jobStatus(job("b", { conditions: [condition("Complete")], completionTime: "2026-01-01T00:01:00Z" })),
    ).toMatchObject({ state: "Complete", completionTime: "2026-01-01T00:01:00Z" });
    expect(
      jobStatus(
        job("b", {
          conditions: [
            condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
          ],
        }),
      ),
    ).toMatchObject({
      state: "Failed",
      reason: "BackoffLimitExceeded",
      message: "Job b failed: Job has reached the specified backoff limit",
    });
    // A condition that is False says nothing.
    expect(jobStatus(job("b", { conditions: [{ type: "Complete", status: "False" }] })).state).toBe(
      "Running",
    );
  });
});

describe("finishedJobsToPrune", () => {
  it("keeps the newest finished Jobs and never returns a running one", () => {
    const done = (name: string, at: string) =>
      job(name, { conditions: [condition("Complete")], completionTime: at });
    const jobs = [
      done("b1", "2026-01-01T01:00:00Z"),
      job("b4", { active: 1 }, "2026-01-01T00:00:00Z"),
      done("b3", "2026-01-01T03:00:00Z"),
      job("b2", { conditions: [condition("Failed")] }, "2026-01-01T02:00:00Z"),
    ];
    expect(finishedJobsToPrune(jobs, 1).map((j) => j.metadata?.name)).toEqual(["b2", "b1"]);
    expect(finishedJobsToPrune(jobs, 5)).toEqual([]);
    expect(finishedJobsToPrune(jobs, 0).map((j) => j.metadata?.name)).toEqual(["b3", "b2", "b1"]);
  });
});
