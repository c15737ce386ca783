import type { ConfigMap as ConfigMapObject } from "kubernetes-types/core/v1.js";
import type { Event as EventObject } from "kubernetes-types/events/v1.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { namespaces, startPlane, stopPlane, until } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { Forbidden } from "../client/errors.js";
import { Event } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { InvalidEvent } from "./errors.js";
import {
  DEFAULT_EVENT_BURST,
  DEFAULT_EVENT_REFILL_MS,
  EventRecorder,
  type EventRecorderOptions,
  MAX_EVENT_NOTE_BYTES,
  microTime,
  truncateNote,
} from "./events.js";

let plane: ControlPlane;
let client: Client;
const controller = "example.com/widget-controller";

const namespace = namespaces(() => client, "events");

async function configMap(ns: string, name = "subject"): Promise<ConfigMapObject> {
  return client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns } });
}

async function events(ns: string): Promise<EventObject[]> {
  return (await client.list(Event, { namespace: ns })).items;
}

/** A recorder closed after the test, whatever happens. */
const recorders: EventRecorder[] = [];
function newRecorder(options: Partial<EventRecorderOptions> = {}, through: Client = client): EventRecorder {
  const made = new EventRecorder(through, { reportingController: controller, ...options });
  recorders.push(made);
  return made;
}

beforeAll(async () => ({ plane, client } = await startPlane()));
afterAll(async () => {
  await Promise.all(recorders.map((r) => r.close()));
  await stopPlane(plane, client);
});

