import { Conditions, defineResource, ObservedGeneration } from "kubeloop/resources";
import Type, { type TInteger, type TOptional } from "typebox";

/**
 * The default runs as an unprivileged user on port 8080, so its pods pass Pod Security `restricted`
 * (enforced on hardened clusters and on OpenShift); the official `nginx` image runs as root, which
 * the kubelet refuses under `runAsNonRoot`.
 */
const image = Type.String({
  default: "nginxinc/nginx-unprivileged:1.27",
  minLength: 1,
  description:
    "The container image: it must run as a non-root user and serve HTTP on port 8080. The operator's admission webhook allows only its configured registries.",
});

const status = Type.Object(
  {
    observedGeneration: Type.Optional(ObservedGeneration()),
    readyCount: Type.Optional(Type.Integer({ description: "Pods running and ready." })),
    nodes: Type.Optional(Type.Array(Type.String(), { description: "The names of the running pods." })),
    conditions: Type.Optional(Conditions()),
  },
  { description: "The observed state, written by the operator." },
);

const ingress = Type.Object(
  {
    host: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
      description: "The host name an Ingress routes to the Service (a DNS name, lowercase).",
    }),
    className: Type.Optional(
      Type.String({
        minLength: 1,
        description: "The IngressClass to use; unset: the cluster's default class.",
      }),
    ),
  },
  {
    description:
      "Serve the pods outside the cluster through an Ingress. Unset: no Ingress (one made before is deleted).",
  },
);

/** The spec of a version: the same fields, but the replica count's name changed in v1. */
const specWith = <Name extends "replicas" | "count">(name: Name) =>
  Type.Object(
    {
      [name]: Type.Integer({
        minimum: 0,
        maximum: 100,
        default: 1,
        description: "How many nginx pods to run (0–100).",
      }),
      image,
      ingress: Type.Optional(ingress),
    } as { [K in Name]: TInteger } & { image: typeof image; ingress: TOptional<typeof ingress> },
    { description: "The desired state." },
  );

const columns = (replicasPath: string) => [
  { name: "Replicas", type: "integer" as const, jsonPath: replicasPath, description: "Desired replicas" },
  {
    name: "Running",
    type: "integer" as const,
    jsonPath: ".status.readyCount",
    description: "Running and ready pods",
  },
  { name: "Ready", type: "string" as const, jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
];

/**
 * The Nginx custom resource, defined once: `kubeloop generate` writes config/crd from it, and the
 * controller reads its objects with these exact types.
 *
 * Two versions: `v1` (typed here, stored) says `replicas`; the first release's `v1alpha1` said
 * `count` and is still served, converted by the operator's conversion webhook (webhooks.ts), so
 * objects and manifests written for it keep working.
 */
export const Nginx = defineResource({
  group: "proxy.example.com",
  version: "v1",
  kind: "Nginx",
  shortNames: ["ngx"],
  categories: ["all"],
  description: "An nginx web server with a chosen number of replicas.",
  spec: specWith("replicas"),
  status,
  printerColumns: columns(".spec.replicas"),
  scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.readyCount" },
  otherVersions: [
    {
      version: "v1alpha1",
      deprecated: true,
      deprecationWarning: "proxy.example.com/v1alpha1 Nginx is deprecated; use proxy.example.com/v1",
      spec: specWith("count"),
      status,
      printerColumns: columns(".spec.count"),
      scale: { specReplicasPath: ".spec.count", statusReplicasPath: ".status.readyCount" },
    },
  ],
});
