import { type Autoscale, hpaMetric, scaleUpBehavior } from "./autoscaling.js";
import { metricsCertSecret, metricsServiceName } from "./metrics-names.js";
import { monitoringManifests } from "./monitoring.js";

/**
 * The manifests that deploy an operator, as `kubeloop generate --image` writes them to
 * config/manager/: its namespace, service account, the bindings of the generated RBAC to it, the
 * manager Deployment and the metrics Service. The Deployment follows the restricted Pod Security
 * Standard: non-root, read-only root filesystem, no privilege escalation, every capability
 * dropped, the runtime's default seccomp profile; probes on the manager's /healthz and /readyz.
 */

export interface ManifestOptions {
  name: string;
  namespace: string;
  image: string;
  /** The operator serves webhooks: a webhook port, the serving certificate's Secret, a Service. */
  webhooks?: boolean;
  /**
   * With webhooks: where the manager puts the CA of the certificate it issues itself when none is
   * mounted (`Kind/name`: its webhook configurations, CRDs with a conversion webhook).
   */
  caBundles?: readonly string[];
  /** Which generated roles to bind (default: the ClusterRole only). */
  roles?: RoleScopes;
  /** The namespaces the manager watches, given to it as `WATCH_NAMESPACE` (default: all). */
  watchNamespaces?: readonly string[];
  /**
   * A sharded operator (every replica active; see docs/scale-out.md): `SHARDING_RING` and
   * `POD_NAME` (the shard id) instead of `LEADER_ELECT`, and a HorizontalPodAutoscaler between
   * these bounds, on the manager's CPU (the metrics-server is all it needs) unless `autoscale`
   * names one of the operator's own series (see {@link Autoscale}).
   */
  sharding?: ShardingReplicas;
}

/** A sharded operator's replica bounds, and what its autoscaler scales on (default CPU). */
export interface ShardingReplicas {
  minReplicas: number;
  maxReplicas: number;
  autoscale?: Autoscale;
}

/** The generated operator roles: a ClusterRole, and Roles (all named after the operator) in these namespaces. */
export interface RoleScopes {
  cluster: boolean;
  namespaces: string[];
}

/** Port defaults shared with the Manager (secure metrics 8443, probes 8081). */
const METRICS_PORT = 8443;
const PROBES_PORT = 8081;
const WEBHOOK_PORT = 9443;
const CERT_DIR = "/tmp/k8s-webhook-server/serving-certs";

/** The ports of the Services in front of the manager. */
const metricsPort = { name: "https", port: METRICS_PORT, targetPort: "metrics", protocol: "TCP" };
const webhookPort = { name: "webhooks", port: 443, targetPort: "webhooks" };

/** The ClusterRole letting the manager create TokenReviews and SubjectAccessReviews (kubebuilder's metrics_auth_role). */
export function metricsAuthRole(name: string): string {
  return `${name}-metrics-auth`;
}

/** The ClusterRole to bind to whoever scrapes `/metrics` (kubebuilder's metrics_reader_role; not bound here). */
export function metricsReaderRole(name: string): string {
  return `${name}-metrics-reader`;
}

/** The ClusterRoles of secure metrics, for config/rbac/metrics-roles.yaml. */
export function metricsRoles(name: string): object[] {
  const rbac = "rbac.authorization.k8s.io/v1";
  return [
    {
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name: metricsAuthRole(name) },
      rules: [
        { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
        { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
      ],
    },
    {
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name: metricsReaderRole(name) },
      rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }],
    },
  ];
}

/** The manager's pod labels (the Deployment's selector, the Services' and the monitors'). */
export function managerLabels(name: string): Record<string, string> {
  return { "app.kubernetes.io/name": name, "app.kubernetes.io/component": "manager" };
}

/** The manifests of monitoring and the network policy (opt-in), for config/prometheus, grafana, network-policy. */
export function optInManifests(
  name: string,
  namespace: string,
  webhooks: boolean,
  runbooks?: string,
): [string, object[]][] {
  return monitoringManifests({
    name,
    namespace,
    labels: managerLabels(name),
    metricsPort: METRICS_PORT,
    ...(webhooks ? { webhookPort: WEBHOOK_PORT } : {}),
    ...(runbooks ? { runbooks } : {}),
  });
}

