import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import type { KubeObject } from "../client/index.js";
import { Client, kindKeyOf, NotFound } from "../client/index.js";
import type { apiextensions_v1 } from "../k8s/index.js";
import { ControlPlane, localWebhookServing, readManifests } from "../testing/index.js";
import { sleep } from "../util/index.js";
import { applyAll, isCrd, readConfig } from "./apply-manifests.js";
import { CliError } from "./errors.js";
import { loadProject, type Project } from "./project.js";

/**
 * `kubeloop check`: scorecard-like checks a project runs in CI (operator-sdk's scorecard and its
 * OLM suite, on what kubeloop generates). The static checks read config/: every CRD version has
 * a schema whose fields are described, with spec and status apart and the status subresource on;
 * the RBAC asks for no wildcard and no deletecollection unless the project declares it
 * (`--allow`). With `--live`, a local cluster (the `cluster` profile, so garbage collection runs)
 * gets the CRDs and the project's manager, each sample of config/samples/ is created, and
 * everything the operator then creates must carry an owner reference back to it and be gone once
 * the sample is deleted.
 */

const USAGE = `Usage:
  kubeloop check [--live] [--allow wildcard,deletecollection] [--timeout SECONDS]

  Static checks of config/ (CRD schemas, descriptions, spec/status, status subresource, RBAC);
  --live       also run the manager on a local cluster with each sample of config/samples/:
               what it creates has owner references, and is gone after the sample is deleted
  --allow      RBAC the project declares it needs: wildcard ("*") and/or deletecollection
  --timeout    how long --live waits for the operator to create and to clean up (default 60)
Exits 1 when a check fails, naming the object, the field and the fix.`;

export interface Finding {
  check: CheckName;
  /** What fails and how to fix it. */
  message: string;
}

export type CheckName =
  | "crd-schema"
  | "crd-descriptions"
  | "crd-spec-status"
  | "crd-status-subresource"
  | "rbac-wildcards"
  | "rbac-deletecollection"
  | "owner-references"
  | "resource-cleanup";

export const STATIC_CHECKS: readonly CheckName[] = [
  "crd-schema",
  "crd-descriptions",
  "crd-spec-status",
  "crd-status-subresource",
  "rbac-wildcards",
  "rbac-deletecollection",
];

export interface StaticOptions {
  /** RBAC the project declares it needs. */
  allow?: readonly ("wildcard" | "deletecollection")[];
}

/** The parts of an OpenAPI schema the description check walks. */
interface SchemaNode {
  type?: string;
  description?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
}

/** A CRD version: the generated type (k8s/), the one CRD shape of the library. */
type CrdVersion = apiextensions_v1.CustomResourceDefinitionVersion;

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  nonResourceURLs?: string[];
}

