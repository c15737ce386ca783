import { kindKeyOf } from "../../client/index.js";
import type { FieldError } from "./errors.js";

/**
 * What kube-apiserver's registries do for the built-in kinds served here: their defaults (the
 * `SetDefaults_*` functions) and the validation rules emulated. Kinds are listed in kinds.ts;
 * nothing here runs for custom resources.
 */

// Objects here are JSON of any kind, walked by field name; typing every path would hide the logic.
// biome-ignore lint/suspicious/noExplicitAny: internal JSON documents, never part of the public API.
type Obj = Record<string, any>;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/** metadata.name's format: a DNS label for namespaces, a DNS subdomain for the rest. */
export function validateName(kind: string, name: string, errors: FieldError[]): void {
  const label = kind === "Namespace";
  if (name.length > (label ? 63 : 253)) {
    errors.push({
      type: "FieldValueInvalid",
      field: "metadata.name",
      message: `Invalid value: "${name}": must be no more than ${label ? 63 : 253} characters`,
    });
  }
  if (!(label ? DNS_LABEL : DNS_SUBDOMAIN).test(name)) {
    errors.push({
      type: "FieldValueInvalid",
      field: "metadata.name",
      message: `Invalid value: "${name}": ${label ? LABEL_MESSAGE : SUBDOMAIN_MESSAGE}`,
    });
  }
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Label keys without a prefix and label values, as ValidateLabels checks them (`field`: where the labels are). */
export function validateLabels(
  labels: Record<string, unknown> | undefined,
  errors: FieldError[],
  field = "metadata.labels",
): void {
  for (const [key, value] of Object.entries(labels ?? {})) {
    if (!key.includes("/") && (key.length > 63 || !NAME_PART.test(key)))
      errors.push({
        type: "FieldValueInvalid",
        field,
        message: `Invalid value: ${JSON.stringify(key)}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
      });
    if (typeof value !== "string" || value.length > 63 || !LABEL_VALUE.test(value)) {
      errors.push({
        type: "FieldValueInvalid",
        field,
        message: `Invalid value: ${JSON.stringify(value)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
      });
    }
  }
}

/** Defaults of a built-in kind, applied to the object being written (in place). */
export function applyBuiltinDefaults(apiVersion: string, kind: string, object: Obj): void {
  switch (kindKeyOf({ apiVersion, kind }) as string) {
    case "v1/Namespace": {
      const name = object.metadata.name as string;
      object.metadata.labels = { ...object.metadata.labels, "kubernetes.io/metadata.name": name };
      object.spec = { finalizers: ["kubernetes"], ...object.spec };
      object.status = { phase: "Active", ...object.status };
      break;
    }
    case "v1/Secret":
      object.type ??= "Opaque";
      if (object.stringData) {
        const data: Record<string, string> = { ...object.data };
        for (const [k, v] of Object.entries(object.stringData as Record<string, string>))
          data[k] = Buffer.from(v).toString("base64");
        object.data = data;
        delete object.stringData;
      }
      break;
    case "apps/v1/Deployment":
      defaultDeployment(object);
      break;
    default:
      break;
  }
}

function defaultDeployment(object: Obj): void {
  object.spec ??= {};
  const spec = object.spec;
  spec.replicas ??= 1;
  spec.strategy ??= {};
  spec.strategy.type ??= "RollingUpdate";
  if (spec.strategy.type === "RollingUpdate") {
    spec.strategy.rollingUpdate ??= {};
    spec.strategy.rollingUpdate.maxUnavailable ??= "25%";
    spec.strategy.rollingUpdate.maxSurge ??= "25%";
  }
  spec.revisionHistoryLimit ??= 10;
  spec.progressDeadlineSeconds ??= 600;
  if (spec.template) {
    spec.template.metadata ??= {};
    spec.template.spec ??= {};
    defaultPodSpec(spec.template.spec);
  }
  object.status ??= {};
}

/** `SetDefaults_PodSpec` and its containers', for the fields operators commonly set. */
export function defaultPodSpec(spec: Obj): void {
  spec.restartPolicy ??= "Always";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= "ClusterFirst";
  spec.securityContext ??= {};
  spec.schedulerName ??= "default-scheduler";
  for (const list of ["initContainers", "containers"])
    for (const container of (spec[list] as Obj[] | undefined) ?? []) defaultContainer(container);
}

function defaultContainer(container: Obj): void {
  container.terminationMessagePath ??= "/dev/termination-log";
  container.terminationMessagePolicy ??= "File";
  if (container.imagePullPolicy === undefined) {
    const image = String(container.image ?? "");
    const tag = image.includes("@") ? "digest" : /:[^/]+$/.exec(image)?.[0].slice(1);
    container.imagePullPolicy = tag === undefined || tag === "latest" ? "Always" : "IfNotPresent";
  }
  container.resources ??= {};
  for (const port of (container.ports as Obj[] | undefined) ?? []) port.protocol ??= "TCP";
  for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"]) {
    const p = container[probe] as Obj | undefined;
    if (!p) continue;
    p.timeoutSeconds ??= 1;
    p.periodSeconds ??= 10;
    p.successThreshold ??= 1;
    p.failureThreshold ??= 3;
    if (p.httpGet) p.httpGet.scheme ??= "HTTP";
  }
}

/** The validation rules emulated for built-in kinds (beyond metadata). */
export function validateBuiltin(apiVersion: string, kind: string, object: Obj, errors: FieldError[]): void {
  if (kindKeyOf({ apiVersion, kind }) !== "apps/v1/Deployment") return;
  const spec = object.spec ?? {};
  if (!spec.selector) {
    errors.push({ type: "FieldValueRequired", field: "spec.selector", message: "Required value" });
  } else {
    const labels = spec.template?.metadata?.labels ?? {};
    const matchLabels = spec.selector.matchLabels ?? {};
    const matches = Object.entries(matchLabels).every(([k, v]) => labels[k] === v);
    if (!matches)
      errors.push({
        type: "FieldValueInvalid",
        field: "spec.template.metadata.labels",
        message: `Invalid value: ${goMap(labels)}: \`selector\` does not match template \`labels\``,
      });
  }
  const containers = (spec.template?.spec?.containers as Obj[] | undefined) ?? [];
  if (containers.length === 0)
    errors.push({
      type: "FieldValueRequired",
      field: "spec.template.spec.containers",
      message: "Required value",
    });
  containers.forEach((c, i) => {
    if (!c.image)
      errors.push({
        type: "FieldValueRequired",
        field: `spec.template.spec.containers[${i}].image`,
        message: "Required value",
      });
  });
  if (typeof spec.replicas === "number" && spec.replicas < 0)
    errors.push({
      type: "FieldValueInvalid",
      field: "spec.replicas",
      message: `Invalid value: ${spec.replicas}: must be greater than or equal to 0`,
    });
}

/** Go's `map[string]string` %v rendering: `map[string]string{"a":"b"}`. */
function goMap(map: Record<string, string>): string {
  const entries = Object.keys(map)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(map[k])}`);
  return `{${entries.join(",")}}`;
}

/** The selectable field values of an object: metadata.name/namespace plus the kind's own. */
export function fieldValues(object: Obj, fields: string[]): Record<string, string> {
  const values: Record<string, string> = {
    "metadata.name": object.metadata?.name ?? "",
    "metadata.namespace": object.metadata?.namespace ?? "",
  };
  for (const field of fields) {
    let node: unknown = object;
    for (const part of field.split(".")) node = (node as Obj | undefined)?.[part];
    values[field] = node === undefined || node === null ? "" : String(node);
  }
  return values;
}
