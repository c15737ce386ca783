// The `kubeloop` command itself, loaded by main.ts once Node is known to be new enough.
import { assetsCommand } from "./assets.js";
import { checkCommand } from "./check.js";
import { clusterCommand } from "./cluster.js";
import { createCommand } from "./create-api.js";
import { deployCommand, undeployCommand } from "./deploy.js";
import { CliError } from "./errors.js";
import { generateCommand } from "./generate.js";
import { generateTypesCommand } from "./generate-types.js";
import { buildCommand } from "./image/index.js";
import { initCommand } from "./init.js";
import { installCommand, uninstallCommand } from "./install.js";
import { migrateCommand } from "./migrate.js";
import { runCommand } from "./run.js";
import { upgradeCommand } from "./upgrade/index.js";

const USAGE = `kubeloop — the Kubernetes operator framework for TypeScript

Usage:
  kubeloop init [FOLDER] [--name N] [--domain D]   a new operator project
  kubeloop create api --group G --version V --kind K [--namespaced=false] [--webhook default,validate,convert]
  kubeloop run                 run the project's manager on the current cluster (or a local one), restart on change
  kubeloop install|uninstall   the project's CRDs on the current cluster
  kubeloop build [DIR] --tarball FILE | --push REF   the operator's image, without Docker (amd64 + arm64)
  kubeloop deploy [--image I]  the whole operator on the current cluster; undeploy removes it
  kubeloop cluster start [--profile apiserver|cluster|node] [--nodes N] [--dir DIR]
  kubeloop cluster status|stop [--dir DIR]
  kubeloop cluster load ARCHIVE [--dir DIR]   an image tarball into the node profile's nodes
  kubeloop migrate CRD [--retire V]  rewrite a CRD's objects in its storage version, then retire old versions
  kubeloop generate [--check]  write config/ (CRDs, RBAC, manifests), the Helm chart and the OLM bundle
  kubeloop generate types <crd.yaml|URL|name> [--out F]  TypeScript types and a resourceType per served version
  kubeloop check [--live]      scorecard-like checks: CRD schemas, RBAC; with --live owner references and cleanup
  kubeloop upgrade [--to V]    merge a newer kubeloop's scaffold into the project (3-way, on a git branch)
  kubeloop assets build        build the control-plane binaries (cached by version)
  kubeloop assets where        print where each binary comes from

Run \`kubeloop <command> --help\` for a command's options.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "cluster":
      return clusterCommand(rest);
    case "build":
      return buildCommand(rest);
    case "assets":
      return assetsCommand(rest);
    case "init":
      return initCommand(rest);
    case "create":
      return createCommand(rest);
    case "run":
      return runCommand(rest);
    case "install":
      return installCommand(rest);
    case "uninstall":
      return uninstallCommand(rest);
    case "deploy":
      return deployCommand(rest);
    case "undeploy":
      return undeployCommand(rest);
    case "generate":
      return rest[0] === "types" ? generateTypesCommand(rest.slice(1)) : generateCommand(rest);
    case "check":
      return checkCommand(rest);
    case "migrate":
      return migrateCommand(rest);
    case "upgrade":
      return upgradeCommand(rest);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      console.log(USAGE);
      return command === undefined ? 1 : 0;
    default:
      throw new CliError(`unknown command "${command}"\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof CliError) {
      console.error(`kubeloop: ${error.message}`);
      process.exitCode = error.exitCode;
    } else if (
      error instanceof Error &&
      (error.name === "AssetsError" || error.name === "ControlPlaneError")
    ) {
      console.error(`kubeloop: ${error.message}`);
      process.exitCode = 1;
    } else if (String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS_")) {
      // A mistyped option: the message says which; no stack trace.
      console.error(
        `kubeloop: ${(error as Error).message}\nRun \`kubeloop ${process.argv[2] ?? ""} --help\` for its options.`,
      );
      process.exitCode = 1;
    } else {
      console.error(error);
      process.exitCode = 1;
    }
  },
);
