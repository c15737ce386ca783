import { createRequire } from "node:module";
import type { CronExpressionParser } from "cron-parser";
import { after, type ReconcileResult } from "./result.js";

let cronParser: typeof CronExpressionParser | undefined;
/** cron-parser (and luxon under it, ~6 MiB of RSS), loaded by the first schedule, not at import. */
function cron(): typeof CronExpressionParser {
  cronParser ??= (createRequire(import.meta.url)("cron-parser") as typeof import("cron-parser"))
    .CronExpressionParser;
  return cronParser;
}

/**
 * Scheduled work per object (backups, verification, drift checks), computed from what the object's
 * status says ran last and returned as `after(…)`: no timer outlives a reconcile, so a restarted
 * operator picks the schedule up where its status left it.
 *
 * Schedules are standard 5-field cron (`minute hour day-of-month month day-of-week`, in UTC), parsed
 * by `cron-parser`. Missed slots are not back-filled: after downtime, one run covers all of them
 * (CloudNativePG's ScheduledBackup does the same), so an operator that was down for a day does not
 * take 24 hourly backups at once.
 *
 * @example
 * ```ts
 * const schedule = cronSchedule(db.spec.backup.schedule);            // "0 3 * * *"
 * const { due, wait } = nextRun(schedule, { last: db.status?.lastScheduledBackup, since: created, now: ctx.now() });
 * if (due) await takeBackup(db, due);                                // `due` names the slot
 * return wait;                                                       // after(…) until the next slot
 * ```
 */

/** A cron expression that `cronSchedule` rejected; the message says what is wrong with it. */
export class InvalidSchedule extends TypeError {
  override readonly name = "InvalidSchedule";
}

/** A parsed cron expression: the slots before and after a time. From `cronSchedule(expression)`. */
export interface CronSchedule {
  /** The expression as given. */
  readonly expression: string;
  /** The first slot strictly after `time`. */
  next(time: Date): Date;
  /** The last slot at or before `time`, or undefined if there is none. */
  latest(time: Date): Date | undefined;
}

/**
 * Parses a 5-field cron expression (UTC). Throws {@link InvalidSchedule} naming the problem: a
 * wrong number of fields, a value out of range, an unknown name.
 */
export function cronSchedule(expression: string): CronSchedule {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) {
    throw new InvalidSchedule(
      `Schedule "${expression}" has ${fields.length} field(s); use 5: minute hour day-of-month month day-of-week (e.g. "0 3 * * *", daily at 03:00 UTC)`,
    );
  }
  const parse = (currentDate: Date) => {
    try {
      return cron().parse(fields.join(" "), { currentDate, tz: "UTC", strict: false });
    } catch (error) {
      throw new InvalidSchedule(`Schedule "${expression}" is not valid cron: ${(error as Error).message}`);
    }
  };
  parse(new Date(0));
  return {
    expression,
    next: (time) => parse(time).next().toDate(),
    latest: (time) => {
      // prev() is strictly before its start; a millisecond later includes a slot at `time` itself.
      const cron = parse(new Date(time.getTime() + 1));
      return cron.hasPrev() ? cron.prev().toDate() : undefined;
    },
  };
}

/** Where a scheduled object stands at `now`: the slot due, if any, the next one, and the wait until it. */
export interface ScheduleState {
  /** The slot that is due now (the latest one at or before `now` and after `last`), if any. */
  due: Date | undefined;
  /** The first slot after `now`. */
  next: Date;
  /** `after(next − now)`: what the reconcile returns to come back at the next slot. */
  wait: ReconcileResult;
}

/**
 * Where a schedule stands: which slot is due now, and when the next one is.
 *
 * - `last`: the slot of the last run (kept in the object's status); slots up to it are done.
 * - `since`: when scheduling began (e.g. the object's creation): slots before it never fall due,
 *   so a new object does not run at once for a slot that passed before it existed.
 * - `now`: the current time (from an injectable clock, so tests can move it).
 */
export function nextRun(
  schedule: CronSchedule | string,
  times: { last?: Date | string | undefined; since: Date | string; now: Date },
): ScheduleState {
  const cron = typeof schedule === "string" ? cronSchedule(schedule) : schedule;
  const floor = Math.max(toTime(times.since), times.last === undefined ? -Infinity : toTime(times.last));
  const latest = cron.latest(times.now);
  const due = latest && latest.getTime() > floor ? latest : undefined;
  const next = cron.next(times.now);
  return { due, next, wait: after(Math.max(0, next.getTime() - times.now.getTime())) };
}

function toTime(time: Date | string): number {
  const ms = typeof time === "string" ? Date.parse(time) : time.getTime();
  if (Number.isNaN(ms)) throw new RangeError(`Not a time: ${String(time)}`);
  return ms;
}
