import type { Logger } from "pino";
import type { Client, KubeObject } from "../client/index.js";
import type { AdaptiveConcurrency } from "../controller/index.js";
import { checkNamespaces } from "../controller/internal.js";
import type { WebhookServerOptions } from "../webhook/index.js";
import type { MetricsAuthOptions } from "./metrics-auth.js";
import type { CaBundleTarget, SelfIssuedCertificate, SelfIssuedWebhookCertificate } from "./serving-certs.js";
import type { ShardingOptions } from "./sharding/index.js";

/** Keys may wait this long with no worker taking any before `/healthz` fails: 5 minutes. */
export const DEFAULT_STALL_TIMEOUT_MS = 5 * 60_000;

/** How a `Manager` runs; every field has a default (see {@link optionsFromEnv} for those the environment sets). */
export interface ManagerOptions {
  /** A ready client; by default one is made from the kubeconfig (or the pod's service account). */
  client?: Client;
  /** The kubeconfig file to load when no client is given. */
  kubeconfig?: string;
  /**
   * The namespaces the controllers watch and reconcile in (those without `.inNamespace(s)` of
   * their own): one informer per namespace and type, read as one cache, so Roles in these
   * namespaces are all the RBAC needed (multi-tenant clusters; OLM's OwnNamespace,
   * SingleNamespace and MultiNamespace install modes). Cluster-scoped types are still watched
   * cluster-wide. Default: `$WATCH_NAMESPACE` (comma-separated, operator-sdk's convention; unset
   * or empty means all namespaces), else all namespaces.
   */
  namespaces?: string[];
  /**
   * The operator's name, e.g. `nginx-operator`: the Lease's name when leader election is turned on
   * by the environment (`LEADER_ELECT=true`, what the generated Deployment sets) or the
   * `--leader-elect` flag, unless `LEADER_ELECTION_ID` names another.
   */
  name?: string;
  /**
   * Elect one active replica through a Lease; `false` runs the controllers at once. Default:
   * `$LEADER_ELECT` (`true`: a Lease named `$LEADER_ELECTION_ID` or {@link ManagerOptions.name}
   * in `$LEADER_ELECTION_NAMESPACE`), else false.
   */
  leaderElection?:
    | false
    | {
        /** The Lease's name, e.g. `nginx-operator`. */
        id: string;
        /** Default: `operatorNamespace`. */
        namespace?: string;
        /**
         * Hand the Lease back on shutdown so a standby takes over at once (controller-runtime's
         * `LeaderElectionReleaseOnCancel`). Default true: the manager stops its controllers first.
         */
        releaseOnCancel?: boolean;
        leaseDurationMs?: number;
        renewDeadlineMs?: number;
        retryPeriodMs?: number;
      };
  /**
   * Every replica active, each reconciling its share of the objects (opt-in; exclusive with
   * `leaderElection`): shard Leases, a sharder writing shard labels, label-selected informers and a
   * drain-then-assign handover. See {@link ShardingOptions} and docs/scale-out.md. Default:
   * `{ ring: $SHARDING_RING }` when that is set and `leaderElection` is not.
   */
  sharding?: ShardingOptions;
  /**
   * The reconcile workers of every controller added: a number, or adaptive bounds (see
   * `ControllerBuilder.adaptiveConcurrency`). Set, it wins over the controllers' own
   * `.concurrency(…)`: it is a deploy-time knob. Default: `$WORKERS` (`<n>` or
   * `adaptive:<min>-<max>`, see {@link parseWorkers}), else each controller's own.
   */
  workers?: number | AdaptiveConcurrency;
  /**
   * `/healthz` and `/readyz`. Default port `$PROBE_PORT`, else 8081 (kubebuilder's); `false` for none.
   * `/healthz` answers while the event loop runs (`ping`) and fails (`reconcilers`) when a
   * controller's keys have waited `stallTimeoutMs` while no worker took any: every worker is stuck
   * in a reconcile that never returns, and only a restart frees them. Default
   * {@link DEFAULT_STALL_TIMEOUT_MS}; 0 turns that check off (e.g. reconciles that legitimately
   * hold every worker longer).
   */
  probes?: false | { port?: number; host?: string; stallTimeoutMs?: number };
  /**
   * `/metrics`. `false` for none, and then nothing is recorded either (prom-client is not even
   * loaded) unless `manager.metrics` is read before `start()`.
   * Secure (HTTPS, readers authenticated by TokenReview and authorized by SubjectAccessReview, as
   * controller-runtime serves it) on port 8443 in a cluster; plain HTTP on 127.0.0.1:8080 outside
   * one (`kubeloop run`, `npm start`): see {@link MetricsServing}.
   */
  metrics?: false | MetricsServing;
  /**
   * The webhook server for `addWebhooks(…)`; `false` serves none (what `addWebhooks` is given is
   * then ignored, with a log line; `$ENABLE_WEBHOOKS=false`, kubebuilder's switch, sets it). Default: port `$WEBHOOK_PORT` or 9443, certificates
   * from `$WEBHOOK_CERT_DIR` or /tmp/k8s-webhook-server/serving-certs (controller-runtime's). It
   * runs on every replica, leader or not, and starts before the caches: reading a kind through
   * its conversion webhook needs it. With `selfIssued`, an empty certificate folder in a cluster
   * is not an error: the manager issues its own certificate (see {@link ManagerWebhookOptions}).
   */
  webhooks?: false | ManagerWebhookOptions;
  /**
   * Export traces when OpenTelemetry's environment names an endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
   * `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`…; see `startTracing`): the SDK and OTLP exporter
   * are loaded then, and only then. Default true; false leaves tracing to the application.
   */
  tracing?: boolean;
  /** A pino logger. Default: JSON on stdout at `logLevel`. */
  logger?: Logger;
  /** The default logger's level. Default: `$LOG_LEVEL`, else `info`. */
  logLevel?: string;
  /**
   * The namespace the operator runs in, where its Leases live. Default: `$POD_NAMESPACE` (the
   * Downward API's), the service account's namespace, or the kubeconfig's.
   */
  operatorNamespace?: string;
  /**
   * Whether the operator runs in a pod (secure metrics by default, bound to every interface).
   * Default: `$KUBERNETES_SERVICE_HOST` is set, as client-go detects it.
   */
  inCluster?: boolean;
  /** How long informers may take to sync before start fails with their errors. Default 2 minutes. */
  cacheSyncTimeoutMs?: number;
  /**
   * Applied to every object the manager's cache stores. Default `stripManagedFields` (kubeloop/cache):
   * `metadata.managedFields` dropped, as a controller rarely reads them (about a quarter of a small
   * object's cached size; controller-runtime's `TransformStripManagedFields`). `null` keeps
   * objects as the API server sent them, for a controller that reads managedFields.
   *
   * @example
   * ```ts
   * const manager = new Manager({ cacheTransform: null }); // keep managedFields in the cache
   * ```
   */
  cacheTransform?: ((object: KubeObject) => KubeObject) | null;
  /** How long reconciles in flight may finish on shutdown. Default 30 s. */
  gracefulShutdownMs?: number;
  /** Stop gracefully on SIGTERM and SIGINT. Default true. */
  handleSignals?: boolean;
  /**
   * Called when leadership is lost: reconciling has already stopped. Default: log and exit the
   * process with code 1, so the pod restarts as a standby (controller-runtime does the same).
   */
  onLeadershipLost?: (error: Error) => void;
}

