import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { controller } from "../controller/builder.js";
import { done } from "../controller/result.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { Manager } from "./manager.js";

// Traces that leave the process: the manager starts OpenTelemetry's SDK when OTEL_* names an
// endpoint, and the official OTLP/HTTP exporter sends the spans to a real HTTP receiver here,
// which decodes what arrives (OTLP JSON: resourceSpans → scopeSpans → spans).

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
  links?: { traceId: string; spanId: string }[];
}
interface OtlpExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

let plane: ControlPlane;
let client: Client;
let receiver: Server;
let receiverPort: number;
const exports: { path: string; contentType: string; body: OtlpExport }[] = [];
const spans = () =>
  exports.flatMap((e) => e.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
const attribute = (span: OtlpSpan | undefined, key: string) => {
  const value = span?.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue;
};
const saved = { ...process.env };

beforeAll(async () => {
  ({ plane, client } = await startPlane());
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      exports.push({
        path: request.url ?? "",
        contentType: request.headers["content-type"] ?? "",
        body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpExport,
      });
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverPort = (receiver.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
  await stopPlane(plane, client);
});
afterEach(() => {
  for (const key of Object.keys(process.env)) if (key.startsWith("OTEL_")) delete process.env[key];
  Object.assign(
    process.env,
    Object.fromEntries(Object.entries(saved).filter(([k]) => k.startsWith("OTEL_"))),
  );
});

/** A manager reconciling the ConfigMaps of `namespace` (each reads itself back), logging into `lines`. */
async function runOnce(
  namespace: string,
  lines: Record<string, unknown>[],
  annotations: Record<string, string> = {},
) {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  await client.create({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "traced", namespace, annotations },
  });
  let reconciled = 0;
  const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const manager = new Manager({ client, logger, probes: false, metrics: false, handleSignals: false });
  manager.add(
    controller(ConfigMap)
      .named(`copier-${namespace}`)
      .inNamespace(namespace)
      .reconcile(async (_, ctx) => {
        await ctx.client.get({ type: ConfigMap, namespace, name: "traced" });
        ctx.log.info("read it back");
        reconciled++;
        return done();
      }),
  );
  const running = manager.start();
  await manager.ready;
  await until(() => reconciled > 0, 20_000, "the reconcile");
  return {
    async stop() {
      await manager.stop();
      await running;
    },
  };
}

// The SDK is process-wide and started once, so the case that starts none comes first; an endpoint
// that does not answer is in tracing-unreachable.test.ts, a process of its own.
describe("tracing", () => {
  it("warns of a malformed endpoint and runs without tracing", async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = "otel-collector:4318";
    const lines: Record<string, unknown>[] = [];
    const run = await runOnce("malformed", lines);
    await run.stop();
    expect(lines.find((l) => l.level === 40)?.msg).toBe(
      'OTEL_EXPORTER_OTLP_ENDPOINT="otel-collector:4318" is not an http(s) URL (e.g. http://otel-collector:4318): traces are not exported',
    );
    const line = lines.find((l) => l.msg === "read it back");
    expect(line).toMatchObject({ controller: "copier-malformed", reconcileID: expect.any(String) });
    expect(line).not.toHaveProperty("trace_id");
  });
  it("sends one trace per reconcile to the OTLP endpoint, with the API calls as its children, and logs its ids", async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${receiverPort}`;
    process.env.OTEL_SERVICE_NAME = "copier-operator";
    process.env.OTEL_BSP_SCHEDULE_DELAY = "100";
    const lines: Record<string, unknown>[] = [];
    // KEP-5915: the change that made the object left its trace in an annotation.
    const cause = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" };
    const run = await runOnce("traced", lines, {
      "tracing.k8s.io/traceparent": `00-${cause.traceId}-${cause.spanId}-01`,
    });
    const reconcileOf = () => spans().find((s) => s.name === "reconcile copier-traced");
    await until(() => reconcileOf() !== undefined, 20_000, "the reconcile span to be exported");
    await run.stop(); // flushes the rest

    expect(exports[0]?.path).toBe("/v1/traces");
    expect(exports[0]?.contentType).toContain("application/json");
    const resource = exports[0]?.body.resourceSpans[0]?.resource.attributes ?? [];
    expect(resource.find((a) => a.key === "service.name")?.value.stringValue).toBe("copier-operator");

    const reconcile = reconcileOf();
    expect(attribute(reconcile, "k8s.controller")).toBe("copier-traced");
    expect(attribute(reconcile, "k8s.namespace")).toBe("traced");
    expect(attribute(reconcile, "k8s.name")).toBe("traced");
    // Linked to the change that caused it, not parented by it: its own trace.
    expect(reconcile?.links).toEqual([expect.objectContaining(cause)]);
    expect(reconcile?.traceId).not.toBe(cause.traceId);
    const children = spans().filter((s) => s.parentSpanId === reconcile?.spanId);
    expect(children.map((s) => s.name)).toContain("kubernetes GET");
    expect(children.every((s) => s.traceId === reconcile?.traceId)).toBe(true);
    const get = children.find(
      (s) => attribute(s, "url.path") === "/api/v1/namespaces/traced/configmaps/traced",
    );
    expect(attribute(get, "http.response.status_code")).toBe(200);

    // The reconciler's own log line names the trace and the span, next to the reconcile's identity.
    const line = lines.find((l) => l.msg === "read it back");
    expect(line).toMatchObject({
      controller: "copier-traced",
      namespace: "traced",
      name: "traced",
      reconcileID: attribute(reconcile, "kubeloop.reconcile_id"),
      trace_id: reconcile?.traceId,
      span_id: reconcile?.spanId,
    });
  });
});
