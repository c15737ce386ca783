// Runs a book block that defines webhooks (`<!-- run with: admission [{sample}, …] -->`): installs its
// exported webhook definitions on an in-memory API server (their kinds served with an open schema)
// and creates each sample through them, printing what was stored (`admitted`) or why it was
// refused (`refused`), for the marker's `prints:`. Any other failure fails the run (exit 1).
// Usage: node admission.ts <block.ts> <samples JSON>.
import { pathToFileURL } from "node:url";
import { ApiError, type KubeObject } from "kubeloop/client";
import { MemoryApiServer } from "kubeloop/testing";
import { isWebhookDefinition } from "kubeloop/webhook";

const print = (line: string) => process.stdout.write(`${line}\n`);
const [file, samplesJson] = process.argv.slice(2);
if (!file || !samplesJson) throw new Error("usage: node admission.ts <block.ts> <samples JSON>");
const block: Record<string, unknown> = await import(pathToFileURL(file).href);
const webhooks = Object.values(block).filter(isWebhookDefinition);
const [webhook] = webhooks;
if (!webhook) throw new Error(`${file} exports no webhook definitions; \`run with: admission\` needs one`);

const { group, version, kind, plural, namespaced } = webhook.resource;
/** Any spec and status: the block's webhooks are what is run, not its schema. */
const open = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
/** The kind's CRD. */
const crd = {
  metadata: { name: `${plural}.${group}` },
  spec: {
    group,
    scope: namespaced ? ("Namespaced" as const) : ("Cluster" as const),
    names: { plural, kind },
    versions: [
      {
        name: version,
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: "object", properties: { spec: open, status: open } } },
        subresources: { status: {} },
      },
    ],
  },
};
const server = new MemoryApiServer({ resources: [crd] });
server.addWebhooks(...webhooks);
const client = server.client();
const samples = [JSON.parse(samplesJson)].flat() as Partial<KubeObject>[];
for (const [i, sample] of samples.entries()) {
  const name = `sample-${i}`;
  try {
    const stored = await client.create({
      apiVersion: `${group}/${version}`,
      kind,
      ...sample,
      metadata: { name, ...(namespaced ? { namespace: "default" } : {}), ...sample.metadata },
    });
    const { metadata, ...rest } = stored as KubeObject & Record<string, unknown>;
    print(`admitted ${name}: ${JSON.stringify({ labels: metadata?.labels, spec: rest.spec })}`);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    print(`refused ${name}: ${error.message}`);
  }
}
