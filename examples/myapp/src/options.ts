import { parseArgs } from "node:util";
import type { ManagerOptions } from "kubeloop";
import { OPERATOR_NAME } from "./app.ts";

/**
 * The settings both releases take, by flag or environment:
 *   --metrics-port / METRICS_PORT   (default 8080; 0 picks a free port)
 *   --probe-port / PROBE_PORT       (default 8081)
 *   --leader-elect / LEADER_ELECT=true, --leader-election-namespace / LEADER_ELECTION_NAMESPACE
 *   WEBHOOK_CERT_DIR, WEBHOOK_PORT  the webhook server's certificate and port (release 2)
 * Both releases elect through the same Lease, so one of them reconciles at a time.
 */
export function managerOptions(): ManagerOptions {
  const { values } = parseArgs({
    options: {
      "metrics-port": { type: "string", default: process.env.METRICS_PORT ?? "8080" },
      "probe-port": { type: "string", default: process.env.PROBE_PORT ?? "8081" },
      "leader-elect": { type: "boolean", default: process.env.LEADER_ELECT === "true" },
      "leader-election-namespace": { type: "string", default: process.env.LEADER_ELECTION_NAMESPACE },
      kubeconfig: { type: "string", default: process.env.KUBECONFIG },
    },
  });
  return {
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig.split(":")[0] } : {}),
    metrics: { port: Number(values["metrics-port"]) },
    probes: { port: Number(values["probe-port"]) },
    leaderElection: values["leader-elect"]
      ? {
          id: OPERATOR_NAME,
          ...(values["leader-election-namespace"] ? { namespace: values["leader-election-namespace"] } : {}),
        }
      : false,
  };
}