/** The manager's webhook server: {@link WebhookServerOptions}, and a certificate of its own when none is mounted. */
export interface ManagerWebhookOptions extends WebhookServerOptions {
  /**
   * When the certificate folder is empty and the manager runs in a cluster (`inCluster`): issue a
   * CA and serving certificate for the webhook Service, share them between replicas through a
   * Secret in the operator's namespace (made if absent, else read), serve with them, and put the
   * CA in the caBundle of the configurations and CRDs named. A mounted certificate always wins,
   * and replaces this one as soon as the kubelet puts it in the folder. Default:
   * `$WEBHOOK_CERT_SECRET`, `$WEBHOOK_SERVICE` and `$WEBHOOK_CA_BUNDLES` (what the generated
   * Deployment sets).
   *
   * @example
   * ```ts
   * new Manager({
   *   webhooks: {
   *     selfIssued: {
   *       secret: "nginx-operator-webhook-self-issued",
   *       service: "nginx-operator-webhook-service",
   *       caBundles: [{ kind: "MutatingWebhookConfiguration", name: "nginx-operator-mutating" }],
   *     },
   *   },
   * });
   * ```
   */
  selfIssued?: SelfIssuedWebhookCertificate;
}

/** Where and how `/metrics` is served. */
export interface MetricsServing {
  /**
   * Default `$METRICS_PORT`, else {@link DEFAULT_SECURE_METRICS_PORT} (kubebuilder's) when secure, else
   * {@link DEFAULT_METRICS_PORT}; the probes' port to share it (plain HTTP only); 0 for a free port.
   */
  port?: number;
  /**
   * The address to bind. Default: every interface when secure or in a cluster (Prometheus scrapes
   * the pod's IP); 127.0.0.1 for plain HTTP outside one, so unauthenticated metrics stay on the machine.
   */
  host?: string;
  /**
   * HTTPS, and only callers the API allows `get` on the non-resource URL `/metrics` (the
   * `metrics-reader` ClusterRole) may read; the manager's service account needs `create` on
   * tokenreviews and subjectaccessreviews (`kubeloop generate` binds it). Default:
   * `$METRICS_SECURE` (`true`/`false`), else true in a cluster (`inCluster`) and false outside one: a developer's `curl localhost:8080/metrics`
   * just works, a pod's metrics are never open to the cluster network.
   */
  secure?: boolean;
  /**
   * The serving certificate's folder (`tls.crt`, `tls.key`; a mounted Secret), re-read when it
   * changes. Default `$METRICS_CERT_DIR`; unset, a self-signed certificate is made at start
   * (the generated ServiceMonitor then skips verification, as kubebuilder's does).
   */
  certDir?: string;
  /**
   * Secure, in a cluster, with no certificate in `certDir`: issue one for the metrics Service from
   * a CA kept in this Secret (made if absent, shared by the replicas), instead of a self-signed
   * one, so scrapers verify it with the Secret's `ca.crt` (the generated ServiceMonitor does).
   * If the Secret cannot be written, the self-signed certificate is served and a warning logged.
   * Default: `$METRICS_CERT_SECRET` and `$METRICS_SERVICE` (what the generated Deployment sets).
   */
  selfIssued?: SelfIssuedCertificate;
  /** The review caches' TTLs and timeout (defaults: controller-runtime's). */
  auth?: MetricsAuthOptions;
}