/** The Secret with the webhook server's `tls.crt` and `tls.key` (cert-manager's layout). */
export function webhookCertSecret(name: string): string {
  return `${name}-webhook-server-cert`;
}

export function webhookServiceName(name: string): string {
  return `${name}-webhook-service`;
}

/** The Secret the manager keeps the certificate it issues itself in, shared by its replicas. */
export function selfIssuedCertSecret(name: string): string {
  return `${name}-webhook-self-issued`;
}

/** The roles bound to {@link servingCertRoles}: a Role for the Secrets, a ClusterRole for the caBundles. */
export function servingCertRoleName(name: string): string {
  return `${name}-serving-certs`;
}

/**
 * What the manager needs to issue its own metrics (and webhook) certificates, and nothing more:
 * make and read their Secrets (create cannot be limited by name), read and patch the caBundle of
 * exactly the configurations and CRDs it names, by resourceNames. For
 * config/rbac/serving-certs-roles.yaml.
 */
export function servingCertRoles(
  name: string,
  namespace: string,
  webhooks: boolean,
  caBundles: readonly string[],
): object[] {
  const rbac = "rbac.authorization.k8s.io/v1";
  const named = (kind: string) =>
    caBundles.filter((t) => t.startsWith(`${kind}/`)).map((t) => t.slice(kind.length + 1));
  const rules = [
    ["admissionregistration.k8s.io", "mutatingwebhookconfigurations", named("MutatingWebhookConfiguration")],
    [
      "admissionregistration.k8s.io",
      "validatingwebhookconfigurations",
      named("ValidatingWebhookConfiguration"),
    ],
    ["apiextensions.k8s.io", "customresourcedefinitions", named("CustomResourceDefinition")],
  ] as const;
  const role = servingCertRoleName(name);
  return [
    {
      apiVersion: rbac,
      kind: "Role",
      metadata: { name: role, namespace },
      rules: [
        { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
        {
          apiGroups: [""],
          resources: ["secrets"],
          resourceNames: [metricsCertSecret(name), ...(webhooks ? [selfIssuedCertSecret(name)] : [])],
          verbs: ["get", "update"],
        },
      ],
    },
    ...(caBundles.length
      ? [
          {
            apiVersion: rbac,
            kind: "ClusterRole",
            metadata: { name: role },
            rules: rules
              .filter(([, , names]) => names.length)
              .map(([group, resource, names]) => ({
                apiGroups: [group],
                resources: [resource],
                resourceNames: names,
                verbs: ["get", "patch"],
              })),
          },
        ]
      : []),
  ];
}

export function deployManifests({
  name,
  namespace,
  image,
  webhooks,
  caBundles = [],
  roles = { cluster: true, namespaces: [] },
  watchNamespaces,
  sharding,
}: ManifestOptions): [string, object[]][] {
  const labels = managerLabels(name);
  const files: [string, object[]][] = [
    [
      "namespace.yaml",
      [
        {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: namespace, labels: { "pod-security.kubernetes.io/enforce": "restricted" } },
        },
      ],
    ],
    [
      "service-account.yaml",
      [
        {
          apiVersion: "v1",
          kind: "ServiceAccount",
          metadata: { name, namespace },
          // No token in pods that merely use this account; the manager's pod asks for one.
          automountServiceAccountToken: false,
        },
      ],
    ],
    ["role-bindings.yaml", roleBindings(name, namespace, roles, caBundles.length > 0)],
    [
      // Secure metrics: the manager asks the API who a scraper is and whether it may read. A
      // ClusterRoleBinding even for an operator confined to namespaces: reviews are cluster-scoped.
      "metrics-auth-binding.yaml",
      [
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name: metricsAuthRole(name) },
          roleRef: {
            apiGroup: "rbac.authorization.k8s.io",
            kind: "ClusterRole",
            name: metricsAuthRole(name),
          },
          subjects: [{ kind: "ServiceAccount", name, namespace }],
        },
      ],
    ],
    [
      "deployment.yaml",
      [managerDeployment({ name, namespace, image, webhooks, caBundles, watchNamespaces, sharding })],
    ],
    ["metrics-service.yaml", [service(metricsServiceName(name), namespace, labels, metricsPort)]],
  ];
  if (sharding) files.push(["hpa.yaml", [shardingAutoscaler(name, namespace, sharding)]]);
  if (webhooks) {
    files.push(["webhook-service.yaml", [service(webhookServiceName(name), namespace, labels, webhookPort)]]);
  }
  return files;
}

