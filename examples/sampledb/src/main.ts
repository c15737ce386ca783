// The SampleDB operator's entry point: `npm start` (in this folder) runs it against the current
// KUBECONFIG; in a cluster, the generated Deployment runs it as a pod. Settings, by environment
// (the Manager reads the others itself: METRICS_SECURE, WATCH_NAMESPACE, POD_NAMESPACE, LOG_LEVEL):
//   METRICS_PORT   (default 8080; 0 picks a free port; the Deployment sets 8443)
//   PROBE_PORT     (default 8081)
//   WORKERS=<n> or adaptive:<min>-<max>  reconcile workers (controller.ts)
//   LEADER_ELECT=true  one active replica at a time (the Deployment runs two), its Lease in
//                  POD_NAMESPACE
// The PostgreSQL image each SampleDB runs is its `spec.image`: the operator's own image holds no
// PostgreSQL program, since every SQL step (initialisation, backups, reloads) is a Job of that
// image; the failover and synchronous_standby_names go over the operator's own connection (sql.ts).
import { Manager } from "kubeloop";
import { sampleDBController } from "./controller.ts";
import { sampleDBMetrics } from "./metrics.ts";
import { OPERATOR_NAME } from "./objects.ts";

const manager = new Manager({
  metrics: { port: Number(process.env.METRICS_PORT ?? "8080") },
  probes: { port: Number(process.env.PROBE_PORT ?? "8081") },
  leaderElection: process.env.LEADER_ELECT === "true" ? { id: OPERATOR_NAME } : false,
});
// Per-SampleDB series (instances, replication lag, connections, size, backup age, failovers) on
// the manager's /metrics, beside the controller's own.
sampleDBMetrics.register(manager.metrics.registry);
manager.add(sampleDBController);
await manager.start();
