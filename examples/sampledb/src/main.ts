// The SampleDB operator's entry point: `npm start` (in this folder) runs it against the current
// KUBECONFIG; in a cluster, the generated Deployment runs it as a pod. Its settings are the
// Manager's, by flag or environment (see `optionsFromCommandLine`; METRICS_SECURE, WATCH_NAMESPACE,
// POD_NAMESPACE, LOG_LEVEL too):
//   --metrics-port / METRICS_PORT   (default 8080; 0 picks a free port; the Deployment sets 8443)
//   --probe-port / PROBE_PORT       (default 8081)
//   --workers / WORKERS=<n> or adaptive:<min>-<max>  reconcile workers
//   --leader-elect / LEADER_ELECT=true  one active replica at a time (the Deployment runs two),
//                                   its Lease (named after the operator) in POD_NAMESPACE
// The PostgreSQL image each SampleDB runs is its `spec.image`: the operator's own image holds no
// PostgreSQL program, since every SQL step (initialisation, backups, reloads) is a Job of that
// image; the failover and synchronous_standby_names go over the operator's own connection (sql.ts).
import { Manager, optionsFromCommandLine } from "kubeloop";
import { sampleDBController } from "./controller.ts";
import { sampleDBMetrics } from "./metrics.ts";
import { OPERATOR_NAME } from "./objects.ts";

const manager = new Manager(optionsFromCommandLine({ name: OPERATOR_NAME }));
// Per-SampleDB series (instances, replication lag, connections, size, backup age, failovers) on
// the manager's /metrics, beside the controller's own.
sampleDBMetrics.register(manager.metrics.registry);
manager.add(sampleDBController);
await manager.start();
