import { agentsMd } from "./agents.js";
import { E2E_CONFIG, E2E_CONFIG_PATH, E2E_TEST, E2E_TEST_PATH } from "./e2e.js";
import { newRecord } from "./record.js";
import { KUBELOOP_VERSION, projectDependencies } from "./versions.js";

/**
 * The files `kubeloop init` writes: a project that type-checks, tests on a real API server and
 * runs, before it has a single kind. Every file is what one would write by hand; `create api` then
 * adds one export line to each of the index modules (src/resources.ts, controllers.ts, webhooks.ts),
 * which is how the manager, the tests and `kubeloop generate` all find what it creates.
 *
 * The TypeScript runs as is: Node (≥ 22.18) strips the types, so there is no build output to keep
 * in step with the sources, and `kubeloop run` restarts in a blink. `tsc` only type-checks
 * (`npm run build`); `npm run build:image` (`kubeloop build`) bundles src/main.ts into the image.
 */

export interface ProjectOptions {
  name: string;
  domain: string;
  /** The kubeloop dependency: a version range, or a tarball / folder for a local kubeloop. */
  kubeloopSpec: string;
}

export const INDEX_MODULES = {
  resources: "src/resources.ts",
  controllers: "src/controllers.ts",
  webhooks: "src/webhooks.ts",
} as const;

export function projectFiles(options: ProjectOptions): Map<string, string> {
  return new Map([
    ["package.json", packageJson(options)],
    ["tsconfig.json", TSCONFIG],
    ["vitest.config.ts", VITEST_CONFIG],
    [".gitignore", GITIGNORE],
    ["README.md", readme(options)],
    ["AGENTS.md", agentsMd(options)],
    ["src/main.ts", mainTs(options)],
    [INDEX_MODULES.resources, RESOURCES_INDEX],
    [INDEX_MODULES.controllers, CONTROLLERS_INDEX],
    [INDEX_MODULES.webhooks, WEBHOOKS_INDEX],
    ["test/environment.ts", ENVIRONMENT],
    ["test/config.test.ts", CONFIG_TEST],
    ["test/check.test.ts", CHECK_TEST],
    [E2E_CONFIG_PATH, E2E_CONFIG],
    [E2E_TEST_PATH, E2E_TEST],
  ]);
}

/** What `export {}` placeholders become once the module exports something (see `addExport`). */
export const EMPTY_EXPORT = "export {};\n";

function packageJson({ name, domain, kubeloopSpec }: ProjectOptions): string {
  const json = {
    name,
    version: "0.1.0",
    private: true,
    // The project is its owner's: no licence is chosen for them. UNLICENSED is npm's word for "no
    // rights granted" (licence scanners read a missing field as unknown); set an SPDX id to open it.
    license: "UNLICENSED",
    type: "module",
    description: `${name}: a Kubernetes operator built with kubeloop`,
    engines: { node: ">=22.19" },
    scripts: {
      build: "tsc",
      test: "vitest run",
      "test:e2e": "vitest run --config vitest.e2e.config.ts",
      generate: "kubeloop generate",
      run: "kubeloop run",
      cluster: "kubeloop cluster start --profile cluster",
      start: "node src/main.ts",
      "build:image": "kubeloop build --tarball image.tar",
    },
    kubeloop: {
      name,
      domain,
      resources: INDEX_MODULES.resources,
      controllers: INDEX_MODULES.controllers,
      image: `${name}:dev`,
      namespace: `${name}-system`,
      // What made this project, so `kubeloop upgrade` can make it again (scaffold/record.ts).
      scaffold: newRecord(KUBELOOP_VERSION, name, domain),
    },
    ...projectDependencies(kubeloopSpec),
  };
  return `${JSON.stringify(json, null, 2)}\n`;
}

