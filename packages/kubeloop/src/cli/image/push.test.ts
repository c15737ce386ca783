import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { dockerCredentials, isLoopback, parseReference } from "./push.js";

const dir = mkdtempSync(join(tmpdir(), "kubeloop-docker-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("registry references and credentials", () => {
  it("parses host[:port]/repository[:tag], and refuses a reference without a registry host", () => {
    expect(parseReference("127.0.0.1:5000/team/op:0.1.0")).toEqual({
      registry: "127.0.0.1:5000",
      repository: "team/op",
      tag: "0.1.0",
    });
    expect(parseReference("ghcr.io/example/op")).toEqual({
      registry: "ghcr.io",
      repository: "example/op",
      tag: "latest",
    });
    expect(() => parseReference("op:0.1.0")).toThrow(
      "is not a registry reference: write host[:port]/repository[:tag]",
    );
  });

  it("speaks plain http to loopback registries only", () => {
    expect(["localhost:5000", "127.0.0.1:5000", "127.1.2.3", "[::1]:5000"].map(isLoopback)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(["ghcr.io", "10.0.0.1:5000", "registry.local:5000"].map(isLoopback)).toEqual([
      false,
      false,
      false,
    ]);
  });

  it("reads credentials from the docker config file as docker login writes them", () => {
    writeFileSync(
      join(dir, "config.json"),
      JSON.stringify({
        auths: {
          "https://ghcr.io": { auth: Buffer.from("me:token").toString("base64") },
          "registry.example.com": { username: "robot", password: "secret" },
        },
      }),
    );
    const env = { DOCKER_CONFIG: dir };
    expect(dockerCredentials("ghcr.io", env)).toBe(Buffer.from("me:token").toString("base64"));
    expect(dockerCredentials("registry.example.com", env)).toBe(
      Buffer.from("robot:secret").toString("base64"),
    );
    expect(dockerCredentials("quay.io", env)).toBeUndefined();
    expect(dockerCredentials("ghcr.io", { DOCKER_CONFIG: join(dir, "none") })).toBeUndefined();
  });
});
