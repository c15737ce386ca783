// The real-pod runs' double-reconcile check: the operators (host processes) export their reconcile
// spans over OTLP to a journal on loopback, the one the autopilot tests read; two reconciles of one
// key by one controller that overlap in time, in one process or across replicas, fail the run.
import { setTimeout as sleep } from "node:timers/promises";
import { SpanJournal } from "../../examples/nginx/test/autopilot.ts";

/** Starts the journal; `env(name)` is what an operator process needs to report to it as `name`. */
export async function startReconcileJournal() {
  const journal = await new SpanJournal("127.0.0.1").start();
  return {
    env: (name) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: journal.endpoint,
      // Batches every 0.5 s, so the last reconciles are in before the count.
      OTEL_BSP_SCHEDULE_DELAY: "500",
      OTEL_RESOURCE_ATTRIBUTES: `k8s.pod.name=${name}`,
    }),
    /** Stops the journal (again, after `finish`, does no harm): for a run that failed on the way. */
    stop: () => journal.stop(),
    /** Waits for the last batch (the operators still running), then counts and stops the journal. */
    async finish() {
      await sleep(2_000);
      const overlaps = journal.overlaps();
      await journal.stop();
      return {
        reconciles: journal.reconciles.length,
        doubleReconciles: overlaps.length,
        // The first few, for the report: the object and both reconciles' processes.
        overlapping: overlaps
          .slice(0, 10)
          .map(([a, b]) => `${a.controller} ${a.key} by ${a.pod} and ${b.pod}`),
      };
    },
  };
}
