// What webhooks cost the API server's clients: creates without and with a defaulting + validating
// webhook, and lists read in the stored version vs through the conversion webhook. The webhook
// server runs as its own process (as an operator would), on this machine's loopback.
// Run: npm run bench:webhooks [-- --objects 1000 --concurrency 16]
import { spawn } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { Client } from "kubeloop/client";
import { defineResource } from "kubeloop/resources";
import { ControlPlane, localWebhookServing } from "kubeloop/testing";
import { defineWebhooks, WebhookServer, webhookConfigurations, withConversion } from "kubeloop/webhook";
import Type from "typebox";
import { median, procStats, quantile } from "./stats.mjs";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "1000" },
    concurrency: { type: "string", default: "16" },
    serve: { type: "string" },
    "cert-dir": { type: "string" },
  },
});

const Gadget = defineResource({
  group: "bench.kubeloop.dev",
  version: "v1",
  kind: "Gadget",
  spec: Type.Object({ replicas: Type.Integer({ minimum: 0 }), image: Type.String() }),
  otherVersions: [
    { version: "v1alpha1", spec: Type.Object({ count: Type.Integer({ minimum: 0 }), image: Type.String() }) },
  ],
});
const respec = (object, change) => ({ ...object, spec: change(object.spec ?? {}) });
/** Calls each webhook function got, reported to the parent process over IPC. */
const calls = { default: 0, validate: 0, convert: 0 };
const gadgetWebhooks = defineWebhooks(Gadget, {
  default(gadget) {
    calls.default++;
    gadget.metadata.labels = { ...gadget.metadata.labels, defaulted: "yes" };
  },
  validate(gadget) {
    calls.validate++;
    return gadget.spec.image.includes("/")
      ? { allowed: true }
      : { allowed: false, message: "qualify the image" };
  },
  convert: {
    hub: "v1",
    toHub: {
      v1alpha1: (o) => {
        calls.convert++;
        return respec(o, ({ count, ...rest }) => ({ ...rest, replicas: count }));
      },
    },
    fromHub: {
      v1alpha1: (o) => {
        calls.convert++;
        return respec(o, ({ replicas, ...rest }) => ({ ...rest, count: replicas }));
      },
    },
  },
});

if (values.serve) {
  // The webhook server process.
  const server = new WebhookServer({
    certDir: values["cert-dir"],
    port: Number(values.serve),
    host: "127.0.0.1",
  });
  await server.register(gadgetWebhooks).start();
  process.on("message", () => process.send?.({ ...calls }));
  process.send?.("ready");
} else {
  await main();
}

async function main() {
  const objects = Number(values.objects);
  const concurrency = Number(values.concurrency);
  const serving = await localWebhookServing();
  const server = await startWebhookServer(serving);
  const plane = await new ControlPlane().start();
  const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  const target = { service: { name: "bench-webhook-service", namespace: "bench" } };
  try {
    await plane.installCrdObjects(serving.rewrite([withConversion(Gadget.crd(), gadgetWebhooks, target)]));
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "bench" } });
    const bench = { client, server, objects, concurrency };
    const rows = await measureCreates(bench, async () => {
      const { mutating, validating } = webhookConfigurations("bench", [gadgetWebhooks], target);
      for (const configuration of serving.rewrite([mutating, validating])) await client.create(configuration);
    });
    const lists = await measureLists(bench);
    printResults(bench, rows, lists);
  } finally {
    await client.close();
    await plane.stop();
    server.process.kill();
    serving.dispose();
  }
}

