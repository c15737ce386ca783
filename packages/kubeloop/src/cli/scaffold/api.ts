import type { ApiNames } from "./names.js";

/**
 * The files `kubeloop create api` writes for one kind: its resource definition, a controller whose
 * reconcile already does the honest minimum (observedGeneration and a Ready condition), optional
 * webhooks, a sample object and a test of it on a real API server.
 */

export type WebhookPart = "default" | "validate" | "convert";
export const WEBHOOK_PARTS: readonly WebhookPart[] = ["default", "validate", "convert"];

export interface ApiOptions {
  names: ApiNames;
  namespaced: boolean;
  webhooks: readonly WebhookPart[];
  /** The operator's name: it labels what the defaulting webhook touches. */
  operator: string;
}

export interface Export {
  name: string;
  file: string;
}

export interface ApiFiles {
  /** New files, by path relative to the project. */
  files: Map<string, string>;
  /** What the index modules (src/resources.ts, …) export from the new files: name and file. */
  exports: { resources: Export; controllers: Export; webhooks?: Export };
  sample: string;
}

export function apiFiles(options: ApiOptions): ApiFiles {
  const { lower } = options.names;
  const sample = samplePath(options.names);
  const files = new Map([
    [`src/resources/${lower}.ts`, resource(options)],
    [`src/controllers/${lower}.ts`, controllerTs(options)],
    [sample, sampleYaml(options)],
    [`test/${lower}.test.ts`, testTs(options)],
    [`test/${lower}.unit.test.ts`, unitTestTs(options)],
  ]);
  if (options.webhooks.length > 0) files.set(`src/webhooks/${lower}.ts`, webhooksTs(options));
  const { kind, camel } = options.names;
  return {
    files,
    exports: {
      resources: { name: kind, file: `src/resources/${lower}.ts` },
      controllers: { name: `${camel}Controller`, file: `src/controllers/${lower}.ts` },
      ...(options.webhooks.length > 0
        ? { webhooks: { name: `${camel}Webhooks`, file: `src/webhooks/${lower}.ts` } }
        : {}),
    },
    sample,
  };
}

/** kubebuilder's naming: config/samples/<group's first label>_<version>_<kind>.yaml. */
export function samplePath({ group, version, lower }: ApiNames): string {
  return `config/samples/${group.split(".")[0]}_${version}_${lower}.yaml`;
}

export function sampleName({ lower }: ApiNames): string {
  return `${lower}-sample`;
}

function resource({ names, namespaced }: ApiOptions): string {
  const { group, version, kind } = names;
  return `import { Conditions, defineResource, ObservedGeneration } from "kubeloop/resources";
import Type from "typebox";

/**
 * The ${kind} custom resource (${group}/${version}), defined once: \`kubeloop generate\` writes its
 * CRD to config/crd/ from this definition, and the controller reads ${kind} objects with exactly
 * these types. Change the schemas, then run \`npm run generate\`; the API server enforces what
 * they say (types, ranges, defaults) before the controller ever sees an object.
 */
export const ${kind} = defineResource({
  group: "${group}",
  version: "${version}",
  kind: "${kind}",${namespaced ? "" : `\n  scope: "Cluster",`}
  description: "A ${kind}.",
  spec: Type.Object(
    {
      // An example field: replace it with what a ${kind} needs.
      size: Type.Integer({ minimum: 1, maximum: 10, default: 1, description: "An example setting (1–10)." }),
    },
    { description: "The desired state, written by the user." },
  ),
  status: Type.Object(
    {
      observedGeneration: Type.Optional(ObservedGeneration()),
      conditions: Type.Optional(Conditions()),
    },
    { description: "The observed state, written by the operator." },
  ),
  printerColumns: [
    { name: "Size", type: "integer", jsonPath: ".spec.size" },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  ],
});
`;
}

function controllerTs({ names }: ApiOptions): string {
  const { kind, lower, camel } = names;
  return `import { controller, done } from "kubeloop";
import { ${kind} } from "../resources/${lower}.ts";

/**
 * Reconciles ${kind}s. It is called with the latest ${kind} from the cache whenever one changes,
 * and for every existing one when the operator starts; it never sees "events", only the state to
 * reach, so it must be idempotent. Return \`done()\`, \`after("30s")\` to look again later, or
 * throw to be retried with backoff.
 */
export const ${camel}Controller = controller(${kind})
  .named("${lower}")
  .reconcile(async (${camel}, ctx) => {
    if (ctx.gone) return done(); // gone: what it owns goes with it (garbage collection)
    // Drive the world toward ${camel}.spec here, e.g. \`await ctx.apply(deploymentFor(${camel}))\` after
    // declaring \`.owns(Deployment)\` above: server-side apply, with the ${kind} as the child's owner
    // (deleting it deletes the child), and the child's changes reconcile it again.
    ctx.log.info({ size: ${camel}.spec.size }, "reconciling");
    // Report what was observed: observedGeneration says which spec this status describes, and the
    // Ready condition tells users and tools (\`kubectl wait --for=condition=Ready\`) it converged.
    await ctx.status({}, { ready: true });
    return done();
  });
`;
}

