/**
 * AGENTS.md of a new project: what a person or a coding agent working in it needs first — how to
 * build, test and generate, and which files are written by tools and must not be edited by hand.
 */
export function agentsMd({ name }: { name: string }): string {
  return `# AGENTS.md

How to work in ${name}, a Kubernetes operator built with kubeloop (TypeScript, run by Node as is).

## Commands

| what | command |
|---|---|
| install | \`npm install\` |
| type-check (there is no build output: Node strips the types) | \`npm run build\` |
| tests, on a real local API server | \`npm test\` (one file: \`npx vitest run test/<file>.test.ts\`) |
| regenerate CRDs, RBAC, manifests, Helm chart, OLM bundle from the code | \`npm run generate\` |
| run the operator against the current cluster (or a local one), restarting on change | \`npm run run\` |
| add a kind | \`npx kubeloop create api --group G --version V --kind K\` |
| the image, without Docker | \`npm run build:image\` |
| take a newer kubeloop's scaffold (3-way merge on a branch) | \`npx kubeloop@latest upgrade\` |

After changing a resource's schema, a controller's reads and writes, or a webhook, run
\`npm run generate\` and commit what it wrote: \`test/config.test.ts\` fails while \`config/\` is stale.

## Where things are

- \`src/resources/<kind>.ts\`: each kind's TypeBox schemas (its types and its CRD come from them).
- \`src/controllers/<kind>.ts\`: each reconcile. \`src/webhooks/\`: admission and conversion webhooks.
- \`src/resources.ts\`, \`src/controllers.ts\`, \`src/webhooks.ts\`: index modules; the manager,
  the tests and \`kubeloop generate\` use everything they export.
- \`src/main.ts\`: the manager. \`test/\`: the tests (\`test/environment.ts\` starts the API server).

## Do not edit by hand

These are written by \`kubeloop generate\` and are overwritten on its next run (and by
\`kubeloop upgrade\`): \`config/\` (all of it but \`config/samples/\`: crd, rbac, manager, webhook,
prometheus, grafana, network-policy, default), \`charts/${name}/\` and \`bundle/\`. Change the code
and regenerate instead. \`config/samples/\`, \`src/\` and \`test/\` are yours.

\`"kubeloop.scaffold"\` in package.json records what made this project (the kubeloop version, the
\`init\` options, each \`create api\`): \`kubeloop upgrade\` needs it to make the old scaffold again.
Keep it; \`create api\` adds to it.

## Conventions

- ES modules; imports name the \`.ts\` files; only erasable TypeScript (no enums, namespaces or
  parameter properties: Node cannot strip them).
- Tests run against a real kube-apiserver, never a mock; keep them deterministic.
`;
}
