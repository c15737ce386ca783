import { validateLabels } from "./builtins.js";
import type { FieldError } from "./errors.js";

/**
 * Embedded resources (`x-kubernetes-embedded-resource`): an object inside a custom resource that is
 * itself a Kubernetes object, as kube-apiserver treats it. Its `apiVersion` and `kind` are kept and
 * required; its `metadata` is kept as ObjectMeta (unknown fields pruned, empty ones dropped as Go's
 * omitempty drops them) and its labels validated; its name is not (the server does not check it).
 */

type Schema = Record<string, unknown>;

const OBJECT_META = new Set([
  "name",
  "generateName",
  "namespace",
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
]);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const isEmpty = (v: unknown) =>
  v === "" ||
  v === null ||
  (Array.isArray(v) && v.length === 0) ||
  (isObject(v) && Object.keys(v).length === 0);

export function isEmbedded(schema: Schema | undefined): boolean {
  return schema?.["x-kubernetes-embedded-resource"] === true;
}

/** What pruning keeps of an embedded resource's own fields (its other fields are pruned by the schema). */
export function pruneEmbedded(value: Record<string, unknown>, into: Record<string, unknown>): void {
  if (value.apiVersion !== undefined) into.apiVersion = value.apiVersion;
  if (value.kind !== undefined) into.kind = value.kind;
  if (isObject(value.metadata)) {
    const metadata = Object.fromEntries(
      Object.entries(value.metadata).filter(([k, v]) => OBJECT_META.has(k) && !isEmpty(v)),
    );
    if (Object.keys(metadata).length) into.metadata = metadata;
  }
}

/** apiVersion and kind required; metadata's labels valid. */
export function validateEmbedded(value: Record<string, unknown>, where: string, errors: FieldError[]): void {
  for (const field of ["apiVersion", "kind"])
    if (value[field] === undefined || value[field] === "")
      errors.push({ type: "FieldValueRequired", field: `${where}.${field}`, message: "Required value" });
  const metadata = isObject(value.metadata) ? value.metadata : undefined;
  if (isObject(metadata?.labels)) validateLabels(metadata.labels, errors, `${where}.metadata.labels`);
}
