import { describe, expect, it } from "vitest";
import { ConfigMap } from "../k8s/index.js";
import { FakeClock } from "../queue/clock.js";
import { controller } from "./builder.js";
import { ObjectRateLimiter } from "./object-cap.js";

describe("ObjectRateLimiter (the per-object cap's sliding window)", () => {
  it("admits max reconciles of a key per window, then says how long until the next", () => {
    const clock = new FakeClock();
    const cap = new ObjectRateLimiter({ max: 2, window: "1s" }, clock);
    expect(cap.admit("ns/a")).toBe(0);
    clock.advance(100);
    expect(cap.admit("ns/a")).toBe(0);
    clock.advance(100);
    expect(cap.admit("ns/a")).toBe(800); // until the first start leaves the window
    expect(cap.admit("ns/b")).toBe(0); // keys are apart
    clock.advance(800);
    expect(cap.admit("ns/a")).toBe(0);
    expect(cap.admit("ns/a")).toBe(100);
  });

  it("refuses a cap that cannot hold, in the builder, where the mistake is", () => {
    expect(() => controller(ConfigMap).maxReconcilesPerObject(0, "1s")).toThrow(
      /max must be a whole number ≥ 1, got 0/,
    );
    expect(() => controller(ConfigMap).maxReconcilesPerObject(1, 0)).toThrow(/window must be longer than 0/);
  });
});
