import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CliError } from "./errors.js";

/**
 * A kubeloop project: the `"kubeloop"` section of its package.json says where its resources,
 * controllers and webhooks are and how it deploys, so that `kubeloop generate`, `install`, `run`
 * and `deploy` need no flags.
 *
 * @example
 * ```json
 * "kubeloop": {
 *   "name": "nginx-operator",
 *   "resources": "src/resources.ts",
 *   "controllers": "src/nginx.ts",
 *   "webhooks": "src/webhooks.ts",
 *   "image": "ghcr.io/example/nginx-operator:0.1.0"
 * }
 * ```
 */
export interface Project {
  /** The folder holding package.json. */
  root: string;
  /** The operator's name: its RBAC objects, Deployment, Services (default: the package's name). */
  name: string;
  domain?: string;
  /** Absolute paths of the modules that export the definitions. */
  resources: string;
  controllers?: string;
  webhooks?: string;
  /** The manager's image, for the deploy manifests. */
  image?: string;
  /** Where it deploys (default `<name>-system`). */
  namespace: string;
  /**
   * The namespaces it watches (the Manager's `namespaces`, `WATCH_NAMESPACE`): RBAC becomes a
   * Role and RoleBinding in each instead of a ClusterRole. Default: all namespaces.
   */
  namespaces?: string[];
  /** The generated config folder (default `config`). */
  config: string;
  /** The OLM capability level the bundle claims (default `Basic Install`; see docs/shipping.md). */
  capabilities?: string;
  /** The page of the operator's runbooks, linked from each generated alert (see docs/observability.md). */
  runbooks?: string;
  /** `MIN-MAX`: a sharded operator and its autoscaler's bounds, as `generate --sharding`. */
  sharding?: string;
  /** `METRIC[=TARGET]`: what that autoscaler scales on, as `generate --autoscale`. */
  autoscale?: string;
  /** `REGION[=REPLICAS][@REGISTRY],…`: Karmada policies for these regions, as `generate --karmada`. */
  karmada?: string;
}

interface ProjectSection {
  name?: string;
  domain?: string;
  resources?: string;
  controllers?: string;
  webhooks?: string;
  image?: string;
  namespace?: string;
  namespaces?: string[];
  /** Read by `kubeloop build` (see its `packages` option). */
  imagePackages?: string[];
  config?: string;
  capabilities?: string;
  runbooks?: string;
  sharding?: string;
  autoscale?: string;
  scaffold?: unknown;
  karmada?: string;
}

const FIELDS = new Set([
  "name",
  "domain",
  "resources",
  "controllers",
  "webhooks",
  "image",
  "imagePackages",
  "namespace",
  "namespaces",
  "config",
  "capabilities",
  "runbooks",
  "sharding",
  "autoscale",
  "scaffold",
  "karmada",
]);

/** The project `cwd` is in (searching upwards), or a CliError that says how to make one. */
export function loadProject(cwd: string = process.cwd()): Project {
  const found = findProject(resolve(cwd));
  if (!found) {
    throw new CliError(
      `not a kubeloop project (no "kubeloop" section in a package.json here or above ${resolve(cwd)}) — run \`kubeloop init\` to create one`,
    );
  }
  const { root, packageName, section } = found;
  for (const key of Object.keys(section)) {
    if (!FIELDS.has(key)) {
      throw new CliError(
        `${join(root, "package.json")}: unknown field "kubeloop.${key}" (known: ${[...FIELDS].join(", ")})`,
      );
    }
    // What made the project (`kubeloop upgrade` reads it): scaffold/record.ts checks its fields.
    if (key === "scaffold") {
      if (typeof section.scaffold !== "object" || section.scaffold === null)
        throw new CliError(`${join(root, "package.json")}: "kubeloop.scaffold" must be an object`);
      continue;
    }
    // Lists: the namespaces watched, and the Debian packages `kubeloop build` adds to the image.
    if (key === "namespaces" || key === "imagePackages") {
      const list = section[key] as unknown;
      if (!Array.isArray(list) || !list.every((item) => typeof item === "string"))
        throw new CliError(`${join(root, "package.json")}: "kubeloop.${key}" must be an array of strings`);
      continue;
    }
    if (typeof section[key as keyof ProjectSection] !== "string") {
      throw new CliError(`${join(root, "package.json")}: "kubeloop.${key}" must be a string`);
    }
  }
  const name = section.name ?? packageName?.replace(/^@[^/]+\//, "");
  if (!name) throw new CliError(`${join(root, "package.json")}: set "kubeloop.name" (or the package's name)`);
  const path = (value: string | undefined) => (value === undefined ? undefined : resolve(root, value));
  return {
    root,
    name,
    ...(section.domain ? { domain: section.domain } : {}),
    resources: resolve(root, section.resources ?? "src/resources.ts"),
    ...optional("controllers", path(section.controllers)),
    ...optional("webhooks", path(section.webhooks)),
    ...optional("image", section.image),
    namespace: section.namespace ?? `${name}-system`,
    ...optional("namespaces", section.namespaces),
    config: resolve(root, section.config ?? "config"),
    ...optional("capabilities", section.capabilities),
    ...optional("runbooks", section.runbooks),
    ...optional("sharding", section.sharding),
    ...optional("autoscale", section.autoscale),
    ...optional("karmada", section.karmada),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function findProject(
  start: string,
): { root: string; packageName: string | undefined; section: ProjectSection } | undefined {
  for (let dir = start; ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      let json: { name?: string; kubeloop?: unknown };
      try {
        json = JSON.parse(readFileSync(file, "utf8")) as typeof json;
      } catch (error) {
        throw new CliError(`${file} is not valid JSON: ${(error as Error).message}`);
      }
      if (json.kubeloop !== undefined) {
        if (typeof json.kubeloop !== "object" || json.kubeloop === null || Array.isArray(json.kubeloop)) {
          throw new CliError(`${file}: "kubeloop" must be an object`);
        }
        return { root: dir, packageName: json.name, section: json.kubeloop as ProjectSection };
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}