/** The manager's service account bound to {@link servingCertRoles}. */
function servingCertBindings(name: string, namespace: string, clusterRole: boolean): object[] {
  const rbac = "rbac.authorization.k8s.io";
  const role = servingCertRoleName(name);
  const subjects = [{ kind: "ServiceAccount", name, namespace }];
  return [
    {
      apiVersion: `${rbac}/v1`,
      kind: "RoleBinding",
      metadata: { name: role, namespace },
      roleRef: { apiGroup: rbac, kind: "Role", name: role },
      subjects,
    },
    ...(clusterRole
      ? [
          {
            apiVersion: `${rbac}/v1`,
            kind: "ClusterRoleBinding",
            metadata: { name: role },
            roleRef: { apiGroup: rbac, kind: "ClusterRole", name: role },
            subjects,
          },
        ]
      : []),
  ];
}

/**
 * The autoscaler of a sharded operator: on CPU by default, which needs only the metrics-server, or
 * on one of the operator's own series through the custom-metrics API (prometheus-adapter with the
 * rule of `adapterRules`). Scaling moves about 1/N of the objects through a drain each time, so
 * it scales down only after 5 minutes of less load (the HPA's default window, written out), one
 * pod at a time.
 */
export function shardingAutoscaler(
  name: string,
  namespace: string,
  { minReplicas, maxReplicas, autoscale = { metric: "cpu" } }: ShardingReplicas,
): object {
  if (
    !Number.isInteger(minReplicas) ||
    minReplicas < 1 ||
    !Number.isInteger(maxReplicas) ||
    maxReplicas < minReplicas
  )
    throw new RangeError(
      `sharding replicas: give whole numbers with 1 ≤ min ≤ max (got min ${minReplicas}, max ${maxReplicas})`,
    );
  const scaleUp = scaleUpBehavior(autoscale);
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace, labels: managerLabels(name) },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas,
      maxReplicas,
      metrics: [hpaMetric(autoscale)],
      behavior: {
        ...(scaleUp ? { scaleUp } : {}),
        scaleDown: {
          stabilizationWindowSeconds: 300,
          policies: [{ type: "Pods", value: 1, periodSeconds: 60 }],
        },
      },
    },
  };
}

/** The manager's service account bound to the generated roles, the leader election Role and the serving certificates' roles. */
function roleBindings(name: string, namespace: string, roles: RoleScopes, selfIssued: boolean): object[] {
  const subjects = [{ kind: "ServiceAccount", name, namespace }];
  return [
    ...(roles.cluster
      ? [
          {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRoleBinding",
            metadata: { name },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
            subjects,
          },
        ]
      : []),
    ...roles.namespaces.map((ns) => ({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects,
    })),
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: `${name}-leader-election`, namespace },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: `${name}-leader-election` },
      subjects,
    },
    ...servingCertBindings(name, namespace, selfIssued),
  ];
}

type ManagerOptions = Required<Pick<ManifestOptions, "name" | "namespace" | "image" | "caBundles">> &
  Pick<ManifestOptions, "webhooks" | "watchNamespaces" | "sharding">;

/** The manager Deployment (restricted Pod Security; see the module comment). */
function managerDeployment(options: ManagerOptions): object {
  const { name, namespace, webhooks, sharding } = options;
  const labels = managerLabels(name);
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace, labels },
    spec: {
      // Two replicas: one leads, the other keeps warm caches and takes over within the lease.
      // Sharded: all reconcile, and the autoscaler sets the count.
      replicas: sharding ? sharding.minReplicas : 2,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: name,
          automountServiceAccountToken: true, // the manager talks to the API
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          terminationGracePeriodSeconds: 40, // the manager's 30 s graceful shutdown, plus margin
          containers: [managerContainer(options)],
          ...(webhooks
            ? {
                volumes: [
                  {
                    name: "webhook-certs",
                    // Readable by all (0444): the kubelet writes the files as root, the manager
                    // runs as the image's non-root user, and an fsGroup to share them would be
                    // refused by OpenShift's restricted SCC. Only the manager runs in the pod.
                    // Optional: absent, the folder is empty and the manager issues its own.
                    secret: { secretName: webhookCertSecret(name), defaultMode: 0o444, optional: true },
                  },
                ],
              }
            : {}),
        },
      },
    },
  };
}

