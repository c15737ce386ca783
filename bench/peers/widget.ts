// The benchmark's custom resource, shared by the kubeloop operator and the runner (which installs
// its CRD). The Go and Rust operators declare the same shape in their own languages.
import { Conditions, defineResource, ObservedGeneration } from "kubeloop/resources";
import Type from "typebox";

export const Widget = defineResource({
  group: "bench.kubeloop.dev",
  version: "v1",
  kind: "Widget",
  description: "A benchmark object: the operator keeps one ConfigMap with spec.data per Widget.",
  spec: Type.Object({
    replicas: Type.Integer({ minimum: 0, default: 1 }),
    data: Type.Record(Type.String(), Type.String(), { default: {} }),
  }),
  status: Type.Object({
    observedGeneration: Type.Optional(ObservedGeneration()),
    conditions: Type.Optional(Conditions()),
  }),
});
