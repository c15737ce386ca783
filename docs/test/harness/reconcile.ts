// Runs a book block that defines a controller (`<!-- run with: reconcile {sample} -->`): starts its one
// exported controller on the in-memory ReconcileHarness, creates a sample object of its kind, and
// reconciles until idle. Fails (exit 1) unless every reconcile ended without error; prints each
// step, the sample's status, the objects of the kinds it owns and the events it recorded, for the
// marker's `prints:`. Usage: node reconcile.ts <block.ts> <sample JSON>.
import { pathToFileURL } from "node:url";
import type { KubeObject, ResourceType } from "kubeloop/client";
import { Controller } from "kubeloop/controller";
import { ReconcileHarness } from "kubeloop/testing";

const print = (line: string) => process.stdout.write(`${line}\n`);
const [file, sampleJson] = process.argv.slice(2);
if (!file || !sampleJson) throw new Error("usage: node reconcile.ts <block.ts> <sample JSON>");
const block: Record<string, unknown> = await import(pathToFileURL(file).href);
const controllers = Object.values(block).filter((value) => value instanceof Controller);
const [controller] = controllers;
if (!controller || controllers.length > 1)
  throw new Error(
    `${file} exports ${controllers.length} controllers; \`run with: reconcile\` needs exactly one`,
  );

const { primary, owns } = controller.spec;
/** Custom kinds (`defineResource`'s, with a CRD) the in-memory server must serve; built-in ones it knows. */
const custom = [primary, ...owns.map((owned) => owned.type)].filter(
  (type): type is ResourceType & { crd(): object } => "crd" in type,
);
const harness = await ReconcileHarness.start(controller, { resources: custom });
const sample = JSON.parse(sampleJson) as Partial<KubeObject>;
await harness.client.create({
  apiVersion: primary.apiVersion,
  kind: primary.kind,
  ...sample,
  metadata: { name: "sample", namespace: "default", ...sample.metadata },
});
const steps = await harness.reconcileUntilIdle();
for (const step of steps) print(`reconcile ${step.key}: ${step.result}`);
const reconciled = await harness.client.get(primary, "sample", { namespace: "default" });
print(`status ${JSON.stringify((reconciled as { status?: unknown }).status ?? null)}`);
for (const { type } of owns) {
  for (const item of (await harness.client.list(type, { namespace: "default" })).items)
    print(`owns ${type.kind} ${item.metadata?.namespace}/${item.metadata?.name}`);
}
for (const event of harness.events) print(`event ${event.type} ${event.reason}: ${event.note ?? ""}`);
await harness.stop();

const failed = steps.filter((step) => step.result === "error" || step.result === "terminal");
if (steps.length === 0) throw new Error("the sample was never reconciled");
if (failed.length)
  throw new Error(`reconcile failed: ${failed.map((step) => step.key).join(", ")} (see the events above)`);
