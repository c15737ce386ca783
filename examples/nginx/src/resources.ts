import { Conditions, defineResource, ObservedGeneration } from "kubeloop/resources";
import Type from "typebox";

/**
 * The Nginx custom resource, defined once: `kubeloop generate` writes config/crd from it, and the
 * controller reads its objects with these exact types.
 */
export const Nginx = defineResource({
  group: "proxy.example.com",
  version: "v1alpha1",
  kind: "Nginx",
  shortNames: ["ngx"],
  categories: ["all"],
  description: "An nginx web server with a chosen number of replicas.",
  spec: Type.Object(
    {
      count: Type.Integer({
        minimum: 0,
        maximum: 100,
        default: 1,
        description: "How many nginx pods to run (0–100).",
      }),
      image: Type.String({ default: "nginx:1.27", description: "The container image." }),
    },
    { description: "The desired state." },
  ),
  status: Type.Object(
    {
      observedGeneration: Type.Optional(ObservedGeneration()),
      readyCount: Type.Optional(Type.Integer({ description: "Pods running and ready." })),
      nodes: Type.Optional(Type.Array(Type.String(), { description: "The names of the running pods." })),
      conditions: Type.Optional(Conditions()),
    },
    { description: "The observed state, written by the operator." },
  ),
  printerColumns: [
    { name: "Count", type: "integer", jsonPath: ".spec.count", description: "Desired replicas" },
    {
      name: "Running",
      type: "integer",
      jsonPath: ".status.readyCount",
      description: "Running and ready pods",
    },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  ],
  scale: { specReplicasPath: ".spec.count", statusReplicasPath: ".status.readyCount" },
});