/** This file again, as the webhook server; `calls()` asks it how many reviews it has answered. */
async function startWebhookServer(serving) {
  const server = spawn(
    process.execPath,
    [import.meta.filename, "--serve", String(serving.port), "--cert-dir", serving.certDir],
    { stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  await new Promise((resolve) => server.once("message", resolve));
  const calls = () =>
    new Promise((resolve) => {
      server.once("message", resolve);
      server.send("stats");
    });
  return { process: server, calls };
}

function gadget(name) {
  return {
    apiVersion: Gadget.apiVersion,
    kind: "Gadget",
    metadata: { name, namespace: "bench" },
    spec: { replicas: 1, image: "docker.io/library/nginx:1.27" },
  };
}

/** Creates without webhooks, then with the defaulting and validating ones `install` registers. */
async function measureCreates({ client, server, objects, concurrency }, install) {
  const createAll = async (prefix) => {
    const latencies = [];
    let next = 0;
    const cpuBefore = procStats(server.process.pid).cpu;
    const callsBefore = await server.calls();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < objects) {
          const name = `${prefix}-${next++}`;
          const t = performance.now();
          await client.create(gadget(name));
          latencies.push(performance.now() - t);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const webhookCpu = procStats(server.process.pid).cpu - cpuBefore;
    return { seconds, latencies, webhookCpu, calls: difference(await server.calls(), callsBefore) };
  };

  await createAll("warm"); // the first requests pay for connections and caches
  const plain = await createAll("plain");
  await install();
  // Admission configurations take effect shortly after they are created: wait for a defaulted object.
  for (let i = 0; ; i++) {
    const probe = await client.create(gadget(`probe-${i}`));
    if (probe.metadata.labels?.defaulted === "yes") break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const hooked = await createAll("hooked");
  return [
    ["create, no webhooks", plain],
    ["create, defaulting + validating", hooked],
  ];
}

/** Lists in the stored version and, through the conversion webhook, in v1alpha1. */
async function measureLists({ client, server }) {
  const total = (await client.list(Gadget, { namespace: "bench" })).items.length;
  const GadgetV1alpha1 = { ...Gadget, apiVersion: "bench.kubeloop.dev/v1alpha1" };
  // The first list in v1alpha1 converts every object through the webhook; the API server keeps
  // the results, so later lists of unchanged objects convert none (the counter shows it).
  const firstCalls = await server.calls();
  const firstCpu = procStats(server.process.pid).cpu;
  const firstStart = performance.now();
  const first = await client.list(GadgetV1alpha1, { namespace: "bench" });
  const firstMs = performance.now() - firstStart;
  const firstConverted = difference(await server.calls(), firstCalls).convert;
  const firstWebhookCpu = procStats(server.process.pid).cpu - firstCpu;
  if (first.items.length !== total) throw new Error(`listed ${first.items.length} of ${total}`);
  // Then alternating, so that neither version has the machine to itself.
  const lists = { stored: { times: [], cpu: 0 }, converted: { times: [], cpu: 0 } };
  const callsBefore = await server.calls();
  for (let i = 0; i < 7; i++) {
    for (const [key, type] of [
      ["stored", Gadget],
      ["converted", GadgetV1alpha1],
    ]) {
      const cpuBefore = procStats(server.process.pid).cpu;
      const t = performance.now();
      const list = await client.list(type, { namespace: "bench" });
      lists[key].times.push(performance.now() - t);
      lists[key].cpu += (procStats(server.process.pid).cpu - cpuBefore) / 7;
      if (list.items.length !== total) throw new Error(`listed ${list.items.length} of ${total}`);
    }
  }
  const conversions = difference(await server.calls(), callsBefore).convert / 7;
  const stored = { times: lists.stored.times, webhookCpu: lists.stored.cpu };
  const converted = { times: lists.converted.times, webhookCpu: lists.converted.cpu };
  const sample = await client.get(GadgetV1alpha1, "plain-0", { namespace: "bench" });
  if (sample.spec.count !== 1) throw new Error("conversion lost spec.count");
  return { total, firstMs, firstConverted, firstWebhookCpu, conversions, stored, converted };
}

function printResults({ objects, concurrency }, rows, lists) {
  const { total, firstMs, firstConverted, firstWebhookCpu, conversions, stored, converted } = lists;
  console.log(
    `\nmachine: ${cpus().length} × ${cpus()[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB; ${objects} objects, concurrency ${concurrency}\n`,
  );
  console.log("| scenario | creates/s | p50 ms | p99 ms | webhook calls | webhook CPU ms per object |");
  console.log("|---|---|---|---|---|---|");
  for (const [name, r] of rows) {
    console.log(
      `| ${name} | ${Math.round(objects / r.seconds)} | ${quantile(r.latencies, 0.5).toFixed(1)} | ${quantile(r.latencies, 0.99).toFixed(1)} | ${r.calls.default} defaulting, ${r.calls.validate} validating | ${((r.webhookCpu * 1000) / objects).toFixed(3)} |`,
    );
  }
  console.log(`\n| list of ${total} | median ms (7 runs) | webhook CPU ms per list |`);
  console.log("|---|---|---|");
  console.log(
    `| v1 (stored version) | ${median(stored.times).toFixed(0)} | ${(stored.webhookCpu * 1000).toFixed(0)} |`,
  );
  console.log(
    `| v1alpha1, first list (${firstConverted} objects converted by the webhook) | ${firstMs.toFixed(0)} | ${(firstWebhookCpu * 1000).toFixed(0)} |`,
  );
  console.log(
    `| v1alpha1, later lists (${Math.round(conversions)} converted per list) | ${median(converted.times).toFixed(0)} | ${(converted.webhookCpu * 1000).toFixed(0)} |`,
  );
}

function difference(after, before) {
  return Object.fromEntries(Object.entries(after).map(([key, value]) => [key, value - before[key]]));
}