/**
 * The manager's options from the environment: the one place kubeloop reads `process.env` for an
 * operator (operator-sdk's and controller-runtime's names, which the generated deploy manifests set).
 *
 * | variable | option |
 * |---|---|
 * | `WATCH_NAMESPACE` | `namespaces` (comma-separated; unset or empty: all) |
 * | `LEADER_ELECT` | `leaderElection` (`true`/`false`) |
 * | `LEADER_ELECTION_ID`, `LEADER_ELECTION_NAMESPACE` | `leaderElection.id` (default: `name`), `leaderElection.namespace` |
 * | `POD_NAMESPACE` | `operatorNamespace` (where the Leases live) |
 * | `SHARDING_RING`, `POD_NAME` | `sharding.ring`, `sharding.id` |
 * | `LOG_LEVEL` | `logLevel` |
 * | `METRICS_PORT`, `PROBE_PORT` | `metrics.port`, `probes.port` |
 * | `METRICS_SECURE`, `METRICS_CERT_DIR` | `metrics.secure`, `metrics.certDir` |
 * | `METRICS_CERT_SECRET`, `METRICS_SERVICE` | `metrics.selfIssued` |
 * | `WEBHOOK_PORT`, `WEBHOOK_CERT_DIR` | `webhooks.port`, `webhooks.certDir` |
 * | `WEBHOOK_CERT_SECRET`, `WEBHOOK_SERVICE`, `WEBHOOK_CA_BUNDLES` | `webhooks.selfIssued` (`Kind/name,…`) |
 * | `ENABLE_WEBHOOKS` | `webhooks: false` when `false` |
 * | `WORKERS` | `workers` (`<n>` or `adaptive:<min>-<max>`) |
 * | `KUBERNETES_SERVICE_HOST` | `inCluster` (set in every pod) |
 *
 * These are all the variables the generated Deployment and Helm chart set for the manager (beside
 * `KUBELOOP_MEMORY_LIMIT`, which the image's launcher reads to size Node's heap). A malformed
 * value is an error naming the variable. The Manager applies these itself under the options it
 * is given, so calling this is only needed to see or change them; options given to the Manager
 * win. With command-line flags too, see `optionsFromCommandLine`.
 *
 * @example
 * ```ts
 * import { Manager, optionsFromEnv } from "kubeloop/manager";
 *
 * const options = optionsFromEnv(); // WATCH_NAMESPACE, LEADER_ELECT, METRICS_* … as operator-sdk names them
 * await new Manager({ ...options, leaderElection: { id: "nginx-operator" } }).start();
 * ```
 */
