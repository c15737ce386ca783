import { pluralize } from "../../resources/index.js";
import { CliError } from "../errors.js";

/**
 * The names `kubeloop init` and `kubeloop create api` accept, checked up front with the API
 * server's own rules (apimachinery's `IsDNS1035Label`, `IsDNS1123Subdomain`, the CRD validation of
 * kinds and versions), so a bad name fails here with what to type instead — not later as an
 * `Invalid` CRD from a cluster.
 */

const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_LABEL = 63;
const MAX_SUBDOMAIN = 253;
/** Kubernetes API versions: v1, v2, v1alpha1, v1beta2 — what `kubectl` sorts as versions. */
const API_VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
/** An exported TypeScript identifier and a Kubernetes kind at once: `Widget`, `CronJob`, `S3Bucket`. */
const KIND = /^[A-Z][A-Za-z0-9]*$/;

/** Names the generated files import, which a kind of the same name would shadow. */
const IMPORTED_NAMES = new Set(["Type", "Conditions", "ObservedGeneration", "Environment"]);

/** The operator's name: it names a namespace (`<name>-system`), RBAC objects and a Deployment. */
export function checkProjectName(name: string): string {
  if (name.length > MAX_LABEL - "-system".length || !DNS_1123_LABEL.test(name)) {
    throw new CliError(
      `"${name}" is not a valid operator name: use lower-case letters, digits and "-", starting and ending ` +
        `with a letter or digit, at most ${MAX_LABEL - "-system".length} characters (e.g. "widget-operator"). ` +
        "It names Kubernetes objects and the <name>-system namespace. Pass --name.",
    );
  }
  return name;
}

export function checkDomain(domain: string): string {
  if (domain.length > MAX_SUBDOMAIN || !DNS_1123_SUBDOMAIN.test(domain) || !domain.includes(".")) {
    throw new CliError(
      `"${domain}" is not a valid domain: a lower-case DNS name with at least one dot, like "example.com" ` +
        "(the API groups of your kinds end with it)",
    );
  }
  return domain;
}

/** What one `create api` call defines, with every derived name. */
export interface ApiNames {
  /** `ship.example.com`: the group, with the project's domain appended. */
  group: string;
  version: string;
  kind: string;
  /** `widget`: the kind in lower case, for files, the singular name and the controller's name. */
  lower: string;
  plural: string;
  /** `widget`: a TypeScript identifier stem (`Widget` → `widgetController`, `widgetWebhooks`). */
  camel: string;
}

export function apiNames(options: {
  group: string;
  version: string;
  kind: string;
  domain?: string | undefined;
}): ApiNames {
  const { kind, version } = options;
  if (!KIND.test(kind)) {
    throw new CliError(
      `"${kind}" is not a valid kind: use UpperCamelCase letters and digits, starting with a capital ` +
        `letter (e.g. "Widget", "CronJob")`,
    );
  }
  if (IMPORTED_NAMES.has(kind)) {
    throw new CliError(
      `"${kind}" cannot be a kind here: the generated files import a name "${kind}" already. Choose another kind.`,
    );
  }
  const lower = kind.toLowerCase();
  const plural = pluralize(lower);
  for (const [what, name] of [
    ["the kind in lower case", lower],
    ["its plural", plural],
  ] as const) {
    if (name.length > MAX_LABEL || !DNS_1035_LABEL.test(name)) {
      throw new CliError(
        `"${kind}" is not a valid kind: ${what}, "${name}", must be a DNS-1035 label ` +
          `(at most ${MAX_LABEL} characters)`,
      );
    }
  }
  if (!API_VERSION.test(version)) {
    throw new CliError(
      `"${version}" is not a valid API version: use v<N>, v<N>alpha<M> or v<N>beta<M> (e.g. "v1", "v1alpha1", "v2beta3")`,
    );
  }
  if (!DNS_1123_LABEL.test(options.group) && !DNS_1123_SUBDOMAIN.test(options.group)) {
    throw new CliError(
      `"${options.group}" is not a valid group: use lower-case letters, digits, "-" and "." (e.g. "ship"; ` +
        "the project's domain is appended)",
    );
  }
  const group =
    options.domain && !options.group.endsWith(`.${options.domain}`)
      ? `${options.group}.${options.domain}`
      : options.group;
  if (group.length > MAX_SUBDOMAIN || !DNS_1123_SUBDOMAIN.test(group) || !group.includes(".")) {
    throw new CliError(
      `"${group}" is not a valid API group: it must be a DNS subdomain with at least one dot ` +
        `(e.g. "ship.example.com"); pass --group ship with a project domain, or the whole group`,
    );
  }
  if (`${plural}.${group}`.length > MAX_SUBDOMAIN) {
    throw new CliError(`the CRD's name "${plural}.${group}" is longer than ${MAX_SUBDOMAIN} characters`);
  }
  return { group, version, kind, lower, plural, camel: kind[0]?.toLowerCase() + kind.slice(1) };
}