const TSCONFIG = `{
  // Type-checking only (\`npm run build\`): Node runs the .ts files itself, stripping the types, so
  // imports name the .ts files and the syntax stays erasable (no enums, namespaces or parameter
  // properties, which Node cannot strip).
  "compilerOptions": {
    "target": "es2023",
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "lib": ["es2023"],
    "types": ["node"],
    "strict": true,
    "noUncheckedIndexedAccess": true,
    "noImplicitOverride": true,
    "noFallthroughCasesInSwitch": true,
    "verbatimModuleSyntax": true,
    "erasableSyntaxOnly": true,
    "allowImportingTsExtensions": true,
    "noEmit": true,
    "skipLibCheck": true
  },
  "include": ["src", "test", "vitest.config.ts", "vitest.e2e.config.ts"]
}
`;

const VITEST_CONFIG = `import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // test/e2e runs the image on a real node: npm run test:e2e.
    exclude: [...configDefaults.exclude, "test/e2e/**"],
    // Each test file starts its own API server: separate processes keep them apart.
    pool: "forks",
    // A cold API server takes seconds to start, and the operator a moment to converge.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The manager logs every reconcile at info; LOG_LEVEL=info npm test shows them.
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" },
  },
});
`;

const GITIGNORE = `node_modules/
# The local cluster of \`npm run cluster\` / \`kubeloop run\`: certificates, etcd data, logs.
.kubeloop/
*.log
# \`npm run build:image\`: the image, its SBOM and the licences of what it bundles.
image.tar
image.spdx.json
image.licenses.txt
`;

function readme({ name, domain }: ProjectOptions): string {
  return `# ${name}

\`\`\`sh
npm run run   # the operator on your current cluster (or a local one it starts), restarted on every change
npm test      # its tests, on a real local API server
\`\`\`

A Kubernetes operator built with [kubeloop](https://www.npmjs.com/package/kubeloop). Its API
groups end in \`${domain}\`. Needs Node ≥ 22.19 and \`kubectl\`; the first local API server's binaries
are downloaded from upstream's releases and checked (or from \`KUBELOOP_ASSETS_MIRROR\`), then
cached in \`~/.cache/kubeloop\`; Go ≥ 1.26 is needed only offline with no mirror.

## Add a kind

\`\`\`sh
npx kubeloop create api --group ship --version v1 --kind Widget                       # namespaced
npx kubeloop create api --group ship --version v1 --kind Dock --namespaced=false \\
  --webhook default,validate                                                         # cluster-scoped, with webhooks
\`\`\`

Each writes the resource (\`src/resources/<kind>.ts\`: TypeBox schemas for its spec and status,
from which both its TypeScript types and its CRD come), a controller (\`src/controllers/<kind>.ts\`:
a reconcile that sets \`observedGeneration\` and a \`Ready\` condition — put your logic there), its
webhooks if asked, a sample (\`config/samples/\`) and a test (\`test/<kind>.test.ts\`), and exports
them from \`src/resources.ts\`, \`src/controllers.ts\` and \`src/webhooks.ts\`, where the manager
and the tests pick them up.

## The loop

| command | what it does |
|---|---|
| \`npm run run\` | regenerates \`config/\`, installs the CRDs, runs \`src/main.ts\` against the current kubeconfig context — or starts a local cluster in \`.kubeloop/\` when there is none, and leaves it running for the next time — and restarts it when a file in \`src/\` changes |
| \`npm test\` | the tests: each file starts etcd and kube-apiserver, installs \`config/\`, and runs the manager in-process; \`test/config.test.ts\` fails when \`config/\` is stale |
| \`npm run generate\` | writes \`config/crd\`, \`config/rbac\` (the least the controllers need), \`config/manager\` and \`config/webhook\` from the code, and from them the Helm chart (\`charts/${name}/\`) and the OLM bundle (\`bundle/\`) |
| \`npx kubeloop check\` | scorecard-like checks of \`config/\` (CRD schemas and descriptions, spec/status, status subresource, RBAC without wildcards); \`--live\` also runs the manager on a local cluster with each sample and checks owner references and cleanup (\`test/check.test.ts\` runs it) |
| \`npm run test:e2e\` | the operator as it ships (needs root): builds its image, starts a local cluster with a real node (containerd, runc, kubelet), installs the operator with \`kubeloop deploy\`, and checks its pod is Ready, every sample in \`config/samples\` reaches Ready=True and /metrics answers a reader; everything is stopped after |
| \`npm run build\` | type-checks (Node runs the TypeScript directly; there is nothing to compile) |
| \`npm run build:image\` | the operator's image without Docker (\`kubeloop build\`): bundled, on the pinned Node, non-root, no shell, for amd64 and arm64, in \`image.tar\` with its SBOM; \`npx kubeloop build --push REF\` pushes it |
| \`npm run cluster\` | starts a local cluster (API server, controller manager, scheduler, fake nodes) in the background; \`npx kubeloop cluster stop\` stops it |
| \`npx kubeloop install\` / \`uninstall\` | the CRDs on the current cluster (\`uninstall\` refuses while objects of them exist, unless \`--force\`) |
| \`npx kubeloop deploy --image IMAGE\` / \`undeploy\` | the whole operator (CRDs, RBAC, namespace, Deployment) on the current cluster |
| \`npx kubeloop@latest upgrade\` | takes a newer kubeloop's changes to these files: a 3-way merge with your edits on a new git branch (conflicts marked and listed), then \`config/\` regenerated |

Settings of \`src/main.ts\` (flag or environment): \`--metrics-port\`/\`METRICS_PORT\` (8080),
\`--probe-port\`/\`PROBE_PORT\` (8081), \`--leader-elect\`/\`LEADER_ELECT=true\`. In a cluster,
/metrics is HTTPS and only readers bound to the \`${name}-metrics-reader\` ClusterRole may scrape it
(\`METRICS_SECURE=false\` for plain HTTP); \`config/prometheus\`, \`config/grafana\` and
\`config/network-policy\` hold an opt-in ServiceMonitor, alerts, a dashboard and a NetworkPolicy
(see kubeloop's docs/observability.md).

## Ship it

Build and push the image (no Docker needed: \`kubeloop build\` writes it itself and prints its
digest), then install the generated Helm chart (its version is package.json's; set \`"image"\` in
the \`"kubeloop"\` section to the pushed repository and run \`npm run generate\`):

\`\`\`sh
npx kubeloop build --push registry.example.com/${name}:0.1.0
helm install ${name} ./charts/${name} --namespace ${name}-system --create-namespace \\
  --set manager.image.repository=registry.example.com/${name} --set manager.image.tag=0.1.0
helm upgrade ${name} ./charts/${name} -n ${name}-system --reuse-values --set manager.replicas=3
helm uninstall ${name} -n ${name}-system   # the CRDs, and your objects, stay (crd.keep=true)
\`\`\`

\`charts/${name}/values.yaml\` lists every setting (resources, scheduling, pod security, webhook
certificates: \`self-signed\`, \`cert-manager\` or an existing \`secret\`), and \`values.schema.json\`
rejects a wrong one. For OLM, push the bundle image (\`npx kubeloop build --bundle --push
registry.example.com/${name}-bundle:0.1.0\`). To try it without either: \`npx kubeloop deploy
--image registry.example.com/${name}:0.1.0\`.
`;
}