/** The static checks on a config/ folder's CRDs and RBAC. */
export function staticChecks(config: string, options: StaticOptions = {}): Finding[] {
  const findings: Finding[] = [];
  const allow = new Set(options.allow ?? []);
  const crds = readConfig(config, ["crd"]).filter(isCrd) as unknown as (KubeObject & {
    spec: { names: { kind: string }; versions: CrdVersion[] };
  })[];
  for (const crd of crds) {
    const name = crd.metadata?.name;
    for (const version of crd.spec.versions) {
      const where = `CRD ${name} version ${version.name}`;
      const schema = version.schema?.openAPIV3Schema;
      if (!schema) {
        findings.push({
          check: "crd-schema",
          message: `${where} has no openAPIV3Schema: define the version with a TypeBox schema (defineResource's spec and status).`,
        });
        continue;
      }
      // The generated schema type leaves `items` unknown (it may be a list): walked as one schema.
      const missing = undescribed(schema as SchemaNode, "");
      if (missing.length > 0) {
        findings.push({
          check: "crd-descriptions",
          message: `${where}: no description on ${missing.join(", ")}. Give each field a description in its TypeBox schema (Type.String({ description: "…" })); it is what kubectl explain and the OLM console show.`,
        });
      }
      const top = Object.keys(schema.properties ?? {}).filter(
        (key) => !["apiVersion", "kind", "metadata"].includes(key),
      );
      const missingParts = ["spec", "status"].filter((part) => !top.includes(part));
      const extra = top.filter((key) => key !== "spec" && key !== "status");
      if (missingParts.length > 0 || extra.length > 0) {
        findings.push({
          check: "crd-spec-status",
          message:
            `${where}: ` +
            [
              missingParts.length ? `no ${missingParts.join(" or ")}` : "",
              extra.length ? `fields outside spec and status (${extra.join(", ")})` : "",
            ]
              .filter(Boolean)
              .join("; ") +
            ". Put what the user asks for under spec and what the operator observes under status.",
        });
      }
      if (!version.subresources?.status) {
        findings.push({
          check: "crd-status-subresource",
          message: `${where} has no status subresource: without it a spec update can overwrite status and every status write bumps the generation. Give the resource a status schema (defineResource … status).`,
        });
      }
    }
  }
  const roles = readConfig(config, ["rbac"]).filter((o) => o.kind === "ClusterRole" || o.kind === "Role");
  for (const role of roles) {
    const where = `${role.kind} ${role.metadata?.namespace ? `${role.metadata.namespace}/` : ""}${role.metadata?.name}`;
    for (const rule of ((role as unknown as { rules?: Rule[] }).rules ?? []) as Rule[]) {
      const fields = ["apiGroups", "resources", "verbs", "nonResourceURLs"] as const;
      const wild = fields.filter((field) => rule[field]?.includes("*"));
      if (wild.length > 0 && !allow.has("wildcard")) {
        findings.push({
          check: "rbac-wildcards",
          message: `${where} grants "*" in ${wild.join(", ")} (${describeRule(rule)}): name the groups, resources and verbs the controllers use, or declare it with --allow wildcard.`,
        });
      }
      if (rule.verbs?.includes("deletecollection") && !allow.has("deletecollection")) {
        findings.push({
          check: "rbac-deletecollection",
          message: `${where} grants deletecollection (${describeRule(rule)}): delete objects one by one (or let owner references do it), or declare it with --allow deletecollection.`,
        });
      }
    }
  }
  return findings;
}

function describeRule(rule: Rule): string {
  const groups = (rule.apiGroups ?? []).map((g) => (g === "" ? "core" : g)).join(",");
  return `${groups ? `${groups}/` : ""}${(rule.resources ?? rule.nonResourceURLs ?? []).join(",")}: ${(rule.verbs ?? []).join(",")}`;
}

/** The fields (dotted paths) of spec and status without a description, and the root's. */
function undescribed(node: SchemaNode, path: string): string[] {
  const missing: string[] = [];
  if (path === "" && !node.description) missing.push("the root (the kind's own description)");
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    if (path === "" && (key === "apiVersion" || key === "kind" || key === "metadata")) continue;
    const childPath = path ? `${path}.${key}` : key;
    if (!child.description) missing.push(childPath);
    missing.push(...undescribed(child, childPath));
    if (child.items?.properties) missing.push(...undescribed(child.items, `${childPath}[]`));
  }
  return missing;
}

export interface LiveOptions {
  /**
   * How long to wait for the operator to create, and then to clean up. Default 60 s: the garbage
   * collector of kube-controller-manager rereads discovery every 30 s, so it may take that long to
   * collect the dependents of a kind whose CRD was just installed.
   */
  timeoutMs?: number;
  /** Receives progress lines. */
  onProgress?: (line: string) => void;
}

const NAMESPACE = "kubeloop-check";
/** What no owner reference is expected on: records and coordination, not managed state. */
const NOT_MANAGED = new Set([
  "events",
  "leases",
  "tokenreviews",
  "subjectaccessreviews",
  "selfsubjectaccessreviews",
]);
/** The operator has settled once nothing new appeared for this long. */
const SETTLE_MS = 3_000;
const POLL_MS = 250;

/**
 * The live checks: the project's manager on a fresh local cluster, each sample created and then
 * deleted, watching what the operator makes in between.
 */
