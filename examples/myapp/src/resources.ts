import { Conditions, defineResource, ObservedGeneration } from "kubeloop/resources";
import Type from "typebox";

/**
 * An OCI tag (the distribution spec's grammar): letters, digits, `_`, `.`, `-`, at most 128, not
 * starting with `.` or `-`. A schema pattern, so a bad tag is refused by the API server itself.
 */
export const IMAGE_TAG = "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$";

const version = Type.String({
  pattern: IMAGE_TAG,
  description:
    "The application version: the image tag to run (letters, digits, '_', '.', '-'; at most 128; not starting with '.' or '-').",
});

const image = Type.String({
  minLength: 1,
  default: "registry.example.com/myapp",
  description: "The image repository, without a tag: `version` is the tag.",
});

const database = Type.Object(
  {
    enabled: Type.Boolean({ default: false, description: "Give the app a PgDatabase database." }),
    storage: Type.String({
      pattern: "^[0-9]+(Mi|Gi|Ti)$",
      default: "1Gi",
      description: "The database's size, e.g. 1Gi.",
    }),
    serverSecret: Type.Optional(
      Type.String({
        minLength: 1,
        description: "The PgDatabase server Secret (host, port, username, password) in the app's namespace.",
      }),
    ),
  },
  { description: "The app's database, a PgDatabase owned by the MyApp." },
);

const rollout = Type.Object(
  {
    progressDeadlineSeconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 600,
      description:
        "How long a new version may take to become available before it is rolled back to the last healthy version.",
    }),
    maxUnavailable: Type.String({
      pattern: "^[0-9]+%?$",
      default: "0",
      description: 'Pods that may be unavailable during a rollout: a count ("1") or a percentage ("25%").',
    }),
  },
  { description: "How versions roll out." },
);

const historyEntry = Type.Object({
  version: Type.String(),
  outcome: Type.Union([
    Type.Literal("Progressing"),
    Type.Literal("Succeeded"),
    Type.Literal("Failed"),
    Type.Literal("RolledBack"),
  ]),
  startedAt: Type.String(),
  finishedAt: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
});

export const status = Type.Object(
  {
    observedGeneration: Type.Optional(ObservedGeneration()),
    phase: Type.Optional(Type.String({ description: "Pending, Progressing, Running or Degraded." })),
    currentVersion: Type.Optional(Type.String({ description: "The last version that rolled out healthy." })),
    previousVersion: Type.Optional(
      Type.String({ description: "The healthy version before currentVersion." }),
    ),
    failedVersion: Type.Optional(
      Type.String({
        description: "A version that failed and was rolled back; set spec.version to another to retry.",
      }),
    ),
    readyReplicas: Type.Optional(Type.Integer()),
    history: Type.Optional(Type.Array(historyEntry, { description: "The last rollouts, newest first." })),
    conditions: Type.Optional(Conditions()),
  },
  { description: "The observed state, written by the operator." },
);

const replicas = Type.Integer({
  minimum: 0,
  maximum: 100,
  default: 1,
  description: "How many pods to run (0–100).",
});
const common = { version, image, database: Type.Optional(database), rollout: Type.Optional(rollout) };

/** v1's spec. */
export const spec = Type.Object({ replicas, ...common }, { description: "The desired state." });
/** Release 1's v1alpha1 spec: the same fields, but the replica count was called `size`. */
export const specV1alpha1 = Type.Object({ size: replicas, ...common }, { description: "The desired state." });

export const columns = (replicasPath: string) => [
  { name: "Replicas", type: "integer" as const, jsonPath: replicasPath },
  { name: "Version", type: "string" as const, jsonPath: ".spec.version" },
  { name: "Current", type: "string" as const, jsonPath: ".status.currentVersion" },
  { name: "Phase", type: "string" as const, jsonPath: ".status.phase" },
  { name: "Ready", type: "string" as const, jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
];

/**
 * MyApp, release 2: `v1` (typed, stored) says `replicas`; release 1's `v1alpha1` said `size` and is
 * still served through the conversion webhook (webhooks.ts) until `kubeloop migrate` retires it.
 */
export const MyApp = defineResource({
  group: "apps.example.com",
  version: "v1",
  kind: "MyApp",
  shortNames: ["ma"],
  description: "An application: a Deployment and a Service, rolled out with automatic rollback.",
  spec,
  status,
  printerColumns: columns(".spec.replicas"),
  otherVersions: [
    {
      version: "v1alpha1",
      deprecated: true,
      deprecationWarning: "apps.example.com/v1alpha1 MyApp is deprecated; use apps.example.com/v1",
      spec: specV1alpha1,
      status,
      printerColumns: columns(".spec.size"),
    },
  ],
});
