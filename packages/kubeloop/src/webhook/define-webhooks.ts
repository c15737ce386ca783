import type { KubeObject, ObjectOf, ResourceType } from "../client/index.js";
import type { CustomResourceDefinition } from "../resources/index.js";
import { groupOf, versionOf } from "../resources/internal.js";
import type { Converters, Defaulter, Validator } from "./review.js";

/**
 * The webhooks of one kind, declared once: the manager serves them (`manager.addWebhooks(…)`) and
 * `kubeloop generate` writes the Mutating/ValidatingWebhookConfigurations and the CRD's conversion
 * section that send the API server to them, so the paths can never disagree.
 *
 * Defaulting and validation see the object in the resource's typed version: the configurations
 * match that version with `matchPolicy: Equivalent`, so the API server converts an object written
 * in any other version before calling.
 *
 * @example
 * ```ts
 * import { defineWebhooks } from "kubeloop/webhook";
 * import { Nginx } from "./resources.ts";
 *
 * export const nginxWebhooks = defineWebhooks(Nginx, {
 *   default(nginx) { nginx.metadata.labels = { ...nginx.metadata.labels, team: "web" }; },
 *   validate(nginx) {
 *     return nginx.spec.image.startsWith("registry.example.com/")
 *       ? { allowed: true }
 *       : { allowed: false, message: "images come from registry.example.com" };
 *   },
 * });
 * ```
 */
export interface WebhookParts<T extends KubeObject> {
  // Method syntax on purpose: a definition for one kind is then usable where any kind's is taken
  // (`manager.addWebhooks(a, b)`), as the server only ever calls it with objects of its kind.
  /** Fills in what the user left out; the response's JSON patch is computed from the change. */
  default?(...args: Parameters<Defaulter<T>>): ReturnType<Defaulter<T>>;
  /** Refuses what the schema and CEL cannot (rules that need the operator's configuration, other objects, …). */
  validate?(...args: Parameters<Validator<T>>): ReturnType<Validator<T>>;
  /** Conversion between the kind's versions through a hub; see `WebhookServer.conversion`. */
  convert?: Converters;
  /**
   * `Fail` (default) refuses writes while the webhook is down; `Ignore` lets them through unchecked.
   * Defaulting and validation that guard invariants want `Fail`.
   */
  failurePolicy?: "Fail" | "Ignore";
  /** Default 10 s (the API server's maximum is 30). */
  timeoutSeconds?: number;
  /** Which writes are validated. Default CREATE and UPDATE (DELETE gets the old object). */
  validateOn?: ("CREATE" | "UPDATE" | "DELETE")[];
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
}

/** A Kubernetes label selector: labels to match, and expressions on label keys. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
    values?: string[];
  }[];
}

/** The webhooks of one kind, from {@link defineWebhooks}: what the manager serves and `kubeloop generate` writes. */
export interface WebhookDefinition<T extends KubeObject = KubeObject> {
  readonly resource: { group: string; version: string; kind: string; plural: string; namespaced: boolean };
  readonly parts: WebhookParts<T>;
  /** The server paths, kubebuilder's scheme: `/mutate-<group-with-dashes>-<version>-<kind>`, … */
  readonly paths: { default?: string; validate?: string; convert?: string };
}

type Defined = ResourceType & {
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
};

/**
 * Declares the webhooks of one kind (see {@link WebhookParts}): give the result to
 * `manager.addWebhooks(…)`, and export it so `kubeloop generate` writes their configurations.
 */
export function defineWebhooks<R extends Defined>(
  resource: R,
  parts: WebhookParts<ObjectOf<R>>,
): WebhookDefinition<ObjectOf<R>> {
  if (!parts.default && !parts.validate && !parts.convert)
    throw new TypeError(`defineWebhooks(${resource.kind}): give at least one of default, validate, convert`);
  if (parts.timeoutSeconds !== undefined && !(parts.timeoutSeconds >= 1 && parts.timeoutSeconds <= 30))
    throw new RangeError(`defineWebhooks(${resource.kind}): timeoutSeconds must be 1–30`);
  const group = groupOf(resource.apiVersion);
  const version = versionOf(resource.apiVersion);
  const stem = `${group.replaceAll(".", "-")}-${version}-${resource.kind.toLowerCase()}`;
  return Object.freeze({
    resource: {
      group,
      version,
      kind: resource.kind,
      plural: resource.plural,
      namespaced: resource.namespaced,
    },
    parts,
    paths: {
      ...(parts.default ? { default: `/mutate-${stem}` } : {}),
      ...(parts.validate ? { validate: `/validate-${stem}` } : {}),
      ...(parts.convert
        ? { convert: `/convert-${group.replaceAll(".", "-")}-${resource.kind.toLowerCase()}` }
        : {}),
    },
  });
}

/** Whether a module export is a {@link WebhookDefinition} (how `kubeloop generate` finds them). */
export function isWebhookDefinition(value: unknown): value is WebhookDefinition {
  const candidate = value as Partial<WebhookDefinition> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.paths === "object" &&
    typeof candidate.resource?.plural === "string" &&
    typeof candidate.parts === "object"
  );
}

