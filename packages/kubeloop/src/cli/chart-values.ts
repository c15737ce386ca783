/**
 * values.yaml of the generated chart (chart.ts): its defaults, read from the manager Deployment that
 * `kubeloop generate` writes to config/, and the JSON Schema that makes a wrong value fail `helm
 * install` and `helm lint` with the path and the reason.
 */

/** A generated object, as chart.ts reads it. */
export type KubeObject = Record<string, unknown> & {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown>;
};

export const VALUES_COMMENT = `# Defaults are what \`kubeloop generate\` writes to config/; values.schema.json checks every value.
`;

interface ManagerContainer {
  resources?: object;
  securityContext?: object;
  env?: { name: string; value?: string }[];
}

function managerContainer(deployment: KubeObject): ManagerContainer {
  const spec = deployment.spec as { template: { spec: { containers: ManagerContainer[] } } };
  const container = spec.template.spec.containers[0];
  if (!container) throw new Error("the manager Deployment has no container");
  return container;
}

export function defaultValues(deployment: KubeObject, repository: string, webhooks: boolean): object {
  const spec = deployment.spec as { replicas?: number; template: { spec: { securityContext?: object } } };
  const container = managerContainer(deployment);
  const env = (name: string) => container.env?.find((e) => e.name === name)?.value;
  return {
    manager: {
      replicas: spec.replicas ?? 1,
      image: { repository, tag: "", digest: "", pullPolicy: "IfNotPresent" },
      imagePullSecrets: [],
      resources: container.resources ?? {},
      podSecurityContext: spec.template.spec.securityContext ?? {},
      securityContext: container.securityContext ?? {},
      nodeSelector: {},
      tolerations: [],
      affinity: {},
      podAnnotations: {},
      env: [],
    },
    leaderElection: { enabled: env("LEADER_ELECT") !== "false" },
    metrics: { enabled: true, port: Number(env("METRICS_PORT") ?? 8443) },
    crd: { enabled: true, keep: true },
    ...(webhooks
      ? {
          webhook: {
            port: Number(env("WEBHOOK_PORT") ?? 9443),
            certificates: { source: "self-signed", secretName: "", caBundle: "" },
          },
        }
      : {}),
    prometheus: { enabled: false },
    grafana: { enabled: false },
    networkPolicy: { enabled: false },
  };
}

const RESOURCE_QUANTITY = {
  description: "A Kubernetes quantity, e.g. 100m, 1, 128Mi.",
  anyOf: [
    { type: "string", pattern: "^[0-9.]+[a-zA-Z]*$" },
    { type: "number", minimum: 0 },
  ],
};

const RESOURCE_LIST = {
  type: "object",
  additionalProperties: RESOURCE_QUANTITY,
  propertyNames: { enum: ["cpu", "memory", "ephemeral-storage"] },
};

/** A closed object: a key the schema does not name is an error, not silently ignored. */
function object(description: string, properties: Record<string, unknown>, required?: string[]): object {
  return {
    type: "object",
    description,
    additionalProperties: false,
    properties,
    ...(required ? { required } : {}),
  };
}

/** An object passed through to Kubernetes as it is (its own API server validates it). */
function free(description: string): object {
  return { type: "object", description };
}

function flag(description: string): object {
  return object(description, { enabled: { type: "boolean", description } });
}

function stringMap(description: string): object {
  return { type: "object", additionalProperties: { type: "string" }, description };
}

const PORT = { type: "integer", minimum: 1, maximum: 65535 };

/** The JSON Schema of values.yaml: unknown keys and wrong types fail `helm install` and `helm lint`. */
export function valuesSchema(webhooks: boolean): object {
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "values",
    ...object(
      "The operator's settings.",
      {
        manager: managerSchema(),
        leaderElection: flag("One active manager at a time (needed with more than one replica)."),
        metrics: object("Secure metrics (HTTPS, TokenReview and SubjectAccessReview).", {
          enabled: { type: "boolean", description: "The metrics Service and the reviews' RBAC." },
          port: { ...PORT, description: "The metrics port." },
        }),
        crd: object("The CustomResourceDefinitions.", {
          enabled: { type: "boolean", description: "Install and upgrade the CRDs with the chart." },
          keep: {
            type: "boolean",
            description: "helm.sh/resource-policy: keep: uninstall leaves the CRDs and their objects.",
          },
        }),
        ...(webhooks ? { webhook: webhookSchema() } : {}),
        prometheus: flag("A ServiceMonitor and the alerting rules (needs the Prometheus Operator's CRDs)."),
        grafana: flag("The Grafana dashboard ConfigMap (for Grafana's sidecar)."),
        networkPolicy: flag(
          "A NetworkPolicy admitting only metrics scrapers and the API server's webhook calls.",
        ),
      },
      ["manager"],
    ),
  };
}

function managerSchema(): object {
  return object("The manager Deployment.", {
    replicas: {
      type: "integer",
      minimum: 0,
      description: "Pods; one leads, the others keep warm caches and take over.",
    },
    image: object(
      "The manager's image.",
      {
        repository: { type: "string", minLength: 1, description: "Registry and name." },
        tag: { type: "string", description: "Tag; empty means the chart's appVersion." },
        digest: {
          type: "string",
          pattern: "^(sha256:[0-9a-f]{64})?$",
          description:
            "Digest (sha256:…, as kubeloop build prints it); when set, the image is pinned by it and the tag is ignored.",
        },
        pullPolicy: { enum: ["Always", "IfNotPresent", "Never"], description: "When to pull." },
      },
      ["repository"],
    ),
    imagePullSecrets: {
      type: "array",
      description: "Secrets to pull the image with.",
      items: object("A pull Secret.", { name: { type: "string", minLength: 1 } }, ["name"]),
    },
    resources: object("Requests and limits of the manager container.", {
      requests: RESOURCE_LIST,
      limits: RESOURCE_LIST,
    }),
    podSecurityContext: free("The pod's securityContext (restricted Pod Security by default)."),
    securityContext: free("The manager container's securityContext."),
    nodeSelector: stringMap("Node labels the pods must match."),
    tolerations: { type: "array", items: { type: "object" }, description: "Pod tolerations." },
    affinity: free("Pod affinity and anti-affinity."),
    podAnnotations: stringMap("Annotations on the manager's pods."),
    env: {
      type: "array",
      description: "More environment variables of the manager container (the operator's own settings).",
      items: object(
        "An EnvVar: value or valueFrom.",
        {
          name: { type: "string", minLength: 1 },
          value: { type: "string" },
          valueFrom: { type: "object" },
        },
        ["name"],
      ),
    },
  });
}

function webhookSchema(): object {
  return object("The admission and conversion webhooks.", {
    port: { ...PORT, description: "The webhook server's port." },
    certificates: {
      ...object("The webhook server's certificate.", {
        source: {
          enum: ["self-signed", "cert-manager", "secret"],
          description:
            "self-signed: made by the chart and kept across upgrades; cert-manager: an Issuer and a Certificate, CA injected by cert-manager; secret: an existing kubernetes.io/tls Secret.",
        },
        secretName: { type: "string", description: "With source=secret: the existing Secret." },
        caBundle: {
          type: "string",
          description: "With source=secret: the base64 PEM CA that signed the Secret's certificate.",
        },
      }),
      if: { properties: { source: { const: "secret" } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's conditional keyword.
      then: {
        required: ["secretName", "caBundle"],
        properties: { secretName: { minLength: 1 }, caBundle: { minLength: 1 } },
      },
    },
  });
}
