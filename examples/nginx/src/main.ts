// The nginx operator's entry point: `npm start` (in this folder) runs it against the current
// KUBECONFIG. Settings, by flag or environment:
//   --metrics-port / METRICS_PORT   (default 8080; 0 picks a free port; the Deployment sets 8443)
//   METRICS_SECURE=true|false       HTTPS behind TokenReview + SubjectAccessReview (default: true in
//                                   a cluster; plain HTTP on 127.0.0.1 outside one); METRICS_CERT_DIR
//                                   a mounted tls.crt/tls.key instead of a self-signed certificate
//   OTEL_EXPORTER_OTLP_ENDPOINT     send traces there (and OpenTelemetry's other OTEL_* variables);
//                                   see docs/observability.md
//   --probe-port / PROBE_PORT       (default 8081)
//   --leader-elect / LEADER_ELECT=true, --leader-election-namespace / LEADER_ELECTION_NAMESPACE
//   ENABLE_WEBHOOKS=false           run without the webhook server (it needs a serving certificate:
//                                   WEBHOOK_CERT_DIR with tls.crt/tls.key, on WEBHOOK_PORT, default 9443)
//   ALLOWED_REGISTRIES              the registries images may come from (see webhooks.ts)
//   WORKERS=<n> | adaptive:<min>-<max>  reconcile workers, fixed or following the load (nginx.ts)
//   WATCH_NAMESPACE=a,b             watch (and need Roles in) these namespaces only; unset: all
//                                   (the Manager reads it; `kubeloop generate --namespaces a,b`
//                                   writes the Roles, RoleBindings and this variable)
import { parseArgs } from "node:util";
import { Manager } from "kubeloop";
import { nginxController, nginxServiceController, OPERATOR_NAME } from "./nginx.ts";
import { nginxWebhooks } from "./webhooks.ts";

const { values } = parseArgs({
  options: {
    "metrics-port": { type: "string", default: process.env.METRICS_PORT ?? "8080" },
    "probe-port": { type: "string", default: process.env.PROBE_PORT ?? "8081" },
    "leader-elect": { type: "boolean", default: process.env.LEADER_ELECT === "true" },
    "leader-election-namespace": { type: "string", default: process.env.LEADER_ELECTION_NAMESPACE },
    kubeconfig: { type: "string", default: process.env.KUBECONFIG },
  },
});

const manager = new Manager({
  ...(values.kubeconfig ? { kubeconfig: values.kubeconfig.split(":")[0] } : {}),
  metrics: { port: Number(values["metrics-port"]) },
  probes: { port: Number(values["probe-port"]) },
  leaderElection: values["leader-elect"]
    ? {
        id: OPERATOR_NAME,
        ...(values["leader-election-namespace"] ? { namespace: values["leader-election-namespace"] } : {}),
      }
    : false,
});
manager.add(nginxController).add(nginxServiceController);
if (process.env.ENABLE_WEBHOOKS !== "false") manager.addWebhooks(nginxWebhooks);
await manager.start();
