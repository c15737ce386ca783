import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import { CliError } from "./errors.js";
import { loadProject } from "./project.js";
import { kubeloopResolvesFrom, regenerate } from "./regenerate.js";
import { apiFiles, WEBHOOK_PARTS, type WebhookPart } from "./scaffold/api.js";
import { apiNames } from "./scaffold/names.js";
import { INDEX_MODULES } from "./scaffold/project.js";
import { recordApi } from "./scaffold/record.js";
import { addExport, writeNewFiles } from "./scaffold/write.js";

/**
 * `kubeloop create api`: a new kind in the current project — its resource, controller, optional
 * webhooks, a sample and a test — exported from the index modules the manager and the tests read,
 * then `kubeloop generate` so config/ has its CRD and RBAC at once.
 */

const USAGE = `Usage:
  kubeloop create api --group GROUP --version VERSION --kind KIND [--namespaced=false]
                      [--webhook default,validate,convert]

  --group       the API group: "ship" becomes ship.<the project's domain>; a name with the domain is kept
  --version     the API version: v1, v1alpha1, v2beta3, …
  --kind        the kind, in UpperCamelCase: Widget, CronJob, …
  --namespaced  whether objects live in a namespace (default true); --namespaced=false for cluster-scoped
  --webhook     also scaffold webhooks: default (mutating), validate, convert (comma-separated)`;

export async function createCommand(argv: string[]): Promise<number> {
  const [what, ...rest] = argv;
  if (what === "api") return createApi(rest);
  if (what === undefined || what === "--help" || what === "-h") {
    console.log(USAGE);
    return what === undefined ? 1 : 0;
  }
  throw new CliError(`unknown create command "${what}" (there is \`kubeloop create api\`)\n\n${USAGE}`);
}

async function createApi(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    // `--namespaced` alone means true; `--namespaced=false` is the way to say false.
    args: argv.map((arg) => (arg === "--namespaced" ? "--namespaced=true" : arg)),
    options: {
      group: { type: "string" },
      version: { type: "string" },
      kind: { type: "string" },
      namespaced: { type: "string", default: "true" },
      webhook: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const missing = (["group", "version", "kind"] as const).filter((flag) => !values[flag]);
  if (missing.length > 0) {
    throw new CliError(`missing ${missing.map((flag) => `--${flag}`).join(", ")}\n\n${USAGE}`);
  }
  if (values.namespaced !== "true" && values.namespaced !== "false") {
    throw new CliError(`--namespaced must be true or false, got "${values.namespaced}"`);
  }
  const webhooks = parseWebhooks(values.webhook);
  const project = loadProject();
  const names = apiNames({
    group: values.group ?? "",
    version: values.version ?? "",
    kind: values.kind ?? "",
    domain: project.domain,
  });
  const { root } = project;
  const scaffold = apiFiles({
    names,
    namespaced: values.namespaced === "true",
    webhooks,
    operator: project.name,
  });
  const existing = existingKind(project.resources, names.kind, join(root, scaffold.exports.resources.file));
  if (existing) {
    throw new CliError(
      `the kind ${names.kind} exists already in this project (${relative(root, existing)}). ` +
        "Choose another kind; to change this one, edit its files and run `npm run generate`.",
    );
  }
  console.log(
    `Creating ${names.kind} (${names.group}/${names.version}, ${values.namespaced === "true" ? "namespaced" : "cluster-scoped"})`,
  );
  writeNewFiles(root, scaffold.files, "kubeloop create api");
  const controllers = project.controllers ?? join(root, INDEX_MODULES.controllers);
  const webhooksModule = project.webhooks ?? join(root, INDEX_MODULES.webhooks);
  addExport(root, project.resources, scaffold.exports.resources);
  addExport(root, controllers, scaffold.exports.controllers);
  if (scaffold.exports.webhooks) addExport(root, webhooksModule, scaffold.exports.webhooks);
  recordModules(root, {
    controllers: project.controllers ? undefined : INDEX_MODULES.controllers,
    webhooks: scaffold.exports.webhooks && !project.webhooks ? INDEX_MODULES.webhooks : undefined,
  });
  recordApi(root, {
    group: values.group ?? "",
    version: values.version ?? "",
    kind: values.kind ?? "",
    namespaced: values.namespaced === "true",
    webhooks,
  });
  if (kubeloopResolvesFrom(root)) {
    console.log("Generating config/ …");
    regenerate(root);
  } else {
    console.log("kubeloop is not installed here yet: run `npm install`, then `npm run generate`.");
  }
  console.log(`
${names.kind} is ready. Next:
  edit ${scaffold.exports.resources.file} (its spec and status) and ${scaffold.exports.controllers.file} (its reconcile)
  npm test                                  # its test, test/${names.lower}.test.ts
  npm run run                               # the operator, restarted on every change
  kubectl apply -f ${scaffold.sample}   # in another terminal`);
  return 0;
}

function parseWebhooks(value: string | undefined): WebhookPart[] {
  if (value === undefined) return [];
  const parts = value
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
  for (const part of parts) {
    if (!WEBHOOK_PARTS.includes(part as WebhookPart)) {
      throw new CliError(`--webhook: unknown part "${part}" (the parts are ${WEBHOOK_PARTS.join(", ")})`);
    }
  }
  if (parts.length === 0) throw new CliError(`--webhook needs one or more of ${WEBHOOK_PARTS.join(", ")}`);
  return WEBHOOK_PARTS.filter((part) => parts.includes(part));
}

/** The file that already defines this kind, if any: its own module, or an export of that name. */
function existingKind(resourcesIndex: string, kind: string, ownFile: string): string | undefined {
  if (existsSync(ownFile)) return ownFile;
  if (existsSync(resourcesIndex)) {
    const text = readFileSync(resourcesIndex, "utf8");
    if (new RegExp(`\\b(export\\s+(const|\\{[^}]*\\b)\\s*${kind}\\b)`).test(text)) return resourcesIndex;
  }
  return undefined;
}

/** Notes index modules the package.json's "kubeloop" section does not name yet. */
function recordModules(
  root: string,
  modules: { controllers?: string | undefined; webhooks?: string | undefined },
) {
  const additions = Object.entries(modules).filter(([, path]) => path !== undefined);
  if (additions.length === 0) return;
  const file = join(root, "package.json");
  const json = JSON.parse(readFileSync(file, "utf8")) as { kubeloop: Record<string, string> };
  for (const [key, path] of additions) json.kubeloop[key] = path as string;
  writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`  updated package.json (kubeloop.${additions.map(([key]) => key).join(", kubeloop.")})`);
}
