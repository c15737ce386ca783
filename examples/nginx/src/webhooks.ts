import type { KubeObject } from "kubeloop";
import { defineWebhooks } from "kubeloop/webhook";
import { Nginx } from "./resources.ts";

/**
 * The operator's admission and conversion webhooks. What they do is what the CRD's schema and CEL
 * rules cannot: the allowed registries are the operator's configuration (`ALLOWED_REGISTRIES`,
 * comma-separated), which a schema fixed at install time cannot know.
 */

/** Where images may come from unless ALLOWED_REGISTRIES says otherwise. */
const DEFAULT_REGISTRIES = ["docker.io", "registry.k8s.io", "ghcr.io"];

export function allowedRegistries(env: NodeJS.ProcessEnv = process.env): string[] {
  const configured = env.ALLOWED_REGISTRIES?.split(",")
    .map((r) => r.trim())
    .filter(Boolean);
  return configured?.length ? configured : DEFAULT_REGISTRIES;
}

/**
 * The full reference of an image as the container runtime reads it: `nginx:1.27` is
 * `docker.io/library/nginx:1.27`, and no tag means `latest`.
 */
export function qualifyImage(image: string): string {
  const slash = image.indexOf("/");
  const first = slash < 0 ? "" : image.slice(0, slash);
  const hasRegistry = first.includes(".") || first.includes(":") || first === "localhost";
  const path = hasRegistry ? image : `docker.io/${slash < 0 ? `library/${image}` : image}`;
  const lastSegment = path.slice(path.lastIndexOf("/") + 1);
  return lastSegment.includes(":") || lastSegment.includes("@") ? path : `${path}:latest`;
}

type Spec = { count?: number; replicas?: number; [field: string]: unknown };

function withSpec(object: KubeObject, change: (spec: Spec) => Spec): KubeObject {
  const spec = (object as { spec?: Spec }).spec ?? {};
  return { ...object, spec: change(spec) } as KubeObject;
}

export const nginxWebhooks = defineWebhooks(Nginx, {
  // Defaulting: the image as the runtime will pull it, so that what the validator checks, what
  // `kubectl get -o yaml` shows and what runs are the same reference.
  default(nginx) {
    nginx.spec.image = qualifyImage(nginx.spec.image);
  },
  validate(nginx) {
    const image = qualifyImage(nginx.spec.image);
    const registry = image.slice(0, image.indexOf("/"));
    const allowed = allowedRegistries();
    if (!allowed.includes(registry)) {
      return {
        allowed: false,
        message: `spec.image: registry "${registry}" is not allowed; allowed: ${allowed.join(", ")}`,
      };
    }
    const warnings = image.endsWith(":latest")
      ? [`spec.image ${image} is not pinned: pods may run different versions`]
      : [];
    return { allowed: true, warnings };
  },
  // v1alpha1 said `count`, v1 says `replicas`; everything else is the same.
  convert: {
    hub: "v1",
    toHub: {
      v1alpha1: (object) => withSpec(object, ({ count, ...rest }) => ({ ...rest, replicas: count })),
    },
    fromHub: {
      v1alpha1: (object) => withSpec(object, ({ replicas, ...rest }) => ({ ...rest, count: replicas })),
    },
  },
});
