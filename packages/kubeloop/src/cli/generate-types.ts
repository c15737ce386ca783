import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseAllDocuments } from "yaml";
import { Client, refTo } from "../client/index.js";
import { CustomResourceDefinition } from "../k8s/index.js";
import { CliError } from "./errors.js";
import { type CrdSource, crdTypes } from "./typegen/crd.js";

const USAGE = `kubeloop generate types <crd.yaml | URL | CRD name> [--out FILE] [--from MODULE]

TypeScript types and a resourceType for each served version of a CustomResourceDefinition, taken
from a YAML file (all its CRDs), a URL, or by name from the current cluster (kubeconfig as kubectl).
  --out FILE     write there (default: standard output)
  --from MODULE  where resourceType and ObjectMeta come from (default: kubeloop/client)`;

/** `kubeloop generate types`: a CRD's types, as kopium writes them for Rust. */
export async function generateTypesCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: "string" },
      from: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const [source, ...extra] = positionals;
  if (!source || extra.length) throw new CliError(`expected one CRD source\n\n${USAGE}`);
  const crds = await loadCrds(source);
  const text = crdTypes(crds, { source, ...(values.from ? { from: values.from } : {}) });
  if (values.out) {
    writeFileSync(resolve(values.out), text);
    const kinds = crds.map(
      (c) => `${c.spec.names.kind} (${c.spec.versions.filter((v) => v.served).length} version(s))`,
    );
    console.error(`wrote ${values.out}: ${kinds.join(", ")}`);
  } else process.stdout.write(text);
  return 0;
}

async function loadCrds(source: string): Promise<CrdSource[]> {
  if (/^https?:\/\//.test(source)) {
    const response = await fetch(source);
    if (!response.ok) throw new CliError(`${source}: HTTP ${response.status} ${response.statusText}`);
    return crdsIn(await response.text(), source);
  }
  if (existsSync(source)) return crdsIn(readFileSync(source, "utf8"), source);
  if (/\.(ya?ml|json)$/.test(source) || !/^[a-z0-9.-]+\.[a-z0-9.-]+$/.test(source))
    throw new CliError(`${source}: no such file, and not a URL or a CRD name (plural.group)`);
  const client = await Client.connect();
  try {
    return [(await client.get(refTo(CustomResourceDefinition, source))) as unknown as CrdSource];
  } finally {
    await client.close();
  }
}

function crdsIn(text: string, source: string): CrdSource[] {
  const objects = parseAllDocuments(text).flatMap((d) => {
    if (d.errors.length) throw new CliError(`${source}: ${d.errors[0]?.message}`);
    const value = d.toJS() as { kind?: string; items?: unknown[] } | null;
    return value?.kind?.endsWith("List") && Array.isArray(value.items) ? value.items : [value];
  }) as { kind?: string }[];
  const crds = objects.filter((o) => o?.kind === "CustomResourceDefinition") as CrdSource[];
  if (crds.length === 0) throw new CliError(`${source}: no CustomResourceDefinition in it`);
  return crds;
}