export async function liveChecks(project: Project, options: LiveOptions = {}): Promise<Finding[]> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const progress = options.onProgress ?? (() => {});
  const main = join(project.root, "src", "main.ts");
  if (!existsSync(main))
    throw new CliError(`${main} does not exist: --live runs the project's manager from it`);
  if (readConfig(project.config, ["crd"]).filter(isCrd).length === 0) return []; // no kinds yet
  const samplesDir = join(project.config, "samples");
  const samples = existsSync(samplesDir) ? (readManifests([samplesDir]) as KubeObject[]) : [];
  if (samples.length === 0) {
    return [
      {
        check: "owner-references",
        message: `no samples in ${relative(process.cwd(), samplesDir) || samplesDir}: --live creates each one to see what the operator makes; \`kubeloop create api\` writes one per kind.`,
      },
    ];
  }
  const findings: Finding[] = [];
  progress("Starting a local cluster (cluster profile) …");
  const plane = await new ControlPlane({ profile: "cluster" }).start();
  const hasWebhooks = existsSync(join(project.config, "webhook"));
  const serving = hasWebhooks ? await localWebhookServing() : undefined;
  const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  let manager: ChildProcess | undefined;
  try {
    const installed = readConfig(project.config, ["crd", "webhook"]);
    await quietly(() => applyAll(client, serving ? serving.rewrite(installed) : installed));
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } });
    const managed = await managedTypes(client, project.config);
    const before = await inventory(client, managed);
    progress(`Starting the manager: node ${relative(project.root, main)}`);
    manager = startManager(project, main, plane.kubeconfigPath, serving);
    const exited = new Promise<number | null>((resolve) => manager?.on("exit", (code) => resolve(code)));
    // The API server calls the webhooks on every create: a sample sent before the manager's
    // webhook server listens is refused (connection refused), which says nothing of the operator.
    if (serving) await listening(serving.port, exited, timeoutMs);

    const created: KubeObject[] = [];
    for (const sample of samples) {
      const namespaced = await isNamespaced(client, sample);
      const object = {
        ...sample,
        metadata: { ...sample.metadata, ...(namespaced ? { namespace: NAMESPACE } : {}) },
      } as KubeObject;
      created.push(await client.create(object));
      progress(`  created the sample ${sample.kind} ${sample.metadata?.name}`);
    }
    const made = await settle(client, managed, before, created, timeoutMs, exited);
    progress(`  the operator made ${made.length} object${made.length === 1 ? "" : "s"}`);
    findings.push(...unowned(made, created, samples));
    for (const sample of created) {
      await client.delete(typeOf(sample), sample.metadata?.name ?? "", namespaceOf(sample));
    }
    const left = await gone(client, [...created, ...made], timeoutMs);
    for (const object of left) {
      findings.push({
        check: "resource-cleanup",
        message: `${describe(object)} is still there ${timeoutMs / 1000}s after its sample was deleted: give it an owner reference (garbage collection deletes it), or delete it in the reconcile of a deleted object (ctx.gone) behind a finalizer.`,
      });
    }
  } finally {
    if (manager && manager.exitCode === null) {
      manager.kill("SIGTERM");
      await new Promise((resolve) => manager?.once("exit", resolve));
    }
    await client.close();
    serving?.dispose();
    await plane.stop();
  }
  return findings;
}

/** The project's manager, on the local cluster: no leader election, ports the system picks. */
function startManager(
  project: Project,
  main: string,
  kubeconfig: string,
  serving: Awaited<ReturnType<typeof localWebhookServing>> | undefined,
): ChildProcess {
  return spawn(process.execPath, [main], {
    cwd: project.root,
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      METRICS_PORT: "0",
      PROBE_PORT: "0",
      LEADER_ELECT: "false",
      LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
      ...(serving ? { WEBHOOK_PORT: String(serving.port), WEBHOOK_CERT_DIR: serving.certDir } : {}),
      ...(project.namespaces?.length
        ? { WATCH_NAMESPACE: [...project.namespaces, NAMESPACE].join(",") }
        : {}),
    },
  });
}

/** The objects the operator made that name neither a sample nor another object it made as their owner. */
function unowned(made: KubeObject[], created: KubeObject[], samples: KubeObject[]): Finding[] {
  const findings: Finding[] = [];
  const sampleUids = new Set(created.map((o) => o.metadata?.uid ?? ""));
  const madeUids = new Set(made.map((o) => o.metadata?.uid ?? ""));
  for (const object of made) {
    const owners = object.metadata?.ownerReferences ?? [];
    if (!owners.some((owner) => sampleUids.has(owner.uid) || madeUids.has(owner.uid))) {
      findings.push({
        check: "owner-references",
        message: `${describe(object)} was created without an owner reference to the ${samples.map((s) => s.kind).join(" or ")} it was made for: set one (ctx.apply and ctx.create set it for the primary; or setOwner) so it is listed with it and deleted with it.`,
      });
    }
  }
  return findings;
}

