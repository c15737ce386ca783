import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { controller } from "../controller/builder.js";
import { done } from "../controller/result.js";
import { Secret } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { type LocalWebhookServing, localWebhookServing } from "../testing/local-webhooks.js";
import { freePorts } from "../testing/ports.js";
import { WebhookServer } from "../webhook/server.js";
import { Manager } from "./manager.js";

// W3C trace context end to end: a reconcile's API call carries `traceparent`; the API server, with
// its own tracing on, passes the trace on to the admission webhook it calls; the webhook's span
// joins the reconcile's trace. (The API server exports its spans to an OTLP gRPC endpoint where
// nothing listens: only the propagation matters here.)

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}

let plane: ControlPlane;
let client: Client;
let receiver: Server;
let serving: LocalWebhookServing;
let dir: string;
const spans: OtlpSpan[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kubeloop-apiserver-tracing-"));
  const [nowhere] = await freePorts(1);
  writeFileSync(
    join(dir, "tracing.yaml"),
    [
      "apiVersion: apiserver.config.k8s.io/v1beta1",
      "kind: TracingConfiguration",
      `endpoint: 127.0.0.1:${nowhere}`,
      "samplingRatePerMillion: 1000000",
      "",
    ].join("\n"),
  );
  ({ plane, client } = await startPlane({
    apiServerArgs: [`--tracing-config-file=${join(dir, "tracing.yaml")}`],
  }));
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const resource of body.resourceSpans)
        for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  serving = await localWebhookServing();
});
afterAll(async () => {
  serving?.dispose();
  await new Promise((resolve) => receiver?.close(resolve));
  await stopPlane(plane, client);
  rmSync(dir, { recursive: true, force: true });
});

describe("trace context across the API server", () => {
  it("puts the admission webhook's span in the trace of the reconcile whose write it reviews", async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    process.env.OTEL_BSP_SCHEDULE_DELAY = "100";
    const namespace = "traced-writes";
    await client.create({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: namespace, labels: { "kubeloop.dev/traced": "true" } },
    });
    const webhooks = new WebhookServer({ certDir: serving.certDir, port: serving.port, host: "127.0.0.1" });
    webhooks.validating("/validate-configmaps", () => ({ allowed: true }));
    await webhooks.start();
    await client.create({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "traced-configmaps" },
      webhooks: [
        {
          name: "configmaps.traced.kubeloop.dev",
          clientConfig: {
            url: `https://127.0.0.1:${serving.port}/validate-configmaps`,
            caBundle: serving.caBundle,
          },
          rules: [
            { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"] },
          ],
          namespaceSelector: { matchLabels: { "kubeloop.dev/traced": "true" } },
          sideEffects: "None",
          admissionReviewVersions: ["v1"],
          failurePolicy: "Fail",
        },
      ],
    });
    const manager = new Manager({
      client,
      logger: pino({ level: "silent" }),
      probes: false,
      metrics: false,
      handleSignals: false,
    });
    let written = false;
    manager.add(
      controller(Secret)
        .named("writer")
        .inNamespace(namespace)
        .reconcile(async (secret, ctx) => {
          await ctx.client.create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: `from-${secret.metadata?.name}`, namespace },
          });
          written = true;
          return done();
        }),
    );
    const running = manager.start();
    try {
      await manager.ready;
      await client.create({ apiVersion: "v1", kind: "Secret", metadata: { name: "trigger", namespace } });
      await until(() => written, 20_000, "the reconcile's write");
      const reconcile = () => spans.find((s) => s.name === "reconcile writer");
      const review = () => spans.find((s) => s.name === "webhook /validate-configmaps");
      await until(() => reconcile() !== undefined && review() !== undefined, 20_000, "both spans exported");
      const post = spans.find((s) => s.name === "kubernetes POST" && s.parentSpanId === reconcile()?.spanId);
      expect(post?.traceId).toBe(reconcile()?.traceId);
      expect(review()?.traceId).toBe(reconcile()?.traceId);
      // Its parent is the API server's span for the call (exported elsewhere), not ours.
      expect(spans.some((s) => s.spanId === review()?.parentSpanId)).toBe(false);
    } finally {
      await manager.stop();
      await running;
      await webhooks.close();
    }
  });
});
