import type { Static, TSchema } from "typebox";
import type { KubeObject, ObjectMeta, ResourceType } from "../client/index.js";
import { type JsonSchema, SchemaError, toStructuralSchema } from "./schema.js";

/**
 * A custom resource defined once, in TypeScript: the static types of its spec, status and whole
 * object (used by the client, caches and controllers without casts) and the CustomResourceDefinition
 * the API server enforces, from the same TypeBox schemas.
 *
 * @example
 * ```ts
 * import Type from "typebox";
 * import { defineResource } from "kubeloop";
 *
 * export const Nginx = defineResource({
 *   group: "proxy.example.com", version: "v1alpha1", kind: "Nginx",
 *   spec: Type.Object({ count: Type.Integer({ minimum: 0, maximum: 100, default: 1, description: "Replicas" }) }),
 *   status: Type.Object({ nodes: Type.Optional(Type.Array(Type.String())) }),
 *   printerColumns: [{ name: "Count", type: "integer", jsonPath: ".spec.count" }],
 * });
 * type NginxObject = ObjectOf<typeof Nginx>; // { spec: { count: number }, status?: { nodes?: string[] }, … }
 * const crd = Nginx.crd();                     // apiextensions.k8s.io/v1 CustomResourceDefinition
 * ```
 */

export interface PrinterColumn {
  name: string;
  type: "integer" | "number" | "string" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  format?: string;
  /** 0 shows it in `kubectl get`; higher only with `-o wide`. */
  priority?: number;
}

/** The kind to define: group, version, kind, scope, and the TypeBox schemas of its spec and status. */
export interface ResourceDefinitionOptions<Spec extends TSchema, Status extends TSchema> {
  group: string;
  version: string;
  kind: string;
  /** Default: the kind in lower case, pluralised (`Nginx` → `nginxes`, `Policy` → `policies`). */
  plural?: string;
  singular?: string;
  shortNames?: string[];
  /** e.g. `["all"]` so that `kubectl get all` lists it. */
  categories?: string[];
  /** Default `Namespaced`. */
  scope?: "Namespaced" | "Cluster";
  /** Shown by `kubectl explain <kind>`. */
  description?: string;
  spec: Spec;
  /** With a status, the status subresource is enabled (status is written apart from spec). */
  status?: Status;
  /** Columns of `kubectl get`; `Age` is appended unless you list it. */
  printerColumns?: PrinterColumn[];
  /** Enables `kubectl scale` through the scale subresource. */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  /**
   * Other served versions of the kind, with their own schemas. The version above is the typed one
   * (the hub the others convert through); objects of any version are stored as `storageVersion`.
   */
  otherVersions?: OtherVersion[];
  /** Default: `version`. */
  storageVersion?: string;
  /** How the API server converts between versions: a conversion webhook (see `kubeloop/webhook`). */
  conversion?:
    | { url: string; caBundle?: string }
    | { service: { name: string; namespace: string; path?: string; port?: number }; caBundle?: string };
}

export interface OtherVersion {
  version: string;
  spec: TSchema;
  status?: TSchema;
  served?: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  /** This version's columns, when its fields differ from the typed version's. Default: those. */
  printerColumns?: PrinterColumn[];
  /** This version's scale paths, when its fields differ. Default: the typed version's. */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
}

/** The object type of a defined resource. */
export type ResourceObject<Spec extends TSchema, Status extends TSchema> = KubeObject & {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Static<Spec>;
  status?: Static<Status>;
};

/** A CustomResourceDefinition (apiextensions.k8s.io/v1) as `defineResource(…).crd()` writes it. */
export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    scope: "Namespaced" | "Cluster";
    names: { plural: string; singular: string; kind: string; shortNames?: string[]; categories?: string[] };
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      deprecated?: boolean;
      deprecationWarning?: string;
      schema: { openAPIV3Schema: JsonSchema };
      subresources?: Record<string, unknown>;
      additionalPrinterColumns?: PrinterColumn[];
    }[];
    conversion?: {
      strategy: "Webhook";
      webhook: { conversionReviewVersions: string[]; clientConfig: Record<string, unknown> };
    };
  };
}

/** What `defineResource` returns: a ResourceType for the client and controllers, and the kind's CRD. */
export interface ResourceDefinition<Spec extends TSchema, Status extends TSchema>
  extends ResourceType<ResourceObject<Spec, Status>> {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly group: string;
  readonly version: string;
  /** The CustomResourceDefinition, built fresh on each call. */
  crd(): CustomResourceDefinition;
}

/**
 * A custom resource from TypeBox schemas: its TypeScript type, the ResourceType the client and the
 * controllers take, and the CustomResourceDefinition (`crd()`) that `kubeloop generate` writes.
 */
export function defineResource<Spec extends TSchema, Status extends TSchema = TSchema>(
  options: ResourceDefinitionOptions<Spec, Status>,
): ResourceDefinition<Spec, Status> {
  validateNames(options);
  const plural = options.plural ?? pluralize(options.kind.toLowerCase());
  const scope = options.scope ?? "Namespaced";
  return Object.freeze({
    apiVersion: `${options.group}/${options.version}`,
    kind: options.kind,
    plural,
    namespaced: scope === "Namespaced",
    group: options.group,
    version: options.version,
    crd: () => buildCrd(options, plural, scope),
  });
}