async function quietly(work: () => Promise<void>): Promise<void> {
  const log = console.log;
  console.log = () => {};
  try {
    await work();
  } finally {
    console.log = log;
  }
}

interface ManagedType {
  apiVersion: string;
  kind: string;
  namespaced: boolean;
}

/** The types the operator may create, from its generated RBAC (`create` on them). */
async function managedTypes(client: Client, config: string): Promise<ManagedType[]> {
  const rules = readConfig(config, ["rbac"])
    .filter((o) => o.kind === "ClusterRole" || o.kind === "Role")
    .flatMap((o) => ((o as unknown as { rules?: Rule[] }).rules ?? []) as Rule[])
    .filter((rule) => rule.verbs?.includes("create") || rule.verbs?.includes("*"));
  const types = new Map<string, ManagedType>();
  for (const rule of rules) {
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        if (resource.includes("/") || NOT_MANAGED.has(resource) || resource === "*") continue;
        const found = await findResource(client, group, resource);
        if (found) types.set(kindKeyOf(found), found);
      }
    }
  }
  return [...types.values()];
}

/** The kind of a group's resource, from the server's discovery of the group's preferred version. */
async function findResource(
  client: Client,
  group: string,
  resource: string,
): Promise<ManagedType | undefined> {
  const get = async (path: string) => (await client.transport.request({ method: "GET", path })).body;
  let groupVersion = "v1";
  if (group !== "") {
    try {
      const found = (await get(`/apis/${group}`)) as { preferredVersion?: { groupVersion: string } };
      if (!found.preferredVersion) return undefined;
      groupVersion = found.preferredVersion.groupVersion;
    } catch (error) {
      if (error instanceof NotFound) return undefined; // a group not served here (e.g. monitoring.coreos.com)
      throw error;
    }
  }
  const list = (await get(group === "" ? "/api/v1" : `/apis/${groupVersion}`)) as {
    resources: { name: string; kind: string; namespaced: boolean }[];
  };
  const found = list.resources.find((r) => r.name === resource);
  return found ? { apiVersion: groupVersion, kind: found.kind, namespaced: found.namespaced } : undefined;
}

async function inventory(client: Client, types: ManagedType[]): Promise<Map<string, KubeObject>> {
  const objects = new Map<string, KubeObject>();
  for (const type of types) {
    const list = await client.list(
      { apiVersion: type.apiVersion, kind: type.kind },
      type.namespaced ? { namespace: NAMESPACE } : {},
    );
    for (const item of list.items as KubeObject[]) {
      objects.set(item.metadata?.uid ?? "", { ...item, apiVersion: type.apiVersion, kind: type.kind });
    }
  }
  return objects;
}

/**
 * What appeared since `before`, once the operator has done something (made an object, or written
 * every sample's status) and nothing new has appeared for {@link SETTLE_MS}.
 */
async function settle(
  client: Client,
  types: ManagedType[],
  before: Map<string, KubeObject>,
  samples: KubeObject[],
  timeoutMs: number,
  exited: Promise<number | null>,
): Promise<KubeObject[]> {
  let managerExit: number | null | undefined;
  void exited.then((code) => {
    managerExit = code;
  });
  const deadline = Date.now() + timeoutMs;
  let count = -1;
  let stableSince = Date.now();
  let made: KubeObject[] = [];
  while (Date.now() < deadline) {
    if (managerExit !== undefined)
      throw new CliError(
        `the manager (src/main.ts) exited with code ${managerExit} during the check; run it with \`kubeloop run\` to see why`,
      );
    made = [...(await inventory(client, types)).values()].filter(
      (o) => !before.has(o.metadata?.uid ?? "") && !writtenByKubernetes(o),
    );
    if (made.length !== count) {
      count = made.length;
      stableSince = Date.now();
    } else if (
      Date.now() - stableSince >= SETTLE_MS &&
      (count > 0 || (await allHaveStatus(client, samples)))
    ) {
      return made;
    }
    await sleep(POLL_MS);
  }
  return made;
}