function mainTs({ name }: ProjectOptions): string {
  return `// The operator's entry point: a Manager running every controller that ./controllers.ts exports and
// serving every webhook that ./webhooks.ts exports. \`kubeloop run\` starts it against your cluster;
// the image runs \`node src/main.ts\`. Settings, by flag or environment (the Deployment sets them):
//   --metrics-port / METRICS_PORT   Prometheus /metrics (default 8080; the Deployment sets 8443)
//   METRICS_SECURE=true|false       HTTPS with TokenReview + SubjectAccessReview (default: true in a
//                                   cluster, plain HTTP on 127.0.0.1 outside one); METRICS_CERT_DIR
//                                   a mounted tls.crt/tls.key instead of a self-signed certificate
//   OTEL_EXPORTER_OTLP_ENDPOINT     send traces there (OpenTelemetry's OTEL_* variables)
//   --probe-port / PROBE_PORT       /healthz and /readyz (default 8081)
//   --leader-elect / LEADER_ELECT=true   only one replica reconciles; the others stand by, warm
//   --kubeconfig                    default: $KUBECONFIG, ~/.kube/config, or the pod's service account
// Webhooks listen on $WEBHOOK_PORT (9443) with the certificate in $WEBHOOK_CERT_DIR; ENABLE_WEBHOOKS=false
// serves none. The Manager reads all of them (optionsFromCommandLine: a flag wins over its variable).
import { Manager, optionsFromCommandLine } from "kubeloop";
import { isWebhookDefinition } from "kubeloop/webhook";
import * as controllers from "./controllers.ts";
import * as webhooks from "./webhooks.ts";

// The name is the Lease's, through which replicas elect the one that reconciles.
const manager = new Manager(optionsFromCommandLine({ name: "${name}" }));
for (const controller of Object.values(controllers)) manager.add(controller);
// (filtered: with no webhooks yet, the module's namespace is empty and its values are unknown)
manager.addWebhooks(...Object.values(webhooks).filter(isWebhookDefinition));
// Runs until SIGTERM or SIGINT, then finishes the reconciles in flight.
await manager.start();
`;
}

