import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { findPrometheusBinary, PrometheusError, PrometheusServer } from "./prometheus.js";

const saved = { PATH: process.env.PATH, PROMTOOL: process.env.PROMTOOL };
afterEach(() => {
  process.env.PATH = saved.PATH;
  if (saved.PROMTOOL === undefined) delete process.env.PROMTOOL;
  else process.env.PROMTOOL = saved.PROMTOOL;
});

describe("PrometheusServer", () => {
  it("names the package to install when a binary is missing", () => {
    process.env.PATH = "/nonexistent";
    delete process.env.PROMTOOL;
    expect(() => findPrometheusBinary("promtool")).toThrow(PrometheusError);
    expect(() => findPrometheusBinary("promtool")).toThrow(
      /promtool is not on PATH\. .*apt-get install prometheus/,
    );
    process.env.PROMTOOL = "/nonexistent/promtool";
    expect(() => findPrometheusBinary("promtool")).toThrow("$PROMTOOL=/nonexistent/promtool does not exist");
  });

  it("answers queries on a free loopback port, and stop() removes its folder", async () => {
    const prometheus = await new PrometheusServer().start();
    const dir = prometheus.dir;
    try {
      expect(prometheus.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await prometheus.query("vector(42)")).toEqual([
        { metric: {}, value: [expect.any(Number), "42"] },
      ]);
      await expect(prometheus.query("rate(")).rejects.toThrow(/Prometheus \/api\/v1\/query.*parse error/);
    } finally {
      await prometheus.stop();
    }
    expect(existsSync(dir)).toBe(false);
  });
});
