import type { KubeObject } from "kubeloop";
import { defineWebhooks } from "kubeloop/webhook";
import { MyApp } from "./resources.ts";

type Spec = { size?: number; replicas?: number; [field: string]: unknown };

function withSpec(object: KubeObject, change: (spec: Spec) => Spec): KubeObject {
  const spec = (object as { spec?: Spec }).spec ?? {};
  return { ...object, spec: change(spec) } as KubeObject;
}

/**
 * Release 2's conversion webhook: v1alpha1 said `size`, v1 says `replicas`; everything else is the
 * same. It must run before the CRD names it (the API server calls it for every v1alpha1 read and
 * write), and until `kubeloop migrate --retire v1alpha1` has run.
 */
export const myAppWebhooks = defineWebhooks(MyApp, {
  convert: {
    hub: "v1",
    toHub: {
      v1alpha1: (object) => withSpec(object, ({ size, ...rest }) => ({ ...rest, replicas: size })),
    },
    fromHub: {
      v1alpha1: (object) => withSpec(object, ({ replicas, ...rest }) => ({ ...rest, size: replicas })),
    },
  },
});
