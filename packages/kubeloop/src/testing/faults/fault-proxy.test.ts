import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../../test/helpers.js";
import { sleep } from "../../util/index.js";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.js";

// The proxy is pure TCP: an echo server is the real peer that shows what passes and what does not.
let echo: Server;
let port: number;

beforeAll(async () => {
  echo = createServer((socket) => {
    socket.on("error", () => socket.destroy());
    socket.pipe(socket);
  });
  echo.listen(0, "127.0.0.1");
  await once(echo, "listening");
  port = (echo.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => echo.close(resolve));
});

async function open(proxy: FaultProxy): Promise<Socket & { received: () => string }> {
  const socket = connect({ host: "127.0.0.1", port: proxy.port });
  let text = "";
  socket.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  socket.on("error", () => undefined);
  await once(socket, "connect");
  return Object.assign(socket, { received: () => text });
}

async function withProxy(test: (proxy: FaultProxy) => Promise<void>): Promise<void> {
  const proxy = await startFaultProxy({ target: { host: "127.0.0.1", port } });
  try {
    await test(proxy);
  } finally {
    await proxy.close();
  }
}

describe("startFaultProxy", () => {
  it("forwards bytes both ways and counts connections and bytes", () =>
    withProxy(async (proxy) => {
      const socket = await open(proxy);
      socket.write("hello");
      await until(() => socket.received() === "hello", 5_000, "the echo");
      expect(proxy.stats).toMatchObject({ accepted: 1, open: 1, bytes: 10 });
      expect(proxy.url).toBe(`https://127.0.0.1:${proxy.port}`);
      socket.destroy();
      await until(() => proxy.stats.open === 0, 5_000, "the connection to close");
    }));

  it("resets open connections", () =>
    withProxy(async (proxy) => {
      const socket = await open(proxy);
      const errored = once(socket, "error");
      proxy.reset();
      const [error] = (await errored) as [NodeJS.ErrnoException];
      expect(error.code).toBe("ECONNRESET");
    }));

  it("stalls open connections: they stay open and silent, forever; new ones flow", () =>
    withProxy(async (proxy) => {
      const stalled = await open(proxy);
      proxy.stall();
      stalled.write("lost");
      const fresh = await open(proxy);
      fresh.write("fresh");
      await until(() => fresh.received() === "fresh", 5_000, "the new connection's echo");
      await proxy.heal();
      await sleep(300); // nothing may arrive: a silence
      expect(stalled.received()).toBe("");
      expect(stalled.destroyed).toBe(false);
      stalled.destroy();
      fresh.destroy();
    }));

  it("stalls new connections too when asked, until healed", () =>
    withProxy(async (proxy) => {
      proxy.stall({ newConnections: true });
      const during = await open(proxy);
      during.write("x");
      await proxy.heal();
      const after = await open(proxy);
      after.write("y");
      await until(() => after.received() === "y", 5_000, "the echo after heal");
      expect(during.received()).toBe("");
      during.destroy();
      after.destroy();
    }));
});

describe("startFaultProxy: refusals, latency and bandwidth", () => {
  it("refuses new connections until healed", () =>
    withProxy(async (proxy) => {
      await proxy.refuse();
      const refused = connect({ host: "127.0.0.1", port: proxy.port });
      const [error] = (await once(refused, "error")) as [NodeJS.ErrnoException];
      expect(error.code).toBe("ECONNREFUSED");
      await proxy.heal();
      const socket = await open(proxy);
      socket.write("back");
      await until(() => socket.received() === "back", 5_000, "the echo after heal");
      socket.destroy();
    }));

  it("adds latency to every chunk, in order", () =>
    withProxy(async (proxy) => {
      proxy.setLatency(200);
      const socket = await open(proxy);
      const started = performance.now();
      socket.write("a");
      socket.write("b");
      await until(() => socket.received() === "ab", 5_000, "the delayed echo");
      // Two hops (there and back), 200 ms each.
      expect(performance.now() - started).toBeGreaterThanOrEqual(390);
      socket.destroy();
    }));

  it("caps the byte rate", () =>
    withProxy(async (proxy) => {
      proxy.setBandwidth(20_000);
      const socket = await open(proxy);
      const started = performance.now();
      socket.write("z".repeat(30_000));
      await until(() => socket.received().length === 30_000, 10_000, "the throttled echo");
      // 30 kB at 20 kB/s, less the first burst (2 kB): at least 1.3 s.
      expect(performance.now() - started).toBeGreaterThanOrEqual(1_300);
      socket.destroy();
    }));

  it("rejects a negative latency and a zero bandwidth, naming the value", () =>
    withProxy(async (proxy) => {
      expect(() => proxy.setLatency(-1)).toThrow(/latency must be 0 or more milliseconds, got -1/);
      expect(() => proxy.setBandwidth(0)).toThrow(/bandwidth must be more than 0 bytes per second, got 0/);
    }));
});