function buildCrd<Spec extends TSchema, Status extends TSchema>(
  options: ResourceDefinitionOptions<Spec, Status>,
  plural: string,
  scope: "Namespaced" | "Cluster",
): CustomResourceDefinition {
  const subresourcesOf = (version: OtherVersion) => {
    const subresources: Record<string, unknown> = {};
    if (version.status) subresources.status = {};
    const scale = version.scale ?? options.scale;
    if (scale) subresources.scale = scale;
    return subresources;
  };
  const columnsOf = (version: OtherVersion) => {
    const columns = version.printerColumns ?? options.printerColumns ?? [];
    return columns.some((c) => c.name === "Age")
      ? columns
      : [...columns, { name: "Age", type: "date" as const, jsonPath: ".metadata.creationTimestamp" }];
  };
  const storage = options.storageVersion ?? options.version;
  const all: OtherVersion[] = [
    { version: options.version, spec: options.spec, ...(options.status ? { status: options.status } : {}) },
    ...(options.otherVersions ?? []),
  ];
  if (!all.some((v) => v.version === storage))
    throw new SchemaError(`storageVersion "${storage}" is not one of the versions`);
  const versions = all.map((v) => {
    const subresources = subresourcesOf(v);
    return {
      name: v.version,
      served: v.served ?? true,
      storage: v.version === storage,
      ...(v.deprecated ? { deprecated: true } : {}),
      ...(v.deprecationWarning ? { deprecationWarning: v.deprecationWarning } : {}),
      schema: { openAPIV3Schema: rootSchema(v, options.description) },
      ...(Object.keys(subresources).length ? { subresources } : {}),
      additionalPrinterColumns: columnsOf(v),
    };
  });
  const conversion = options.conversion;
  const clientConfig = conversion
    ? {
        ...("url" in conversion ? { url: conversion.url } : { service: conversion.service }),
        ...(conversion.caBundle ? { caBundle: conversion.caBundle } : {}),
      }
    : undefined;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${options.group}` },
    spec: {
      group: options.group,
      scope,
      names: {
        plural,
        singular: options.singular ?? options.kind.toLowerCase(),
        kind: options.kind,
        ...(options.shortNames?.length ? { shortNames: options.shortNames } : {}),
        ...(options.categories?.length ? { categories: options.categories } : {}),
      },
      versions,
      ...(clientConfig
        ? {
            conversion: {
              strategy: "Webhook" as const,
              webhook: { conversionReviewVersions: ["v1"], clientConfig },
            },
          }
        : {}),
    },
  };
}

/** The whole object's schema of one version. */
function rootSchema(version: OtherVersion, description: string | undefined): JsonSchema {
  // When every required field of the spec has a default, so does the spec: an object created
  // without one still gets its defaults (the server checks a default against the schema, so a bare
  // {} would not do).
  const spec = toStructuralSchema(version.spec as unknown as JsonSchema, "spec");
  const specDefault = defaultOf(spec);
  const properties: Record<string, JsonSchema> = {
    spec: specDefault === undefined || "default" in spec ? spec : { default: specDefault, ...spec },
  };
  if (version.status)
    properties.status = toStructuralSchema(version.status as unknown as JsonSchema, "status");
  return { type: "object", ...(description ? { description } : {}), properties };
}

/** The value a schema's defaults add up to, or `undefined` if a required field has none. */
function defaultOf(schema: JsonSchema): unknown {
  if ("default" in schema) return schema.default;
  if (schema.type !== "object" || !schema.properties) return undefined;
  const value: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties as Record<string, JsonSchema>)) {
    const nested = defaultOf(property);
    if (nested !== undefined) value[name] = nested;
  }
  const required = (schema.required as string[] | undefined) ?? [];
  return required.every((name) => name in value) ? value : undefined;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function validateNames(options: { group: string; version: string; kind: string; plural?: string }): void {
  if (!DNS_SUBDOMAIN.test(options.group) || !options.group.includes(".")) {
    throw new SchemaError(`group "${options.group}" must be a DNS subdomain with a dot, e.g. "example.com"`);
  }
  if (!/^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/.test(options.version)) {
    throw new SchemaError(`version "${options.version}" must look like v1, v1alpha1 or v2beta3`);
  }
  if (!/^[A-Z][A-Za-z0-9]*$/.test(options.kind)) {
    throw new SchemaError(`kind "${options.kind}" must be UpperCamelCase letters and digits`);
  }
  if (options.plural !== undefined && !/^[a-z][a-z0-9]*$/.test(options.plural)) {
    throw new SchemaError(`plural "${options.plural}" must be lower-case letters and digits`);
  }
}

/** English plural rules good enough for kinds (the same kubebuilder uses). */
export function pluralize(word: string): string {
  if (/(s|x|z|ch|sh)$/.test(word)) return `${word}es`;
  if (/[^aeiou]y$/.test(word)) return `${word.slice(0, -1)}ies`;
  return `${word}s`;
}
