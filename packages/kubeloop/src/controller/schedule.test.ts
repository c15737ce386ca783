import { describe, expect, it } from "vitest";
import { cronSchedule, InvalidSchedule, nextRun } from "./schedule.js";

const t = (iso: string) => new Date(iso);

describe("cronSchedule", () => {
  it("gives the next slot strictly after a time, in UTC", () => {
    const daily = cronSchedule("0 3 * * *");
    expect(daily.next(t("2030-01-01T02:59:59Z")).toISOString()).toBe("2030-01-01T03:00:00.000Z");
    expect(daily.next(t("2030-01-01T03:00:00Z")).toISOString()).toBe("2030-01-02T03:00:00.000Z");
    const weekdays = cronSchedule("*/15 9-17 * * 1-5");
    // 2030-01-05 is a Saturday: the next slot is Monday 09:00.
    expect(weekdays.next(t("2030-01-04T17:50:00Z")).toISOString()).toBe("2030-01-07T09:00:00.000Z");
  });

  it("gives the latest slot at or before a time, a slot at that very time included", () => {
    const hourly = cronSchedule("0 * * * *");
    expect(hourly.latest(t("2030-01-01T03:00:00Z"))?.toISOString()).toBe("2030-01-01T03:00:00.000Z");
    expect(hourly.latest(t("2030-01-01T03:59:59Z"))?.toISOString()).toBe("2030-01-01T03:00:00.000Z");
  });

  it("accepts names and lists", () => {
    expect(cronSchedule("30 2 1,15 jan,jul sun").next(t("2030-01-01T00:00:00Z")).toISOString()).toBe(
      "2030-01-01T02:30:00.000Z",
    );
  });

  it("rejects anything but 5 fields, naming the count and the form to use", () => {
    expect(() => cronSchedule("0 0 3 * * *")).toThrow(InvalidSchedule);
    expect(() => cronSchedule("0 0 3 * * *")).toThrow(/has 6 field\(s\); use 5: minute hour day-of-month/);
    expect(() => cronSchedule("@daily")).toThrow(/has 1 field\(s\)/);
  });

  it("rejects values out of range with the parser's reason", () => {
    expect(() => cronSchedule("61 * * * *")).toThrow(/Schedule "61 \* \* \* \*" is not valid cron: .*0-59/);
    expect(() => cronSchedule("0 25 * * *")).toThrow(InvalidSchedule);
    expect(() => cronSchedule("0 0 * foo *")).toThrow(InvalidSchedule);
  });
});

describe("nextRun", () => {
  const since = "2030-01-01T00:10:00Z";

  it("has nothing due before the first slot after `since`, and waits until it", () => {
    const state = nextRun("0 * * * *", { since, now: t("2030-01-01T00:30:00Z") });
    expect(state.due).toBeUndefined();
    expect(state.next.toISOString()).toBe("2030-01-01T01:00:00.000Z");
    expect(state.wait).toEqual({ kind: "after", delayMs: 30 * 60_000 });
  });

  it("has the slot due once it passed and was not run", () => {
    const state = nextRun("0 * * * *", { since, now: t("2030-01-01T01:00:05Z") });
    expect(state.due?.toISOString()).toBe("2030-01-01T01:00:00.000Z");
    expect(state.next.toISOString()).toBe("2030-01-01T02:00:00.000Z");
  });

  it("has nothing due once the slot ran (last = the slot)", () => {
    const state = nextRun("0 * * * *", {
      since,
      last: "2030-01-01T01:00:00Z",
      now: t("2030-01-01T01:20:00Z"),
    });
    expect(state.due).toBeUndefined();
  });

  it("does not back-fill missed slots: after downtime only the latest is due", () => {
    const state = nextRun("0 * * * *", {
      since,
      last: "2030-01-01T01:00:00Z",
      now: t("2030-01-01T07:30:00Z"),
    });
    expect(state.due?.toISOString()).toBe("2030-01-01T07:00:00.000Z");
    expect(state.next.toISOString()).toBe("2030-01-01T08:00:00.000Z");
  });

  it("rejects a time that is not one", () => {
    expect(() => nextRun("0 * * * *", { since: "yesterday", now: new Date() })).toThrow(
      /Not a time: yesterday/,
    );
  });
});