/** Where the API server reaches the webhook server: a Service in the cluster, or a URL (local runs). */
export type WebhookTarget =
  | { service: { name: string; namespace: string; port?: number }; caBundle?: string }
  | { url: string; caBundle?: string };

function clientConfig(target: WebhookTarget, path: string): Record<string, unknown> {
  const base =
    "url" in target
      ? { url: `${target.url.replace(/\/$/, "")}${path}` }
      : { service: { ...target.service, port: target.service.port ?? 443, path } };
  return { ...base, ...(target.caBundle ? { caBundle: target.caBundle } : {}) };
}

/**
 * A `clientConfig` as the API server reads it: a Service (and path) or a URL, and the CA bundle.
 *
 * @internal for the CLI and `kubeloop/testing`.
 */
export interface ClientConfig {
  service?: { name?: string; namespace?: string; port?: number; path?: string };
  url?: string;
  caBundle?: string;
}

/**
 * Replaces, in place, every `clientConfig` of a CRD's conversion webhook or of a Mutating/Validating
 * WebhookConfiguration's webhooks by `change(config)`; other objects are returned untouched.
 *
 * @internal for the CLI and `kubeloop/testing`.
 */
export function mapClientConfigs<T extends object>(
  object: T,
  change: (config: ClientConfig) => ClientConfig,
): T {
  const typed = object as {
    kind?: string;
    spec?: { conversion?: { webhook?: { clientConfig?: ClientConfig } } };
    webhooks?: { clientConfig?: ClientConfig }[];
  };
  const conversion = typed.spec?.conversion?.webhook;
  if (typed.kind === "CustomResourceDefinition" && conversion?.clientConfig) {
    conversion.clientConfig = change(conversion.clientConfig);
  }
  if (typed.kind === "MutatingWebhookConfiguration" || typed.kind === "ValidatingWebhookConfiguration") {
    for (const webhook of typed.webhooks ?? []) {
      if (webhook.clientConfig) webhook.clientConfig = change(webhook.clientConfig);
    }
  }
  return object;
}

/** The two admission webhook configurations, as plain objects ready to apply or write as YAML. */
export interface WebhookConfigurations {
  mutating?: Record<string, unknown>;
  validating?: Record<string, unknown>;
}

/**
 * The MutatingWebhookConfiguration and ValidatingWebhookConfiguration that route the definitions'
 * kinds to the server: named `<name>-mutating` / `<name>-validating`, one webhook per kind,
 * `sideEffects: None` (dry runs are safe), `matchPolicy: Equivalent`, AdmissionReview v1.
 */
export function webhookConfigurations(
  name: string,
  definitions: readonly WebhookDefinition[],
  target: WebhookTarget,
): WebhookConfigurations {
  const sorted = [...definitions].sort((a, b) =>
    `${a.resource.group}/${a.resource.kind}`.localeCompare(`${b.resource.group}/${b.resource.kind}`),
  );
  const webhook = (definition: WebhookDefinition, prefix: string, path: string, operations: string[]) => {
    const { resource, parts } = definition;
    return {
      name: `${prefix}.${resource.plural}.${resource.group || "core"}`,
      admissionReviewVersions: ["v1"],
      clientConfig: clientConfig(target, path),
      rules: [
        {
          apiGroups: [resource.group],
          apiVersions: [resource.version],
          resources: [resource.plural],
          operations,
          scope: resource.namespaced ? "Namespaced" : "Cluster",
        },
      ],
      matchPolicy: "Equivalent",
      failurePolicy: parts.failurePolicy ?? "Fail",
      sideEffects: "None",
      timeoutSeconds: parts.timeoutSeconds ?? 10,
      ...(parts.namespaceSelector ? { namespaceSelector: parts.namespaceSelector } : {}),
      ...(parts.objectSelector ? { objectSelector: parts.objectSelector } : {}),
    };
  };
  const mutating = sorted.flatMap((d) =>
    d.paths.default ? [webhook(d, "default", d.paths.default, ["CREATE", "UPDATE"])] : [],
  );
  const validating = sorted.flatMap((d) =>
    d.paths.validate
      ? [webhook(d, "validate", d.paths.validate, d.parts.validateOn ?? ["CREATE", "UPDATE"])]
      : [],
  );
  const admission = { apiVersion: "admissionregistration.k8s.io/v1" };
  return {
    ...(mutating.length
      ? {
          mutating: {
            ...admission,
            kind: "MutatingWebhookConfiguration",
            metadata: { name: `${name}-mutating` },
            webhooks: mutating,
          },
        }
      : {}),
    ...(validating.length
      ? {
          validating: {
            ...admission,
            kind: "ValidatingWebhookConfiguration",
            metadata: { name: `${name}-validating` },
            webhooks: validating,
          },
        }
      : {}),
  };
}

/** The CRD with its conversion section pointing at the definition's conversion path. */
export function withConversion(
  crd: CustomResourceDefinition,
  definition: WebhookDefinition,
  target: WebhookTarget,
): CustomResourceDefinition {
  const path = definition.paths.convert;
  if (!path) return crd;
  return {
    ...crd,
    spec: {
      ...crd.spec,
      conversion: {
        strategy: "Webhook",
        webhook: { conversionReviewVersions: ["v1"], clientConfig: clientConfig(target, path) },
      },
    },
  };
}
