import { hasValidationRules, validateRules } from "../../resources/internal.js";
import { builtinListTypes, type ListTypes, schemaListTypes } from "./apply.js";
import { applyBuiltinDefaults, validateBuiltin, validateLabels } from "./builtins.js";
import { type FieldError, invalid } from "./errors.js";
import { apiVersionOf, type CrdLike, type KindInfo, kindsOfCrd } from "./kinds.js";
import type { Obj } from "./objects.js";
import { applyDefaults, checkEmulated, prune, validate } from "./schema.js";
import type { MemoryStore } from "./store.js";

// What every write of an object's body goes through, and what serving a CRD takes.

/** Defaults, pruning and validation: what every write of the object's body goes through. */
export function normalise(kind: KindInfo, object: Obj, old: Obj | undefined): void {
  const errors: FieldError[] = [];
  validateLabels(object.metadata.labels, errors);
  if (kind.schema) {
    const { apiVersion, kind: k, metadata } = object;
    // A copy: with nothing to prune (a root that preserves unknown fields) prune returns `object` itself.
    const pruned = {
      ...(prune(object, {
        ...kind.schema,
        properties: {
          ...((kind.schema.properties as Obj) ?? {}),
          apiVersion: {},
          kind: {},
          metadata: { "x-kubernetes-preserve-unknown-fields": true },
        },
      }) as Obj),
    };
    for (const key of Object.keys(object)) delete object[key];
    Object.assign(object, pruned, { apiVersion, kind: k, metadata });
    applyDefaults(object, kind.schema);
    const { apiVersion: _a, kind: _k, metadata: _m, ...content } = object;
    validate(
      content,
      { ...kind.schema, required: (kind.schema.required as string[] | undefined) ?? [] },
      "",
      errors,
    );
    for (const e of errors) e.field = e.field.replace(/^\./, "");
    for (const e of errors) e.message = e.message.replaceAll(/: \.([a-zA-Z])/g, ": $1");
    celRules(kind.schema, object, old, errors);
  } else {
    applyBuiltinDefaults(apiVersionOf(kind), kind.kind, object);
    validateBuiltin(apiVersionOf(kind), kind.kind, object, errors);
  }
  if (errors.length) throw invalid(kind.group, kind.kind, String(object.metadata.name ?? ""), errors);
}

/** Schema errors that stop the server from running CEL rules (apiextensions' hasBlockingErr). */
const BLOCKING = new Set([
  "FieldValueNotSupported",
  "FieldValueRequired",
  "FieldValueTooLong",
  "FieldValueTooMany",
  "FieldValueTypeInvalid",
]);

/** `x-kubernetes-validations`, after the schema's own checks, as the server orders them. */
function celRules(schema: Obj, object: Obj, old: Obj | undefined, errors: FieldError[]): void {
  if (!hasValidationRules(schema)) return;
  if (errors.some((e) => BLOCKING.has(e.type))) {
    errors.push({
      type: "FieldValueInvalid",
      field: "<nil>",
      message:
        "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    });
    return;
  }
  errors.push(...validateRules(object, schema, { ...(old ? { old } : {}), resourceRoot: true }));
}

export function checkCrd(crd: Obj): void {
  for (const version of (crd.spec?.versions as Obj[] | undefined) ?? [])
    checkEmulated((version.schema?.openAPIV3Schema as Obj | undefined) ?? {});
}

export function serveCrd(s: MemoryStore, crd: Obj): void {
  for (const kind of kindsOfCrd(crd as CrdLike)) s.addKind(kind);
  crd.status = {
    acceptedNames: {
      ...crd.spec.names,
      singular: crd.spec.names.singular ?? crd.spec.names.kind.toLowerCase(),
      listKind: `${crd.spec.names.kind}List`,
    },
    conditions: [],
    storedVersions: [crd.spec.versions.find((v: Obj) => v.storage)?.name],
  };
}

export function listTypes(kind: KindInfo): ListTypes {
  return kind.schema ? schemaListTypes(kind.schema) : builtinListTypes(kind);
}