function webhooksTs({ names, webhooks, operator }: ApiOptions): string {
  const { kind, lower, camel, version } = names;
  const parts: string[] = [];
  if (webhooks.includes("default")) {
    parts.push(`  // Defaulting: fill in what the user left out and the schema's static defaults cannot (values
  // computed from other fields, the operator's configuration, …). Change the object in place.
  default(${camel}) {
    ${camel}.metadata.labels = { "app.kubernetes.io/managed-by": "${operator}", ...${camel}.metadata.labels };
  },`);
  }
  if (webhooks.includes("validate")) {
    parts.push(`  // Validation: refuse what the schema and CEL rules cannot express; the message is what kubectl
  // shows. Warnings are shown too, but let the write through. An example rule: replace it with yours.
  validate(${camel}, request) {
    const before = request.oldObject?.spec.size;
    if (before !== undefined && ${camel}.spec.size < before) {
      return { allowed: false, message: \`spec.size may not decrease (from \${before} to \${${camel}.spec.size})\` };
    }
    return { allowed: true };
  },`);
  }
  if (webhooks.includes("convert")) {
    parts.push(`  // Conversion: ${version} is the hub that every other version of ${kind} converts through. When you
  // add a version, give its converters here: toHub: { v2: (o) => … }, fromHub: { v2: (o) => … }.
  convert: { hub: "${version}", toHub: {}, fromHub: {} },`);
  }
  return `import { defineWebhooks } from "kubeloop/webhook";
import { ${kind} } from "../resources/${lower}.ts";

/**
 * ${kind}'s webhooks: the manager serves them, and \`kubeloop generate\` writes the configurations
 * that route the API server to them (config/webhook/${webhooks.includes("convert") ? ", and the CRD's conversion section" : ""}).
 */
export const ${camel}Webhooks = defineWebhooks(${kind}, {
${parts.join("\n")}
});
`;
}

function sampleYaml({ names }: ApiOptions): string {
  return `apiVersion: ${names.group}/${names.version}
kind: ${names.kind}
metadata:
  name: ${sampleName(names)}
spec:
  size: 3
`;
}

/**
 * A unit test in milliseconds beside the envtest-style one: the controller against kubeloop's
 * in-memory API server, one reconcile at a time (docs/testing.md).
 */
function unitTestTs({ names, namespaced }: ApiOptions): string {
  const { kind, lower, camel } = names;
  const namespace = namespaced ? `, namespace: "default"` : "";
  return `import { isTrue, type ObjectOf } from "kubeloop";
import { ReconcileHarness } from "kubeloop/testing";
import { afterEach, describe, expect, it } from "vitest";
import { ${camel}Controller } from "../src/controllers/${lower}.ts";
import { ${kind} } from "../src/resources/${lower}.ts";

// Unit tests in milliseconds: the real controller against kubeloop's in-memory API server, one
// reconcile at a time, with a fake clock (h.advance(ms) for after()). Features the in-memory server
// does not emulate are refused with an error; test those in ${lower}.test.ts, on a real API server.

let h: ReconcileHarness<ObjectOf<typeof ${kind}>> | undefined;
afterEach(async () => {
  await h?.stop();
});

describe("${kind} reconciler (in memory)", () => {
  it("reconciles a new ${kind} to Ready=True for its current generation", async () => {
    h = await ReconcileHarness.start(${camel}Controller, { resources: [${kind}] });
    await h.client.create({
      apiVersion: ${kind}.apiVersion,
      kind: "${kind}",
      metadata: { name: "example"${namespace} },
      spec: { size: 2 },
    });
    expect(await h.reconcileUntilIdle()).toEqual([{ key: "${namespaced ? "default/" : ""}example", result: "success" }]);
    const current = await h.client.get(${kind}, "example"${namespaced ? `, { namespace: "default" }` : ""});
    expect(isTrue(current.status?.conditions, "Ready")).toBe(true);
    expect(current.status?.observedGeneration).toBe(current.metadata.generation);
  });
});
`;
}

function testTs(options: ApiOptions): string {
  const { names, namespaced, webhooks } = options;
  const { kind, lower } = names;
  const where = namespaced ? `{ namespace: "default" }` : "{}";
  const webhookTests: string[] = [];
  if (webhooks.includes("default")) {
    webhookTests.push(`  it("is labelled by its defaulting webhook", async () => {
    const current = await read();
    expect(current.metadata.labels?.["app.kubernetes.io/managed-by"]).toBe("${options.operator}");
  });`);
  }
  if (webhooks.includes("validate")) {
    webhookTests.push(`  it("is checked by its validating webhook, which refuses with a message", async () => {
    await expect(patchSpec({ size: 1 })).rejects.toThrow("spec.size may not decrease (from 5 to 1)");
  });`);
  }
  return `import { join } from "node:path";
import { isTrue } from "kubeloop";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ${kind} } from "../src/resources/${lower}.ts";
import { type Environment, startEnvironment } from "./environment.ts";

const sample = join(import.meta.dirname, "../${samplePath(names)}");
const name = "${sampleName(names)}";
const where = ${where};
let env: Environment;

beforeAll(async () => {
  env = await startEnvironment();
});
afterAll(async () => {
  await env?.stop();
});

const read = () => env.client.get(${kind}, name, where);
const patchSpec = (spec: object) => env.client.patch(${kind}, name, { spec }, where);

describe("${kind}", () => {
  it("reconciles the sample to Ready=True for its current generation", async () => {
    const applied = await env.kubectl(["apply", "-f", sample${namespaced ? `, "-n", "default"` : ""}]);
    expect(applied.code, applied.stderr).toBe(0);
    await expect
      .poll(async () => isTrue((await read()).status?.conditions, "Ready"), { timeout: 30_000 })
      .toBe(true);
    const current = await read();
    expect(current.status?.observedGeneration).toBe(current.metadata.generation);
  });

  it("follows a change of its spec", async () => {
    await patchSpec({ size: 5 });
    await expect
      .poll(
        async () => {
          const current = await read();
          return current.status?.observedGeneration === current.metadata.generation;
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    expect((await read()).spec.size).toBe(5);
  });${webhookTests.map((test) => `\n\n${test}`).join("")}
});
`;
}
