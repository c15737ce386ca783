import { type ManagerOptions, optionsFromCommandLine } from "kubeloop";
import { OPERATOR_NAME } from "./app.ts";

/**
 * The settings both releases take: the Manager's, by flag or environment (a flag wins over its
 * variable, which wins over the default; see `optionsFromCommandLine`):
 *   --metrics-port / METRICS_PORT   (default 8080; 0 picks a free port)
 *   --probe-port / PROBE_PORT       (default 8081)
 *   --leader-elect / LEADER_ELECT=true, --leader-election-namespace / LEADER_ELECTION_NAMESPACE
 *   WEBHOOK_CERT_DIR, WEBHOOK_PORT  the webhook server's certificate and port (release 2);
 *   ENABLE_WEBHOOKS=false           none
 * Both releases elect through the same Lease (the operator's name), so one of them reconciles at a time.
 */
export function managerOptions(): ManagerOptions {
  return optionsFromCommandLine({ name: OPERATOR_NAME });
}
