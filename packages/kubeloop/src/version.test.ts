import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { VERSION } from "./index.js";

it("VERSION is the version in kubeloop's package.json", () => {
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  expect(version).toMatch(/^\d+\.\d+\.\d+/);
  expect(VERSION).toBe(version);
});