const RESOURCES_INDEX = `// The project's custom resources. \`kubeloop create api\` adds a line here for each kind; the
// manager, the tests and \`kubeloop generate\` (which writes config/crd/) use every definition
// this module exports.
${EMPTY_EXPORT}`;

const CONTROLLERS_INDEX = `// The project's controllers. \`kubeloop create api\` adds a line here for each kind; src/main.ts
// runs every controller this module exports, and \`kubeloop generate\` derives config/rbac/ from
// what they read and write.
${EMPTY_EXPORT}`;

const WEBHOOKS_INDEX = `// The project's admission and conversion webhooks. \`kubeloop create api --webhook …\` adds a line
// here; src/main.ts serves every definition this module exports, and \`kubeloop generate\` writes
// config/webhook/ for them.
${EMPTY_EXPORT}`;

const ENVIRONMENT = `import { existsSync } from "node:fs";
import { join } from "node:path";
import { startTestEnvironment, type TestEnvironment } from "kubeloop/testing";
import { isWebhookDefinition } from "kubeloop/webhook";
import * as controllers from "../src/controllers.ts";
import * as webhooks from "../src/webhooks.ts";

/**
 * The operator on a real API server, for one test file: etcd and kube-apiserver are started for it,
 * the CRDs and webhook configurations from config/ are installed (what \`kubeloop generate\` wrote,
 * so the tests check the manifests too), and the manager runs every controller and webhook in this
 * process, as src/main.ts does. Webhooks are served on a local port with a throwaway CA, and the
 * configurations point there instead of at the in-cluster Service.
 */
export type Environment = TestEnvironment;

const root = join(import.meta.dirname, "..");
const existing = (...dirs: string[]) => dirs.map((dir) => join(root, dir)).filter((dir) => existsSync(dir));

export function startEnvironment(): Promise<Environment> {
  return startTestEnvironment({
    crds: existing("config/crd"),
    controllers: Object.values(controllers),
    // (filtered: with no webhooks yet, the module's namespace is empty and its values are unknown)
    webhooks: Object.values(webhooks).filter(isWebhookDefinition),
    webhookManifests: existing("config/webhook"),
  });
}
`;

/** A test of the new project that runs its own `kubeloop` with `args` and expects it to succeed. */
function cliTest(suite: string, title: string, args: string[], shown: string, timeout = ""): string {
  return `import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

describe(${JSON.stringify(suite)}, () => {
  it(${JSON.stringify(title)}, () => {
    const root = join(import.meta.dirname, "..");
    const check = spawnSync(join(root, "node_modules/.bin/kubeloop"), [${args.map((a) => JSON.stringify(a)).join(", ")}], {
      cwd: root,
      encoding: "utf8",
    });
    expect(check.status, ${shown}).toBe(0);
  }${timeout});
});
`;
}

const CHECK_TEST = cliTest(
  "kubeloop check --live",
  "passes: described CRDs with status, least RBAC, owner references on what the operator makes, cleanup",
  ["check", "--live"],
  "check.stdout + check.stderr",
  ", 180_000",
);

const CONFIG_TEST = cliTest(
  "config/",
  "is what `kubeloop generate` writes from the code (run `npm run generate` when this fails)",
  ["generate", "--check"],
  "check.stderr",
);
