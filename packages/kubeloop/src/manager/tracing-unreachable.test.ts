import type { AddressInfo } from "node:net";
import { createServer, type Server, type Socket } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane, until } from "../../test/helpers.js";
import type { Client } from "../client/client.js";
import { controller } from "../controller/builder.js";
import { done } from "../controller/result.js";
import { ConfigMap } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { Manager } from "./manager.js";

// An OTLP endpoint that accepts connections and never answers (a collector hung, or a firewall
// that swallows packets) is the worst case for an exporter: reconciles must not wait on it.
let plane: ControlPlane;
let client: Client;
let silent: Server;
const sockets: Socket[] = [];

beforeAll(async () => {
  ({ plane, client } = await startPlane());
  silent = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent?.close(resolve));
  await stopPlane(plane, client);
});

describe("tracing to an endpoint that does not answer", () => {
  it("reconciles without waiting for it, and warns once", async () => {
    const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
    process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = "1000";
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "stalled" } });
    const manager = new Manager({ client, logger, probes: false, metrics: false, handleSignals: false });
    let reconciled = 0;
    manager.add(
      controller(ConfigMap)
        .named("stalled")
        .inNamespace("stalled")
        .reconcile(async (_, ctx) => {
          await ctx.client.get({ type: ConfigMap, namespace: "stalled", name: ctx.name });
          reconciled++;
          return done();
        }),
    );
    const running = manager.start();
    try {
      await manager.ready;
      for (let i = 0; i < 20; i++)
        await client.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `c${i}`, namespace: "stalled" },
        });
      // Every reconcile ends while exports hang: the export timeout (1 s) is longer than they all take.
      await until(() => reconciled === 20, 20_000, "20 reconciles");
      expect(sockets.length).toBeGreaterThan(0); // the exporter did try
      const warnings = () => lines.filter((l) => String(l.msg).startsWith("trace export to"));
      await until(() => warnings().length > 0, 30_000, "the export warning");
      expect(warnings()[0]).toMatchObject({ level: 40, endpoint: `${endpoint}/v1/traces` });
      // More exports fail after the first; the warning is not repeated.
      await until(
        () => lines.filter((l) => String(l.msg).startsWith("trace export failed")).length > 0,
        30_000,
        "a second failed export",
      );
      expect(warnings()).toHaveLength(1);
    } finally {
      await manager.stop();
      await running;
    }
  });
});