export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): ManagerOptions {
  const namespaces = watchNamespaces(env.WATCH_NAMESPACE);
  const secure = booleanOf("METRICS_SECURE", env.METRICS_SECURE);
  const elect = booleanOf("LEADER_ELECT", env.LEADER_ELECT);
  const webhooksEnabled = booleanOf("ENABLE_WEBHOOKS", env.ENABLE_WEBHOOKS);
  const webhookPort = portOf("WEBHOOK_PORT", env.WEBHOOK_PORT);
  const metricsPort = portOf("METRICS_PORT", env.METRICS_PORT);
  const probePort = portOf("PROBE_PORT", env.PROBE_PORT);
  const workers = env.WORKERS ? parseWorkers(env.WORKERS, "WORKERS") : undefined;
  const selfIssued =
    env.WEBHOOK_CERT_SECRET && env.WEBHOOK_SERVICE
      ? {
          secret: env.WEBHOOK_CERT_SECRET,
          service: env.WEBHOOK_SERVICE,
          caBundles: caBundleTargets(env.WEBHOOK_CA_BUNDLES ?? ""),
        }
      : undefined;
  return {
    ...(namespaces ? { namespaces: [...namespaces] } : {}),
    ...(elect === undefined ? {} : { leaderElection: elect ? electionOf(env) : false }),
    ...(env.POD_NAMESPACE ? { operatorNamespace: env.POD_NAMESPACE } : {}),
    ...(env.SHARDING_RING
      ? { sharding: { ring: env.SHARDING_RING, ...(env.POD_NAME ? { id: env.POD_NAME } : {}) } }
      : {}),
    ...(env.LOG_LEVEL ? { logLevel: env.LOG_LEVEL } : {}),
    ...(workers !== undefined ? { workers } : {}),
    ...(probePort !== undefined ? { probes: { port: probePort } } : {}),
    metrics: {
      ...(metricsPort !== undefined ? { port: metricsPort } : {}),
      ...(secure !== undefined ? { secure } : {}),
      ...(env.METRICS_CERT_DIR ? { certDir: env.METRICS_CERT_DIR } : {}),
      ...(env.METRICS_CERT_SECRET && env.METRICS_SERVICE
        ? { selfIssued: { secret: env.METRICS_CERT_SECRET, service: env.METRICS_SERVICE } }
        : {}),
    },
    webhooks:
      webhooksEnabled === false
        ? false
        : {
            ...(webhookPort !== undefined ? { port: webhookPort } : {}),
            ...(env.WEBHOOK_CERT_DIR ? { certDir: env.WEBHOOK_CERT_DIR } : {}),
            ...(selfIssued ? { selfIssued } : {}),
          },
    inCluster: Boolean(env.KUBERNETES_SERVICE_HOST),
  };
}

/** `LEADER_ELECT=true`'s Lease: its id is filled from `name` by {@link withDefaults} when not given. */
function electionOf(env: NodeJS.ProcessEnv): { id: string; namespace?: string } {
  return {
    id: env.LEADER_ELECTION_ID ?? "",
    ...(env.LEADER_ELECTION_NAMESPACE ? { namespace: env.LEADER_ELECTION_NAMESPACE } : {}),
  };
}

/**
 * `options` over `defaults` (from {@link optionsFromEnv}): what is given wins, field by field for
 * the metrics and webhook servers. The environment's sharding applies only without leader election.
 */
export function withDefaults(options: ManagerOptions, defaults: ManagerOptions): ManagerOptions {
  const leaderElection = electionWith(options, defaults);
  const sharding = options.sharding
    ? { ...(defaults.sharding?.id ? { id: defaults.sharding.id } : {}), ...options.sharding }
    : leaderElection
      ? undefined
      : defaults.sharding;
  const metrics =
    options.metrics === false
      ? false
      : { ...definedOf(defaults.metrics || {}), ...definedOf(options.metrics ?? {}) };
  const probes =
    options.probes === false || (options.probes === undefined && defaults.probes === false)
      ? false
      : { ...definedOf(defaults.probes || {}), ...definedOf(options.probes ?? {}) };
  const webhooks =
    options.webhooks === false || (options.webhooks === undefined && defaults.webhooks === false)
      ? false
      : { ...definedOf(defaults.webhooks || {}), ...definedOf(options.webhooks ?? {}) };
  return {
    ...defaults,
    ...definedOf(options),
    ...(leaderElection !== undefined ? { leaderElection } : {}),
    metrics,
    probes,
    webhooks,
    ...(sharding ? { sharding } : {}),
  } as ManagerOptions;
}

