import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CliError } from "../errors.js";
import { WEBHOOK_PARTS, type WebhookPart } from "./api.js";

/**
 * What made a project, kept in package.json as `"kubeloop": { "scaffold": … }`: the kubeloop version
 * that scaffolded it, the options of `kubeloop init`, and each `kubeloop create api`, in order. That is
 * enough to make the same scaffold again with any kubeloop version, which is what `kubeloop upgrade`
 * does with the old version and the new one before merging their difference into the project.
 *
 * @example
 * ```json
 * "scaffold": {
 *   "version": "0.1.0",
 *   "init": { "name": "demo-operator", "domain": "example.com" },
 *   "apis": [{ "group": "ship", "version": "v1", "kind": "Widget", "namespaced": true, "webhooks": [] }]
 * }
 * ```
 */
export interface ScaffoldRecord {
  version: string;
  init: { name: string; domain: string };
  apis: ScaffoldApi[];
}

/** One `kubeloop create api`, with its flags as given. */
export interface ScaffoldApi {
  group: string;
  version: string;
  kind: string;
  namespaced: boolean;
  webhooks: WebhookPart[];
}

export function newRecord(version: string, name: string, domain: string): ScaffoldRecord {
  return { version, init: { name, domain }, apis: [] };
}

interface PackageJson {
  kubeloop?: { scaffold?: unknown };
}

/** The project's record, or a CliError saying what is missing and how to add it. */
export function readRecord(root: string): ScaffoldRecord {
  const file = join(root, "package.json");
  const record = (JSON.parse(readFileSync(file, "utf8")) as PackageJson).kubeloop?.scaffold;
  const problem = recordProblem(record);
  if (problem) {
    throw new CliError(
      `${file}: ${problem}. \`kubeloop upgrade\` re-makes the scaffold from "kubeloop.scaffold", which ` +
        "`kubeloop init` writes; for a project made before it did, add it by hand, e.g. " +
        '"scaffold": { "version": "<the kubeloop version that made the project>", "init": { "name": "<name>", ' +
        '"domain": "<domain>" }, "apis": [{ "group": "ship", "version": "v1", "kind": "Widget", ' +
        '"namespaced": true, "webhooks": [] }] } — one entry per `kubeloop create api` you ran',
    );
  }
  return record as ScaffoldRecord;
}

function recordProblem(record: unknown): string | undefined {
  if (typeof record !== "object" || record === null) return 'there is no "kubeloop.scaffold"';
  const { version, init, apis } = record as Partial<ScaffoldRecord>;
  if (typeof version !== "string") return '"kubeloop.scaffold.version" must be a version';
  if (typeof init?.name !== "string" || typeof init.domain !== "string")
    return '"kubeloop.scaffold.init" must hold "name" and "domain"';
  if (!Array.isArray(apis)) return '"kubeloop.scaffold.apis" must be an array';
  for (const api of apis) {
    const ok =
      typeof api?.group === "string" &&
      typeof api.version === "string" &&
      typeof api.kind === "string" &&
      typeof api.namespaced === "boolean" &&
      Array.isArray(api.webhooks) &&
      api.webhooks.every((part) => WEBHOOK_PARTS.includes(part));
    if (!ok)
      return `"kubeloop.scaffold.apis" has an entry that is not { group, version, kind, namespaced, webhooks }: ${JSON.stringify(api)}`;
  }
  return undefined;
}

/** Adds a `create api` to the record, when the project has one (a project made by hand has none). */
export function recordApi(root: string, api: ScaffoldApi): void {
  const file = join(root, "package.json");
  const json = JSON.parse(readFileSync(file, "utf8")) as { kubeloop: { scaffold?: ScaffoldRecord } };
  if (!json.kubeloop.scaffold || !Array.isArray(json.kubeloop.scaffold.apis)) return;
  json.kubeloop.scaffold.apis.push(api);
  writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
}

/** The command lines that re-make the scaffold: `init`'s then each `create api`'s arguments. */
export function replay(record: ScaffoldRecord, version: string, folder: string): string[][] {
  const init = ["init", folder, "--name", record.init.name, "--domain", record.init.domain];
  return [
    [...init, "--kubeloop", `^${version}`, "--skip-install"],
    ...record.apis.map((api) => [
      ...["create", "api", "--group", api.group, "--version", api.version, "--kind", api.kind],
      `--namespaced=${api.namespaced}`,
      ...(api.webhooks.length > 0 ? ["--webhook", api.webhooks.join(",")] : []),
    ]),
  ];
}
