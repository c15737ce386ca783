import { describe, expect, it } from "vitest";
import {
  type Condition,
  findCondition,
  isFalse,
  isTrue,
  MAX_CONDITION_MESSAGE_LENGTH,
  removeCondition,
  setCondition,
} from "./conditions.js";
import { InvalidCondition } from "./errors.js";

const t0 = new Date("2026-11-21T23:00:00.789Z");
const t1 = new Date("2026-11-21T23:05:00Z");
const t2 = new Date("2026-11-21T23:10:00Z");

const ready = (status: boolean, reason = "Ready", message = "") => ({
  type: "Ready",
  status,
  reason,
  message,
  observedGeneration: 1,
});

describe("setCondition", () => {
  it("adds a new condition with lastTransitionTime now, in whole seconds like metav1.Time", () => {
    expect(setCondition(undefined, ready(true), t0)).toEqual([
      {
        type: "Ready",
        status: "True",
        reason: "Ready",
        message: "",
        observedGeneration: 1,
        lastTransitionTime: "2026-11-21T23:00:00Z",
      },
    ]);
  });

  it("keeps lastTransitionTime when only the reason, message or observedGeneration change", () => {
    const first = setCondition([], ready(false, "Pending", "0/3 ready"), t0);
    const second = setCondition(
      first,
      { ...ready(false, "Scaling", "2/3 ready"), observedGeneration: 2 },
      t1,
    );
    expect(second).toEqual([
      {
        type: "Ready",
        status: "False",
        reason: "Scaling",
        message: "2/3 ready",
        observedGeneration: 2,
        lastTransitionTime: "2026-11-21T23:00:00Z",
      },
    ]);
  });

  it("moves lastTransitionTime when the status changes", () => {
    const first = setCondition([], ready(false, "Pending"), t0);
    const second = setCondition(first, ready(true, "Available"), t1);
    expect(findCondition(second, "Ready")?.lastTransitionTime).toBe("2026-11-21T23:05:00Z");
    const third = setCondition(second, { ...ready(true), status: "Unknown" }, t2);
    expect(findCondition(third, "Ready")?.lastTransitionTime).toBe("2026-11-21T23:10:00Z");
  });

  it("never changes its input, keeps the order, and appends new types at the end", () => {
    const input: Condition[] = setCondition(setCondition([], ready(true), t0), {
      type: "Degraded",
      status: false,
      reason: "AsExpected",
    });
    const snapshot = structuredClone(input);
    const output = setCondition(input, ready(false, "Lost"), t1);
    expect(input).toEqual(snapshot);
    expect(output).not.toBe(input);
    expect(output.map((c) => c.type)).toEqual(["Ready", "Degraded"]);
    expect(
      setCondition(output, { type: "example.com/Backup", status: "Unknown", reason: "NotChecked" }).map(
        (c) => c.type,
      ),
    ).toEqual(["Ready", "Degraded", "example.com/Backup"]);
  });

  it("accepts reasons the API accepts: CamelCase, digits, and _ , : inside", () => {
    for (const reason of ["A", "Ready", "Min_Replicas", "Pods1,Pods2", "Phase:Done", "x9_"]) {
      expect(findCondition(setCondition([], { type: "Ready", status: true, reason }), "Ready")?.reason).toBe(
        reason,
      );
    }
  });

  it("rejects reasons the API would reject (422), before any request", () => {
    for (const reason of ["", "ready now", "9Lives", "Done.", "Trailing,", "with-dash", "é"]) {
      expect(() => setCondition([], { type: "Ready", status: true, reason }), reason).toThrow(
        InvalidCondition,
      );
    }
    expect(() => setCondition([], { type: "Ready", status: true, reason: "ready now" })).toThrow(/CamelCase/);
  });

  it("rejects bad types, statuses and observedGenerations", () => {
    expect(() => setCondition([], { type: "not ok", status: true, reason: "R" })).toThrow(/Condition type/);
    expect(() => setCondition([], { type: "Example.com/Ready", status: true, reason: "R" })).toThrow(
      InvalidCondition,
    );
    expect(() => setCondition([], { type: "Ready", status: "true" as "True", reason: "R" })).toThrow(
      /status/,
    );
    expect(() =>
      setCondition([], { type: "Ready", status: true, reason: "R", observedGeneration: -1 }),
    ).toThrow(/observedGeneration/);
  });

  it("truncates a message longer than the API allows (32768 characters), ending it with …", () => {
    const long = `${"ü".repeat(MAX_CONDITION_MESSAGE_LENGTH)}tail`;
    const message =
      findCondition(setCondition([], { ...ready(false), message: long }), "Ready")?.message ?? "";
    expect(Array.from(message)).toHaveLength(MAX_CONDITION_MESSAGE_LENGTH);
    expect(message.endsWith("ü…")).toBe(true);
    const exact = "x".repeat(MAX_CONDITION_MESSAGE_LENGTH);
    expect(findCondition(setCondition([], { ...ready(false), message: exact }), "Ready")?.message).toBe(
      exact,
    );
  });

  it("counts characters, not UTF-16 units: an emoji message at the limit is kept whole", () => {
    const emoji = "🙂".repeat(MAX_CONDITION_MESSAGE_LENGTH); // 65536 UTF-16 units, 32768 characters
    expect(findCondition(setCondition([], { ...ready(false), message: emoji }), "Ready")?.message).toBe(
      emoji,
    );
  });
});

describe("findCondition / isTrue / isFalse / removeCondition", () => {
  const conditions = setCondition(setCondition([], ready(true)), {
    type: "Degraded",
    status: "Unknown",
    reason: "NotChecked",
  });

  it("find the condition of a type", () => {
    expect(findCondition(conditions, "Degraded")?.reason).toBe("NotChecked");
    expect(findCondition(conditions, "Missing")).toBeUndefined();
    expect(findCondition(undefined, "Ready")).toBeUndefined();
  });

  it("isTrue and isFalse are both false for Unknown and for a missing condition", () => {
    expect(isTrue(conditions, "Ready")).toBe(true);
    expect(isFalse(conditions, "Ready")).toBe(false);
    expect(isTrue(conditions, "Degraded")).toBe(false);
    expect(isFalse(conditions, "Degraded")).toBe(false);
    expect(isTrue(conditions, "Missing") || isFalse(conditions, "Missing")).toBe(false);
    expect(isFalse(setCondition(conditions, ready(false)), "Ready")).toBe(true);
  });

  it("removeCondition returns the others and leaves the input unchanged", () => {
    expect(removeCondition(conditions, "Ready").map((c) => c.type)).toEqual(["Degraded"]);
    expect(conditions).toHaveLength(2);
    expect(removeCondition(undefined, "Ready")).toEqual([]);
  });
});