/**
 * The Lease: the one given, else the environment's, named by `LEADER_ELECTION_ID` or the
 * operator's `name`. Turned on by the environment with neither, it is an error naming both.
 */
function electionWith(options: ManagerOptions, defaults: ManagerOptions): ManagerOptions["leaderElection"] {
  if (options.leaderElection !== undefined) return options.leaderElection;
  // Sharding given in code wins over an election the environment asks for: they exclude each other.
  if (options.sharding) return undefined;
  const fromEnv = defaults.leaderElection;
  if (!fromEnv) return fromEnv;
  const id = fromEnv.id || options.name || defaults.name;
  if (!id)
    throw new TypeError(
      'LEADER_ELECT=true (or --leader-elect) turns leader election on, but the Lease has no name: give the Manager a name ({ name: "my-operator" }) or set LEADER_ELECTION_ID',
    );
  return { ...fromEnv, id };
}

/**
 * `WORKERS`' forms: `<n>` reconcile workers, or `adaptive:<min>-<max>` workers that follow the
 * load between the bounds. Anything else is an error naming `what`.
 *
 * @example
 * ```ts
 * parseWorkers("4"); // 4
 * parseWorkers("adaptive:2-32"); // { min: 2, max: 32 }
 * ```
 */
export function parseWorkers(value: string, what = "WORKERS"): number | AdaptiveConcurrency {
  const adaptive = /^adaptive:(\d+)-(\d+)$/.exec(value.trim());
  if (adaptive) return { min: Number(adaptive[1]), max: Number(adaptive[2]) };
  if (/^\d+$/.test(value.trim()) && Number(value) >= 1) return Number(value);
  throw new TypeError(
    `${what}="${value}" must be a number of workers ≥ 1 or adaptive:<min>-<max> (e.g. adaptive:2-32)`,
  );
}

const CA_BUNDLE_KINDS: readonly string[] = [
  "MutatingWebhookConfiguration",
  "ValidatingWebhookConfiguration",
  "CustomResourceDefinition",
];

/** `WEBHOOK_CA_BUNDLES`: `Kind/name` entries, comma-separated; an unknown kind is an error naming it. */
export function caBundleTargets(value: string): CaBundleTarget[] {
  return value
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [kind = "", name = ""] = entry.split("/");
      if (!CA_BUNDLE_KINDS.includes(kind) || !name)
        throw new TypeError(
          `WEBHOOK_CA_BUNDLES: "${entry}" is not Kind/name with Kind one of ${CA_BUNDLE_KINDS.join(", ")}`,
        );
      return { kind: kind as CaBundleTarget["kind"], name };
    });
}

function definedOf<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The namespaces of operator-sdk's `WATCH_NAMESPACE` (`a,b,c`; blanks around names ignored);
 * `undefined` for all namespaces (unset or empty). A malformed name is an error naming it.
 *
 * @example
 * ```ts
 * watchNamespaces("team-a, team-b"); // ["team-a", "team-b"]
 * watchNamespaces(""); // undefined: all namespaces
 * ```
 */
export function watchNamespaces(value: string | undefined): readonly string[] | undefined {
  const names = (value ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  return names.length ? checkNamespaces(names, `WATCH_NAMESPACE="${value}"`) : undefined;
}

/** A `true`/`false` variable, or unset/empty (`undefined`); anything else is an error naming it. */
function booleanOf(name: string, value: string | undefined): boolean | undefined {
  if (value === undefined || value === "") return undefined;
  if (value === "true") return true;
  if (value === "false") return false;
  throw new TypeError(`${name}="${value}" must be "true" or "false"`);
}

/** A port variable (0 for a free one), or unset/empty (`undefined`); anything else is an error naming it. */
export function portOf(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || port > 65_535)
    throw new TypeError(`${name}="${value}" must be a port number (0 to 65535; 0 picks a free one)`);
  return port;
}
