import { trace } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane, until } from "../../test/helpers.js";
import { InformerRegistry } from "../cache/registry.js";
import type { Client } from "../client/client.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { controller } from "./builder.js";
import { done } from "./result.js";

// With an OpenTelemetry SDK installed by the application, every reconcile and every API call is a
// span; without one (the default) the same code runs against the API's no-op tracer.
const exporter = new InMemorySpanExporter();
let plane: ControlPlane;
let client: Client;

beforeAll(async () => {
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
  ({ plane, client } = await startPlane());
});
afterAll(async () => {
  await stopPlane(plane, client);
  trace.disable();
});

describe("tracing", () => {
  it("records a span per reconcile and per API call", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "traced" } });
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "t", namespace: "traced" },
    });
    const registry = new InformerRegistry(client);
    let reconciled = false;
    const traced = controller(ConfigMap)
      .named("traced")
      .inNamespace("traced")
      .reconcile(async (_, ctx) => {
        await ctx.client.get({ type: ConfigMap, namespace: "traced", name: "t" });
        reconciled = true;
        return done();
      });
    traced.prepare({ client, registry, logger: pino({ level: "silent" }) });
    await Promise.all(traced.allInformers.map((i) => i.synced));
    traced.start();
    await until(() => reconciled, 10_000, "the reconcile");
    await traced.stop(1_000);
    await registry.stopAll();
    const spans = exporter.getFinishedSpans();
    const reconcile = spans.find((s) => s.name === "reconcile traced");
    expect(reconcile?.attributes).toMatchObject({
      "k8s.controller": "traced",
      "k8s.namespace": "traced",
      "k8s.name": "t",
    });
    const get = spans.find(
      (s) =>
        s.name === "kubernetes GET" && s.attributes["url.path"] === "/api/v1/namespaces/traced/configmaps/t",
    );
    expect(get?.attributes["http.response.status_code"]).toBe(200);
  });
});