/** Kubernetes' own writers: what only they wrote (a namespace's kube-root-ca.crt) is not the operator's. */
const KUBERNETES_MANAGERS = new Set([
  "kube-controller-manager",
  "kube-scheduler",
  "kube-apiserver",
  "kubelet",
  "kwok",
]);

function writtenByKubernetes(object: KubeObject): boolean {
  const managers = (object.metadata?.managedFields ?? []).map((entry) => entry.manager ?? "");
  return managers.length > 0 && managers.every((manager) => KUBERNETES_MANAGERS.has(manager));
}

async function allHaveStatus(client: Client, samples: KubeObject[]): Promise<boolean> {
  for (const sample of samples) {
    const current = (await client.get(typeOf(sample), sample.metadata?.name ?? "", namespaceOf(sample))) as {
      status?: object;
    };
    if (!current.status || Object.keys(current.status).length === 0) return false;
  }
  return true;
}

/** Resolves once the manager accepts connections on the loopback `port`; fails if it exits first. */
async function listening(port: number, exited: Promise<number | null>, timeoutMs: number): Promise<void> {
  let exitCode: number | null | undefined;
  void exited.then((code) => {
    exitCode = code;
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (exitCode !== undefined)
      throw new CliError(
        `the manager exited (code ${exitCode}) before its webhook server listened on port ${port}`,
      );
    if (Date.now() > deadline)
      throw new CliError(
        `the manager's webhook server did not listen on port ${port} within ${timeoutMs / 1000}s`,
      );
    await sleep(200);
  }
}

/** The objects still present after `timeoutMs` (none when all went). */
async function gone(client: Client, objects: KubeObject[], timeoutMs: number): Promise<KubeObject[]> {
  const deadline = Date.now() + timeoutMs;
  let left = objects;
  while (left.length > 0 && Date.now() < deadline) {
    const still: KubeObject[] = [];
    for (const object of left) {
      try {
        await client.get(typeOf(object), object.metadata?.name ?? "", namespaceOf(object));
        still.push(object);
      } catch (error) {
        if (!(error instanceof NotFound)) throw error;
      }
    }
    left = still;
    if (left.length > 0) await sleep(POLL_MS);
  }
  return left;
}

async function isNamespaced(client: Client, object: KubeObject): Promise<boolean> {
  const info = await client.resolve(typeOf(object));
  return info.namespaced;
}

const typeOf = (object: KubeObject) => ({ apiVersion: object.apiVersion ?? "", kind: object.kind ?? "" });
const namespaceOf = (object: KubeObject) =>
  object.metadata?.namespace ? { namespace: object.metadata.namespace } : {};
const describe = (object: KubeObject) =>
  `${object.kind} ${object.metadata?.namespace ? `${object.metadata.namespace}/` : ""}${object.metadata?.name}`;

export async function checkCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      live: { type: "boolean", default: false },
      allow: { type: "string" },
      timeout: { type: "string", default: "60" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const allow = (values.allow ?? "")
    .split(",")
    .map((a) => a.trim())
    .filter(Boolean);
  for (const entry of allow) {
    if (entry !== "wildcard" && entry !== "deletecollection")
      throw new CliError(`--allow ${entry}: allowed are "wildcard" and "deletecollection"`);
  }
  const timeout = Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0)
    throw new CliError(`--timeout ${values.timeout}: give seconds, e.g. 60`);
  const project = loadProject();
  if (!existsSync(project.config))
    throw new CliError(`${project.config} does not exist: run \`kubeloop generate\` first`);
  const findings = staticChecks(project.config, { allow: allow as ("wildcard" | "deletecollection")[] });
  const checks: CheckName[] = [...STATIC_CHECKS];
  if (values.live) {
    findings.push(
      ...(await liveChecks(project, { timeoutMs: timeout * 1000, onProgress: (line) => console.log(line) })),
    );
    checks.push("owner-references", "resource-cleanup");
  }
  for (const check of checks) {
    const failed = findings.filter((f) => f.check === check);
    console.log(`${failed.length === 0 ? "pass" : "FAIL"}  ${check}`);
    for (const finding of failed) console.log(`      ${finding.message}`);
  }
  return findings.length === 0 ? 0 : 1;
}