function managerContainer(options: ManagerOptions): object {
  const { image, webhooks } = options;
  return {
    name: "manager",
    image,
    env: managerEnv(options),
    ports: [
      { name: "metrics", containerPort: METRICS_PORT },
      { name: "probes", containerPort: PROBES_PORT },
      ...(webhooks ? [{ name: "webhooks", containerPort: WEBHOOK_PORT }] : []),
    ],
    ...(webhooks ? { volumeMounts: [{ name: "webhook-certs", mountPath: CERT_DIR, readOnly: true }] } : {}),
    livenessProbe: {
      httpGet: { path: "/healthz", port: "probes" },
      initialDelaySeconds: 15,
      periodSeconds: 20,
    },
    readinessProbe: {
      httpGet: { path: "/readyz", port: "probes" },
      initialDelaySeconds: 5,
      periodSeconds: 10,
    },
    // Measured (docs/observability.md): the nginx operator idles at 112 MiB RSS
    // and holds 158 MiB with 1,000 Nginx and their Deployments cached, using ~2 ms
    // of CPU a reconcile; 50,000 cached objects take ~364 MiB (bench/RESULTS.md).
    // Request what it idles at; limit what a large cache needs, with headroom.
    resources: {
      requests: { cpu: "50m", memory: "128Mi" },
      limits: { cpu: "1", memory: "512Mi" },
    },
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    },
  };
}

/** The manager's settings, as environment variables. */
function managerEnv({ name, webhooks, caBundles, watchNamespaces, sharding }: ManagerOptions): object[] {
  return [
    ...(sharding
      ? [
          // The ring is the operator; each pod is a shard named after itself.
          { name: "SHARDING_RING", value: name },
          { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        ]
      : [{ name: "LEADER_ELECT", value: "true" }]),
    // The image's launcher sizes V8's heap from this limit (--max-old-space-size at
    // 75%, --max-semi-space-size=4; docs/performance.md). NODE_OPTIONS set here wins.
    {
      name: "KUBELOOP_MEMORY_LIMIT",
      valueFrom: {
        resourceFieldRef: { containerName: "manager", resource: "limits.memory" },
      },
    },
    { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
    // Only the namespaces its Roles cover (operator-sdk's variable; unset: all).
    ...(watchNamespaces?.length ? [{ name: "WATCH_NAMESPACE", value: watchNamespaces.join(",") }] : []),
    // HTTPS behind TokenReview + SubjectAccessReview, with a certificate issued
    // from the CA in METRICS_CERT_SECRET unless METRICS_CERT_DIR mounts one.
    { name: "METRICS_SECURE", value: "true" },
    { name: "METRICS_CERT_SECRET", value: metricsCertSecret(name) },
    { name: "METRICS_SERVICE", value: metricsServiceName(name) },
    { name: "METRICS_PORT", value: String(METRICS_PORT) },
    { name: "PROBE_PORT", value: String(PROBES_PORT) },
    ...(webhooks
      ? [
          { name: "WEBHOOK_PORT", value: String(WEBHOOK_PORT) },
          { name: "WEBHOOK_CERT_DIR", value: CERT_DIR },
          // Nothing mounted there (no cert-manager, Helm or deploy Secret): the
          // manager issues its own, shared through this Secret, and sets these caBundles.
          { name: "WEBHOOK_CERT_SECRET", value: selfIssuedCertSecret(name) },
          { name: "WEBHOOK_SERVICE", value: webhookServiceName(name) },
          ...(caBundles.length ? [{ name: "WEBHOOK_CA_BUNDLES", value: caBundles.join(",") }] : []),
        ]
      : []),
  ];
}

/** A Service in front of the manager's pods, on one of its ports. */
function service(name: string, namespace: string, labels: Record<string, string>, port: object): object {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace, labels },
    spec: { selector: labels, ports: [port] },
  };
}
