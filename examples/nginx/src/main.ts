// The nginx operator's entry point: `npm start` (in this folder) runs it against the current
// KUBECONFIG. Its settings are the Manager's, by flag or environment (a flag wins over its
// variable, which wins over the default; see `optionsFromCommandLine` and `optionsFromEnv`):
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
//   --workers / WORKERS=<n> | adaptive:<min>-<max>  reconcile workers, fixed or following the load
//   WATCH_NAMESPACE=a,b             watch (and need Roles in) these namespaces only; unset: all
//                                   (`kubeloop generate --namespaces a,b` writes the Roles,
//                                   RoleBindings and this variable)
//   ALLOWED_REGISTRIES              the registries images may come from (see webhooks.ts)
import { Manager, optionsFromCommandLine } from "kubeloop";
import { nginxController, nginxServiceController, OPERATOR_NAME } from "./nginx.ts";
import { nginxWebhooks } from "./webhooks.ts";

const manager = new Manager(optionsFromCommandLine({ name: OPERATOR_NAME }));
manager.add(nginxController).add(nginxServiceController).addWebhooks(nginxWebhooks);
await manager.start();