describe("EventRecorder", () => {
  it("writes an events.k8s.io/v1 Event with the reference, reporter and a microsecond eventTime", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    const related = await configMap(ns, "related");
    const recorder = newRecorder({ reportingInstance: "widget-controller-0" });
    recorder.event(subject, {
      type: "Normal",
      reason: "Created",
      action: "Create",
      note: "made it",
      related,
    });
    await recorder.flush();
    const [event, ...rest] = await events(ns);
    expect(rest).toHaveLength(0);
    expect(event).toMatchObject({
      type: "Normal",
      reason: "Created",
      action: "Create",
      note: "made it",
      reportingController: controller,
      reportingInstance: "widget-controller-0",
      regarding: {
        apiVersion: "v1",
        kind: "ConfigMap",
        name: "subject",
        namespace: ns,
        uid: subject.metadata?.uid,
        resourceVersion: subject.metadata?.resourceVersion,
      },
      related: { kind: "ConfigMap", name: "related", uid: related.metadata?.uid },
    });
    expect(event?.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(event?.series).toBeUndefined();
    expect(event?.metadata?.name).toMatch(/^subject\.[0-9a-f]+$/);
    expect(recorder.stats).toEqual({ created: 1, seriesUpdates: 0, dropped: 0, failed: 0 });
  });

  it("folds 10 identical events into one Event whose series counts all 10", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    const recorder = newRecorder();
    for (let i = 0; i < 10; i++) {
      recorder.event(subject, {
        type: "Warning",
        reason: "FailedSync",
        action: "Reconcile",
        note: "timeout",
      });
    }
    await recorder.flush();
    const list = await events(ns);
    expect(list).toHaveLength(1);
    expect(list[0]?.series?.count).toBe(10);
    expect(list[0]?.series?.lastObservedTime).toMatch(/\.\d{6}Z$/);
    expect(recorder.stats).toMatchObject({ created: 1, seriesUpdates: 1 });
  });

  it("keeps distinct events apart: another reason, action, type or note is another Event", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    const recorder = newRecorder();
    const base = { type: "Normal", reason: "Scaled", action: "Scale", note: "to 3" } as const;
    recorder.event(subject, base);
    recorder.event(subject, { ...base, reason: "Rescaled" });
    recorder.event(subject, { ...base, action: "Resize" });
    recorder.event(subject, { ...base, type: "Warning" });
    recorder.event(subject, { ...base, note: "to 4" });
    recorder.event(subject, base);
    await recorder.flush();
    const list = await events(ns);
    expect(list).toHaveLength(5);
    expect(list.map((e) => e.series?.count ?? 1).sort()).toEqual([1, 1, 1, 1, 2]);
  });

  it("a series survives the object's own updates (its resourceVersion is not part of the key)", async () => {
    const ns = await namespace();
    const before = await configMap(ns);
    const after = await client.update({ ...before, data: { changed: "yes" } });
    const recorder = newRecorder();
    recorder.event(before, { type: "Warning", reason: "Invalid", action: "Validate" });
    recorder.event(after, { type: "Warning", reason: "Invalid", action: "Validate" });
    await recorder.flush();
    const list = await events(ns);
    expect(list).toHaveLength(1);
    expect(list[0]?.series?.count).toBe(2);
  });

  it("writes series counts in the background, at most once per flush interval", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    const recorder = newRecorder({ flushIntervalMs: 300 });
    const warn = () => recorder.event(subject, { type: "Warning", reason: "Retrying", action: "Reconcile" });
    warn();
    await until(async () => (await events(ns)).length === 1, 20_000, "the Event");
    for (let i = 0; i < 4; i++) warn();
    await until(async () => (await events(ns))[0]?.series?.count === 5, 20_000, "series.count 5");
    expect(recorder.stats.seriesUpdates).toBe(1);
  });

  it("starts a new Event when a repeat comes after the series window", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    let now = Date.parse("2026-11-21T23:00:00Z");
    const recorder = newRecorder({ now: () => now, seriesWindowMs: 60_000 });
    const warn = () => recorder.event(subject, { type: "Warning", reason: "Stuck", action: "Reconcile" });
    warn();
    now += 30_000;
    warn(); // within the window: same series
    now += 61_000;
    warn(); // 61 s after the last one: a new Event
    await recorder.flush();
    const list = (await events(ns)).sort((a, b) => a.eventTime.localeCompare(b.eventTime));
    expect(list.map((e) => e.series?.count ?? 1)).toEqual([2, 1]);
    expect(list.map((e) => e.eventTime)).toEqual([
      "2026-11-21T23:00:00.000000Z",
      "2026-11-21T23:01:31.000000Z",
    ]);
    expect(list[0]?.series?.lastObservedTime).toBe("2026-11-21T23:00:30.000000Z");
  });

  it("rate-limits new Events per object with a token bucket; repeats in a series are not charged", async () => {
    const ns = await namespace();
    const noisy = await configMap(ns, "noisy");
    const quiet = await configMap(ns, "quiet");
    let now = Date.parse("2026-11-21T23:00:00Z");
    const recorder = newRecorder({ now: () => now, burst: 3, refillIntervalMs: 60_000 });
    for (let i = 0; i < 5; i++) recorder.event(noisy, { type: "Normal", reason: `Step${i}`, action: "Run" });
    for (let i = 0; i < 5; i++) recorder.event(noisy, { type: "Normal", reason: "Step0", action: "Run" });
    recorder.event(quiet, { type: "Normal", reason: "Step0", action: "Run" }); // its own bucket
    now += 60_000; // one token back
    recorder.event(noisy, { type: "Normal", reason: "Step9", action: "Run" });
    recorder.event(noisy, { type: "Normal", reason: "Step10", action: "Run" });
    await recorder.flush();
    const list = await events(ns);
    const reasons = (name: string) =>
      list
        .filter((e) => e.regarding?.name === name)
        .map((e) => e.reason)
        .sort();
    expect(reasons("noisy")).toEqual(["Step0", "Step1", "Step2", "Step9"]);
    expect(reasons("quiet")).toEqual(["Step0"]);
    expect(list.find((e) => e.regarding?.name === "noisy" && e.reason === "Step0")?.series?.count).toBe(6);
    expect(recorder.stats.dropped).toBe(3);
  });

  it("defaults to client-go's spam filter numbers: a burst of 25, then one per 5 minutes", () => {
    expect(DEFAULT_EVENT_BURST).toBe(25);
    expect(DEFAULT_EVENT_REFILL_MS).toBe(300_000);
  });

  it("puts events about cluster-scoped objects in the default namespace", async () => {
    const ns = await namespace();
    const subject = await client.get({ apiVersion: "v1", kind: "Namespace" }, ns);
    const recorder = newRecorder();
    recorder.event(subject, { type: "Normal", reason: "Observed", action: "Watch" });
    await recorder.flush();
    const list = (await events("default")).filter((e) => e.regarding?.name === ns);
    expect(list).toHaveLength(1);
    expect(list[0]?.regarding).toMatchObject({ kind: "Namespace", name: ns, uid: subject.metadata?.uid });
    expect(list[0]?.regarding?.namespace).toBeUndefined();
  });

  it("cuts a long note to 1 KiB of UTF-8 that the API accepts", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    const recorder = newRecorder({ onError: (error) => expect.fail(error.message) });
    recorder.event(subject, { type: "Warning", reason: "Crashed", action: "Run", note: "é".repeat(2_000) });
    await recorder.flush();
    const note = (await events(ns))[0]?.note ?? "";
    expect(Buffer.byteLength(note)).toBeLessThanOrEqual(MAX_EVENT_NOTE_BYTES);
    expect(note.endsWith("é…")).toBe(true);
  });

  it("a write the server refuses (Forbidden) goes to onError and never throws", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    const user = plane.addUser("nobody");
    const limited = await Client.connect({ kubeconfig: user.kubeconfigPath });
    try {
      const errors: Error[] = [];
      const recorder = newRecorder({ onError: (error) => errors.push(error) }, limited);
      expect(() =>
        recorder.event(subject, { type: "Warning", reason: "Failed", action: "Sync" }),
      ).not.toThrow();
      await recorder.flush();
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(Forbidden);
      expect(errors[0]?.message).toMatch(/cannot create resource "events"/);
      expect(recorder.stats.failed).toBe(1);
      expect(await events(ns)).toHaveLength(0);
    } finally {
      await limited.close();
    }
  });

  it("an invalid event goes to onError as InvalidEvent; a throwing onError does not reach the caller", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    const errors: Error[] = [];
    const recorder = newRecorder({ onError: (error) => errors.push(error) });
    recorder.event(subject, { type: "Normal", reason: "", action: "Run" });
    recorder.event(subject, { type: "Normal", reason: "R", action: "x".repeat(129) });
    recorder.event({ kind: "ConfigMap" }, { type: "Normal", reason: "R", action: "Run" });
    expect(errors.map((e) => e.constructor)).toEqual([InvalidEvent, InvalidEvent, InvalidEvent]);
    const throwing = newRecorder({
      onError: () => {
        throw new Error("bad handler");
      },
    });
    expect(() => throwing.event(subject, { type: "Normal", reason: "", action: "Run" })).not.toThrow();
  });

  it("close() writes pending counts, and events after close are ignored", async () => {
    const ns = await namespace();
    const subject = await configMap(ns);
    const recorder = newRecorder();
    for (let i = 0; i < 3; i++) recorder.event(subject, { type: "Normal", reason: "Tick", action: "Run" });
    await recorder.close();
    recorder.event(subject, { type: "Normal", reason: "Late", action: "Run" });
    await recorder.flush();
    const list = await events(ns);
    expect(list.map((e) => [e.reason, e.series?.count])).toEqual([["Tick", 3]]);
  });

  it("refuses a reportingController the API would reject", () => {
    expect(() => new EventRecorder(client, { reportingController: "not a name" })).toThrow(/qualified name/);
  });
});

describe("event formats", () => {
  it("microTime has exactly six fractional digits, as metav1.MicroTime", () => {
    expect(microTime(Date.parse("2026-11-21T23:00:00.123Z"))).toBe("2026-11-21T23:00:00.123000Z");
  });

  it("truncateNote keeps short notes and never splits a character", () => {
    expect(truncateNote("short")).toBe("short");
    const emoji = truncateNote("🙂".repeat(400)); // 1600 bytes
    expect(Buffer.byteLength(emoji)).toBeLessThanOrEqual(MAX_EVENT_NOTE_BYTES);
    expect(emoji).toBe(`${"🙂".repeat(255)}…`);
  });
});
