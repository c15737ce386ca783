// Tutorial step 1: the API. One definition gives the CRD (`kubeloop generate`) and the types.
import { Conditions, defineResource, ObservedGeneration } from "kubeloop/resources";
import Type from "typebox";

export const CronJob = defineResource({
  group: "batch.tutorial.example.com",
  version: "v1",
  kind: "CronJob",
  description: "Runs a Job on a cron schedule.",
  spec: Type.Object({
    schedule: Type.String({
      minLength: 1,
      description: 'A 5-field cron schedule in UTC, e.g. "*/5 * * * *".',
    }),
    image: Type.String({ minLength: 1, description: "The image each Job runs." }),
    command: Type.Optional(Type.Array(Type.String(), { description: "Its command." })),
    suspend: Type.Optional(Type.Boolean({ default: false, description: "Start no new Jobs while true." })),
    historyLimit: Type.Optional(
      Type.Integer({ minimum: 0, default: 3, description: "How many finished Jobs to keep." }),
    ),
  }),
  status: Type.Object({
    observedGeneration: Type.Optional(ObservedGeneration()),
    lastScheduleTime: Type.Optional(Type.String({ description: "The slot of the last Job started." })),
    active: Type.Optional(Type.Array(Type.String(), { description: "The Jobs still running." })),
    conditions: Type.Optional(Conditions()),
  }),
  printerColumns: [
    { name: "Schedule", type: "string", jsonPath: ".spec.schedule" },
    { name: "Last", type: "date", jsonPath: ".status.lastScheduleTime" },
  ],
});
