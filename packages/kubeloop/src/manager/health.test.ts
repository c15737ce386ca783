import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Forbidden } from "../client/errors.js";
import { sleep } from "../util/index.js";
import { DEFAULT_HEALTH_PROBE_PORT, HealthServer, ListenError } from "./health.js";
import { Metrics } from "./metrics.js";

const servers: HealthServer[] = [];

/** A server on a random loopback port, closed after the test. */
async function serve(
  options: ConstructorParameters<typeof HealthServer>[0] = {},
  setup?: (s: HealthServer) => void,
) {
  const server = new HealthServer({ host: "127.0.0.1", port: 0, ...options });
  setup?.(server);
  servers.push(server);
  await server.start();
  const get = async (path: string, init?: RequestInit) => {
    const response = await fetch(`http://127.0.0.1:${server.port}${path}`, init);
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      body: await response.text(),
    };
  };
  return { server, get };
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe("HealthServer probes", () => {
  it("binds a free port when asked for port 0, and answers ok with no checks", async () => {
    const { server, get } = await serve();
    expect(server.port).toBeGreaterThan(0);
    expect(server.port).not.toBe(DEFAULT_HEALTH_PROBE_PORT);
    expect(await get("/healthz")).toEqual({ status: 200, type: "text/plain; charset=utf-8", body: "ok" });
    expect(await get("/readyz")).toEqual({ status: 200, type: "text/plain; charset=utf-8", body: "ok" });
  });

  it("turns not ready and ready again as a check fails and recovers, naming the failing check and why", async () => {
    let synced = false;
    const { get } = await serve({}, (server) =>
      server
        .addReadyCheck("ping", () => {})
        .addReadyCheck("informers", () => {
          if (!synced) throw new Error("2 of 3 informers have not synced: ConfigMap, Secret");
        }),
    );
    expect(await get("/readyz")).toEqual({
      status: 500,
      type: "text/plain; charset=utf-8",
      body:
        "[+]ping ok\n" +
        "[-]informers failed: 2 of 3 informers have not synced: ConfigMap, Secret\n" +
        "readyz check failed\n",
    });
    expect((await get("/healthz")).status).toBe(200); // liveness has its own checks
    synced = true;
    expect(await get("/readyz")).toMatchObject({ status: 200, body: "ok" });
  });

  it("reports a typed API error with its name, like Kubernetes' verbose /readyz, and awaits async checks", async () => {
    const forbidden = new Forbidden(
      403,
      { kind: "Status", message: 'configmaps is forbidden: User "op" cannot list resource "configmaps"' },
      "GET /api/v1/configmaps",
    );
    const { get } = await serve({}, (server) =>
      server.addReadyCheck("informers", async () => {
        await sleep(10);
        throw forbidden;
      }),
    );
    const response = await get("/readyz");
    expect(response.status).toBe(500);
    expect(response.body).toBe(
      '[-]informers failed: Forbidden: configmaps is forbidden: User "op" cannot list resource "configmaps"\n' +
        "readyz check failed\n",
    );
  });

  it("lists every check with ?verbose, skips ?exclude'd ones, and warns about unknown excludes", async () => {
    const { get } = await serve({}, (server) =>
      server
        .addHealthCheck("ping", () => {})
        .addHealthCheck("broken", () => {
          throw new Error("no");
        }),
    );
    expect(await get("/healthz?verbose")).toMatchObject({
      status: 500,
      body: "[+]ping ok\n[-]broken failed: no\nhealthz check failed\n",
    });
    expect(await get("/healthz?verbose&exclude=broken&exclude=nope")).toMatchObject({
      status: 200,
      body:
        "[+]ping ok\n" +
        "[+]broken excluded: ok\n" +
        'warn: some health checks cannot be excluded: no matches for "nope"\n' +
        "healthz check passed\n",
    });
    // Without ?verbose a pass is a plain "ok", unknown excludes or not (Kubernetes' shortcut).
    expect(await get("/healthz?exclude=broken,nope")).toMatchObject({ status: 200, body: "ok" });
  });

  it("runs one check alone at /<endpoint>/<name>, and 404s unknown names and paths", async () => {
    const { get } = await serve({}, (server) =>
      server
        .addReadyCheck("ping", () => {})
        .addReadyCheck("broken", () => {
          throw new Error("cache not synced");
        }),
    );
    expect(await get("/readyz/ping")).toMatchObject({ status: 200, body: "ok" });
    expect(await get("/readyz/broken")).toMatchObject({
      status: 500,
      body: "internal server error: cache not synced\n",
    });
    expect((await get("/readyz/nope")).status).toBe(404);
    expect((await get("/healthz/broken")).status).toBe(404);
    expect((await get("/")).status).toBe(404);
    expect((await get("/metrics")).status).toBe(404); // no metrics given
  });

  it("fails a check that hangs past its timeout, and aborts its signal", async () => {
    let aborted = false;
    const { get } = await serve({ checkTimeoutMs: 100 }, (server) =>
      server.addReadyCheck("stuck", (signal) => {
        signal.addEventListener("abort", () => {
          aborted = true;
        });
        return new Promise(() => {});
      }),
    );
    const started = performance.now();
    const response = await get("/readyz");
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(response).toMatchObject({
      status: 500,
      body: "[-]stuck failed: check stuck timed out after 100 ms\nreadyz check failed\n",
    });
    expect(aborted).toBe(true);
  });

  it("can withhold reasons, as Kubernetes does on public endpoints", async () => {
    const { get } = await serve({ withholdReasons: true }, (server) =>
      server.addReadyCheck("secret", () => {
        throw new Error("token for db-admin expired");
      }),
    );
    expect((await get("/readyz")).body).toBe("[-]secret failed: reason withheld\nreadyz check failed\n");
    expect((await get("/readyz/secret")).body).toBe("internal server error: reason withheld\n");
  });

  it("answers HEAD without a body and refuses other methods", async () => {
    const { get } = await serve();
    expect(await get("/healthz", { method: "HEAD" })).toMatchObject({ status: 200, body: "" });
    const post = await fetch(`http://127.0.0.1:${servers[0]?.port}/healthz`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("rejects duplicate and path-unsafe check names", () => {
    const server = new HealthServer();
    server.addReadyCheck("informers", () => {});
    expect(() => server.addReadyCheck("informers", () => {})).toThrow(/already added/);
    expect(() => server.addHealthCheck("a/b", () => {})).toThrow(/URL path/);
    server.addHealthCheck("informers", () => {}); // liveness and readiness names are apart
  });
});

describe("HealthServer metrics", () => {
  it("serves /metrics from a Metrics instance with the exposition content type", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.controller("nginx").reconciled("success", 0.01);
    const { get } = await serve({ metrics });
    const response = await get("/metrics");
    expect(response.status).toBe(200);
    expect(response.type).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(response.body).toContain(
      'controller_runtime_reconcile_total{controller="nginx",result="success"} 1',
    );
    expect((await get("/healthz")).body).toBe("ok"); // one port for both
  });

  it("serves metrics alone on a port of their own with probes: false", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const probes = await serve({}, (server) => server.addReadyCheck("ping", () => {}));
    const scrape = await serve({ metrics, probes: false });
    expect((await scrape.get("/metrics")).status).toBe(200);
    expect((await scrape.get("/readyz")).status).toBe(404);
    expect((await probes.get("/readyz")).status).toBe(200);
    expect((await probes.get("/metrics")).status).toBe(404);
  });

  it("answers 500 with the reason when gathering metrics fails", async () => {
    const { get } = await serve({
      metrics: { contentType: "text/plain", text: () => Promise.reject(new Error("collector broke")) },
    });
    expect(await get("/metrics")).toMatchObject({
      status: 500,
      body: "error gathering metrics: collector broke\n",
    });
  });
});

describe("HealthServer lifecycle", () => {
  it("fails to start on a taken port with an error that names the port and what to do", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const server = new HealthServer({
        host: "127.0.0.1",
        port,
        metrics: new Metrics({ defaultMetrics: false }),
      });
      const error = await server.start().then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(ListenError);
      expect(error).toMatchObject({ port, host: "127.0.0.1", code: "EADDRINUSE" });
      expect((error as Error).message).toBe(
        `Cannot serve health probes and metrics on 127.0.0.1:${port}: port ${port} is already in use by ` +
          "another process (or another server of this one); choose another port or stop that process (EADDRINUSE)",
      );
      await server.close(); // nothing to close: fine
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it("closes gracefully: a request in flight completes, then the port is free", async () => {
    let release: () => void = () => {};
    let entered: () => void = () => {};
    const inCheck = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const server = new HealthServer({ host: "127.0.0.1", port: 0, checkTimeoutMs: 10_000 });
    server.addReadyCheck("slow", () => {
      entered();
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await server.start();
    const port = server.port;
    const inFlight = fetch(`http://127.0.0.1:${port}/readyz`);
    await inCheck;
    const closed = server.close();
    expect(server.close()).toBe(closed); // safe to call twice
    const answering = performance.now();
    release();
    const response = await inFlight;
    expect([response.status, await response.text()]).toEqual([200, "ok"]);
    await closed;
    // Hung up right after the answer: close does not wait for the client's keep-alive to lapse.
    expect(performance.now() - answering).toBeLessThan(1_000);
    await expect(fetch(`http://127.0.0.1:${port}/readyz`)).rejects.toThrow();
    const again = new HealthServer({ host: "127.0.0.1", port });
    await again.start(); // the port is free again
    await again.close();
  });

  it("reports its port only while listening", async () => {
    const server = new HealthServer({ host: "127.0.0.1", port: 0 });
    expect(() => server.port).toThrow(/not listening/);
    await server.start();
    await expect(server.start()).rejects.toThrow(/already started/);
    await server.close();
  });
});
