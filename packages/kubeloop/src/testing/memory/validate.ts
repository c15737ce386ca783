import type { KubeObject } from "../../client/index.js";
import type { CustomResourceDefinition } from "../../resources/index.js";
import { clone } from "./clone.js";
import { StatusError } from "./errors.js";
import { type CrdLike, kindsOfCrd } from "./kinds.js";
import { checkCrd, normalise } from "./normalise.js";
import type { Obj } from "./objects.js";

/** One reason an object is invalid, as a cause of the API server's 422. */
export interface ValidationCause {
  /** `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, … */
  type: string;
  /** `spec.rules[0].matches`, or `<nil>` for the object as a whole. */
  field: string;
  /** `Invalid value: "http": must be a port number`, word for word as kube-apiserver writes it. */
  message: string;
}

const kindCache = new WeakMap<object, ReturnType<typeof kindsOfCrd>>();

/**
 * Validates an object of a custom resource as kube-apiserver 1.36 would on a create (or, with
 * `old`, an update): pruning, defaults, the schema's checks and the CRD's CEL rules
 * (`x-kubernetes-validations`: transition rules on updates, ratcheting of unchanged values),
 * with the server's messages and field paths. No server, no clock: for plain unit tests of a
 * CRD's rules, like kube-rs's `validate_cel`. `resource` is a `defineResource` kind or any CRD
 * object (another project's, read from its YAML). Returns the causes of the 422 the server would
 * answer (empty when it would accept the object). Throws `NotEmulated` for a rule using a part of
 * CEL that is not emulated, naming the rule.
 *
 * @example
 * ```ts
 * import Type from "typebox";
 * import { defineResource } from "kubeloop";
 * import { validate } from "kubeloop/testing";
 *
 * const Range = defineResource({
 *   group: "example.com", version: "v1", kind: "Range",
 *   spec: Type.Object(
 *     { min: Type.Integer(), max: Type.Integer() },
 *     { "x-kubernetes-validations": [{ rule: "self.min <= self.max", message: "min must not exceed max" }] },
 *   ),
 * });
 * const causes = validate(Range, { apiVersion: "example.com/v1", kind: "Range", metadata: { name: "r" }, spec: { min: 3, max: 1 } });
 * // [{ type: "FieldValueInvalid", field: "spec", message: "Invalid value: min must not exceed max" }]
 * ```
 */
export function validate<T extends KubeObject>(
  resource: { crd(): CustomResourceDefinition } | CustomResourceDefinition,
  object: T,
  old?: T,
): ValidationCause[] {
  const crd = ("crd" in resource ? resource.crd() : resource) as unknown as CrdLike;
  let kinds = kindCache.get(resource);
  if (!kinds) {
    checkCrd(crd as unknown as Obj);
    kinds = kindsOfCrd(crd);
    kindCache.set(resource, kinds);
  }
  const version = String(object.apiVersion ?? "")
    .split("/")
    .pop();
  const kind = kinds.find((k) => k.version === version) ?? kinds.find((k) => k.version === k.storageVersion);
  if (!kind)
    throw new Error(
      `${crd.metadata.name} serves no version ${version}: use one of its versions in apiVersion`,
    );
  const copy = clone(object) as Obj;
  copy.metadata ??= {};
  try {
    normalise(kind, copy, old ? (clone(old) as Obj) : undefined);
    return [];
  } catch (error) {
    if (!(error instanceof StatusError)) throw error;
    return (error.status.details?.causes ?? []).map((c) => ({
      type: c.reason ?? "",
      field: c.field ?? "",
      message: c.message ?? "",
    }));
  }
}
