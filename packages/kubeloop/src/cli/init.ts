import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { basename, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { CliError } from "./errors.js";
import { regenerate } from "./regenerate.js";
import { checkDomain, checkProjectName } from "./scaffold/names.js";
import { projectFiles } from "./scaffold/project.js";
import { KUBELOOP_VERSION } from "./scaffold/versions.js";
import { writeNewFiles } from "./scaffold/write.js";

/**
 * `kubeloop init`: a new operator project, ready to test and run (see scaffold/project.ts for what
 * it holds). It installs the project's dependencies with npm, the only network it needs.
 */

const USAGE = `Usage:
  kubeloop init [FOLDER] [--name NAME] [--domain DOMAIN] [--skip-install]

  FOLDER          where to create the project (default: the current folder); made if missing
  --name          the operator's name (default: the folder's name): it names the package, the
                  RBAC objects, the Deployment and the <name>-system namespace
  --domain        the domain of the project's API groups (default example.com): --group ship
                  in \`create api\` becomes ship.<domain>
  --kubeloop      the kubeloop dependency to write: a version range (default ^${KUBELOOP_VERSION}), or
                  file:<tarball or folder> for a local build
  --skip-install  write the files only; run \`npm install\` yourself`;

export const DEFAULT_DOMAIN = "example.com";

export async function initCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      domain: { type: "string", default: DEFAULT_DOMAIN },
      kubeloop: { type: "string", default: `^${KUBELOOP_VERSION}` },
      "skip-install": { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length > 1) throw new CliError(`init takes one folder, got: ${positionals.join(" ")}`);
  const started = Date.now();
  const root = resolve(positionals[0] ?? ".");
  const name = checkProjectName(values.name ?? basename(root));
  const domain = checkDomain(values.domain);
  if (existsSync(resolve(root, "package.json"))) {
    throw new CliError(
      `${root} already has a package.json: \`kubeloop init\` makes a new project. ` +
        "Give it a new folder (`kubeloop init my-operator`), or run it in an empty one.",
    );
  }
  mkdirSync(root, { recursive: true });
  console.log(`Creating the operator project "${name}" (API groups under ${domain}) in ${root}`);
  writeNewFiles(root, projectFiles({ name, domain, kubeloopSpec: values.kubeloop }), "kubeloop init");
  const where = relative(process.cwd(), root);
  const cd = where === "" ? [] : [`cd ${where.includes(" ") ? JSON.stringify(where) : where}`];
  if (values["skip-install"]) {
    console.log(`\nNext:\n  ${[...cd, "npm install", "npm run generate"].join("\n  ")}`);
  } else {
    console.log("\nInstalling dependencies (npm install) …");
    const install = spawnSync("npm", ["install", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit" });
    if (install.status !== 0) {
      throw new CliError(
        `npm install failed in ${root} (exit ${install.status ?? install.signal}); the files are written — ` +
          "fix the cause above and run `npm install` there",
      );
    }
    // What does not depend on kinds: the manager's manifests and its leader-election Role.
    console.log("\nGenerating config/ …");
    regenerate(root);
  }
  console.log(`
Done in ${((Date.now() - started) / 1000).toFixed(1)}s. Add a kind, then run it:
  ${[...cd, "npx kubeloop create api --group ship --version v1 --kind Widget", "npm run run", "npm test"].join("\n  ")}`);
  return 0;
}
