import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { bundleFiles, CAPABILITY_LEVELS } from "./bundle.js";
import { chartFiles } from "./chart.js";
import { CliError } from "./errors.js";
import { webhookCertSecret, webhookServiceName } from "./manifests.js";
import type { Project } from "./project.js";

/**
 * What `kubeloop generate` writes for shipping a project that has an image: the Helm chart
 * (charts/<name>/) and the OLM bundle (bundle/), both made from the objects it writes to config/.
 */

export interface ShippingInput {
  project: Project;
  name: string;
  namespace: string;
  image: string;
  /** config/'s files (relative to config/) and their objects. */
  config: ReadonlyMap<string, readonly object[]>;
  webhooks: boolean;
}

export interface Shipping {
  /** Absolute path → content. */
  files: Map<string, string>;
  /** The folders that are entirely generated: a generated file there that is no longer wanted goes. */
  roots: string[];
  /** What was made, for `--check`'s summary. */
  parts: string[];
  /**
   * Files generate once wrote and no longer does (bundle.Dockerfile: `kubeloop build --bundle`
   * builds the bundle image now): read so that a generated one is removed, or named by --check.
   */
  retired: string[];
}

export function shippingFiles(input: ShippingInput): Shipping {
  const { project, name } = input;
  const { version, description, homepage, maintainer } = packageInfo(project.root);
  const chartRoot = join(project.root, "charts", name);
  const files = new Map<string, string>();
  const chart = chartFiles({
    name,
    namespace: input.namespace,
    version,
    image: input.image,
    config: input.config,
    ...(description ? { description } : {}),
    ...(input.webhooks
      ? { webhookSecret: webhookCertSecret(name), webhookService: webhookServiceName(name) }
      : {}),
  });
  for (const [file, text] of chart) files.set(join(chartRoot, file), text);
  const bundle = bundleFiles({
    name,
    namespace: input.namespace,
    version,
    image: input.image,
    config: input.config,
    samples: samples(join(project.config, "samples")),
    ...(project.capabilities ? { capabilities: capabilityLevel(project.capabilities, project.root) } : {}),
    ...(description ? { description } : {}),
    ...(homepage ? { homepage } : {}),
    ...(maintainer ? { maintainer } : {}),
  });
  for (const [file, text] of bundle) files.set(join(project.root, file), text);
  return {
    files,
    roots: [chartRoot, join(project.root, "bundle")],
    parts: ["Helm chart", "OLM bundle"],
    retired: [join(project.root, "bundle.Dockerfile")],
  };
}

interface PackageInfo {
  version: string;
  description?: string;
  homepage?: string;
  maintainer?: { name: string; email?: string };
}

function packageInfo(root: string): PackageInfo {
  const path = join(root, "package.json");
  const json = JSON.parse(readFileSync(path, "utf8")) as {
    version?: unknown;
    description?: unknown;
    homepage?: unknown;
    author?: unknown;
  };
  if (typeof json.version !== "string" || !/^\d+\.\d+\.\d+(-[\w.]+)?(\+[\w.]+)?$/.test(json.version)) {
    throw new CliError(
      `${path}: "version" must be a semantic version such as 0.1.0 (it is the Helm chart's and the OLM bundle's version)`,
    );
  }
  const maintainer = authorOf(json.author);
  return {
    version: json.version,
    ...(typeof json.description === "string" && json.description ? { description: json.description } : {}),
    ...(typeof json.homepage === "string" && json.homepage ? { homepage: json.homepage } : {}),
    ...(maintainer ? { maintainer } : {}),
  };
}

/** npm's author: "Name <email> (url)" or { name, email }. */
function authorOf(author: unknown): { name: string; email?: string } | undefined {
  if (typeof author === "string" && author.trim()) {
    const match = /^([^<(]+?)\s*(?:<([^>]+)>)?\s*(?:\(.*\))?$/.exec(author.trim());
    const name = match?.[1]?.trim() ?? author.trim();
    return match?.[2] ? { name, email: match[2] } : { name };
  }
  if (author && typeof author === "object" && typeof (author as { name?: unknown }).name === "string") {
    const { name, email } = author as { name: string; email?: unknown };
    return typeof email === "string" ? { name, email } : { name };
  }
  return undefined;
}

/** The objects of config/samples/*.yaml, for the CSV's alm-examples (none when there is no folder). */
function samples(dir: string): object[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => /\.ya?ml$/.test(file))
    .sort()
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(dir, file), "utf8"))
        .map((document) => document.toJS() as object | null)
        .filter((object): object is object => object !== null),
    );
}

function capabilityLevel(value: string, root: string): string {
  if ((CAPABILITY_LEVELS as readonly string[]).includes(value)) return value;
  throw new CliError(
    `${join(root, "package.json")}: "kubeloop.capabilities" is "${value}"; OLM knows ${CAPABILITY_LEVELS.map((l) => `"${l}"`).join(", ")}`,
  );
}

/** Whether a file on disk was written by `kubeloop generate` (its first line says so). */
export function isGenerated(text: string): boolean {
  const firstLine = text.slice(0, text.indexOf("\n") >>> 0);
  return firstLine.includes("Generated by `kubeloop generate`");
}

/** Every file under these folders, and these single files: absolute path → content. */
export function readGenerated(roots: readonly string[], files: Iterable<string> = []): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else found.set(path, readFileSync(path, "utf8"));
    }
  };
  for (const root of roots) if (existsSync(root)) walk(root);
  for (const file of files)
    if (!found.has(file) && existsSync(file)) found.set(file, readFileSync(file, "utf8"));
  return found;
}
