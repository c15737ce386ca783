import { describe, expect, it } from "vitest";
import {
  generatePassword,
  REDACTED,
  redactError,
  redactSecrets,
  registerSecret,
  secretValues,
} from "./secrets.js";

describe("redactSecrets", () => {
  it("replaces registered values, as written and URL-encoded", () => {
    const password = registerSecret("p@ss/word-0001");
    expect(password).toBe("p@ss/word-0001");
    expect(redactSecrets("login with p@ss/word-0001 failed")).toBe(`login with ${REDACTED} failed`);
    expect(redactSecrets("postgresql://app:p%40ss%2Fword-0001@db:5432/x")).toBe(
      `postgresql://app:${REDACTED}@db:5432/x`,
    );
  });

  it("leaves text without secrets alone, and ignores values too short to be secrets", () => {
    registerSecret("abc");
    expect(redactSecrets("abc is the alphabet")).toBe("abc is the alphabet");
    expect(registerSecret(undefined)).toBeUndefined();
  });

  it("replaces a secret that contains another one whole", () => {
    registerSecret("inner-secret-1");
    registerSecret("outer-inner-secret-1-x");
    expect(redactSecrets("outer-inner-secret-1-x")).toBe(REDACTED);
  });
});

describe("redactError", () => {
  it("redacts the message, the stack and the causes, keeping the name", () => {
    registerSecret("hunter2hunter2");
    const error = new TypeError("bad password hunter2hunter2", { cause: new Error("echo hunter2hunter2") });
    const redacted = redactError(error) as Error;
    expect(redacted.name).toBe("TypeError");
    expect(redacted.message).toBe(`bad password ${REDACTED}`);
    expect(redacted.stack).not.toContain("hunter2hunter2");
    expect((redacted.cause as Error).message).toBe(`echo ${REDACTED}`);
  });

  it("returns an error without secrets as it is", () => {
    const error = new Error("nothing to hide");
    expect(redactError(error)).toBe(error);
  });
});

describe("secretValues", () => {
  it("decodes data and overlays stringData", () => {
    const values = secretValues({
      data: { user: Buffer.from("admin").toString("base64"), host: Buffer.from("db").toString("base64") },
      stringData: { host: "db2" },
    });
    expect(values).toEqual({ user: "admin", host: "db2" });
  });
});

describe("generatePassword", () => {
  it("is 32 URL-safe characters by default, different each time", () => {
    const a = generatePassword();
    expect(a).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(generatePassword()).not.toBe(a);
  });

  it("refuses fewer than 12 bytes", () => {
    expect(() => generatePassword(8)).toThrow(/at least 12 bytes, got 8/);
  });
});
