import { describe, expect, it } from "vitest";
import { type KubeObject, kindKeyOf, type ObjectKey, objectKey } from "../client/index.js";
import { type CacheLookup, EXPECTATION_TIMEOUT_MS, WriteAwareness } from "./write-awareness.js";

const ConfigMap = { apiVersion: "v1", kind: "ConfigMap" };
const kind = kindKeyOf(ConfigMap);
const cm = (resourceVersion: string, uid = "u1"): KubeObject => ({
  ...ConfigMap,
  metadata: { namespace: "ns", name: "cm", resourceVersion, uid },
});
const target = { kind, key: objectKey(cm("1")) };
const reconcileKey = "ns/owner" as ObjectKey;
/** A cache that holds `object` (or nothing) for the ConfigMap kind, and watches no other kind. */
const cacheOf =
  (object: KubeObject | undefined): CacheLookup =>
  (k) =>
    k === kind ? object : "unwatched";

/** A write under way that the test ends: `respond` resolves it with the version given. */
function pending(awareness: WriteAwareness) {
  let respond!: (version: string) => void;
  let fail!: () => void;
  const done = awareness.write(
    reconcileKey,
    target,
    () =>
      new Promise<KubeObject>((resolve, reject) => {
        respond = (v) => resolve(cm(v));
        fail = () => reject(new Error("Conflict"));
      }),
  );
  return { done, respond: (v: string) => respond(v), fail: () => fail() };
}

describe("read your writes", () => {
  it("waits until the cache shows the version written or newer (compared as numbers)", async () => {
    const awareness = new WriteAwareness();
    await awareness.write(reconcileKey, target, async () => cm("10"));
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(cm("9")))).toBe(false);
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(undefined))).toBe(false);
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(cm("11")))).toBe(true);
  });

  it("states its exceptions: an expectation expires after the timeout, and an unwatched kind counts as met", async () => {
    let now = 0;
    const awareness = new WriteAwareness(() => now);
    await awareness.write(reconcileKey, target, async () => cm("10"));
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(cm("9")))).toBe(false);
    now = EXPECTATION_TIMEOUT_MS + 1;
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(cm("9")))).toBe(true);

    await awareness.write(
      reconcileKey,
      { kind: kindKeyOf({ apiVersion: "v1", kind: "Secret" }), key: target.key },
      async () => cm("12"),
    );
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(cm("9")))).toBe(true);
  });

  it("waits for a deleted object to leave the cache (or to come back as another object)", async () => {
    const awareness = new WriteAwareness();
    await awareness.delete(reconcileKey, target, async () => cm("10"));
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(cm("10")))).toBe(false);
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(cm("11", "u2")))).toBe(true);
  });

  it("is met by the watch event of the version, and ended by the object's deletion", async () => {
    const awareness = new WriteAwareness();
    await awareness.write(reconcileKey, target, async () => cm("10"));
    awareness.updated(kind, cm("10"), () => undefined);
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(undefined))).toBe(true);
    await awareness.write(reconcileKey, target, async () => cm("11"));
    awareness.deleted(kind, cm("11"));
    expect(awareness.reads.caughtUp(reconcileKey, cacheOf(undefined))).toBe(true);
  });
});

describe("echo filtering", () => {
  it("drops the event of the version a write returned, once, and delivers any other", async () => {
    const awareness = new WriteAwareness();
    await awareness.write(reconcileKey, target, async () => cm("10"));
    const delivered: string[] = [];
    for (const v of ["10", "10", "11"]) awareness.updated(kind, cm(v), () => delivered.push(v));
    expect(delivered).toEqual(["10", "11"]);
  });

  it("holds events that arrive before the write's response, then drops only its echo", async () => {
    const awareness = new WriteAwareness();
    const write = pending(awareness);
    const delivered: string[] = [];
    // Someone else's change (9), then our echo (10), both before our response.
    for (const v of ["9", "10"]) awareness.updated(kind, cm(v), () => delivered.push(v));
    expect(delivered).toEqual([]);
    write.respond("10");
    await write.done;
    expect(delivered).toEqual(["9"]);
  });

  it("delivers every held event when the write fails", async () => {
    const awareness = new WriteAwareness();
    const write = pending(awareness);
    const delivered: string[] = [];
    awareness.updated(kind, cm("9"), () => delivered.push("9"));
    write.fail();
    await expect(write.done).rejects.toThrow("Conflict");
    expect(delivered).toEqual(["9"]);
  });
});
