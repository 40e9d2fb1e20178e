/**
 * The catch-up rule (pure; src/schedules/catch-up.ts; docs/schedules.md "Missed fires"), driven with
 * a fake clock over the real cron library: on time → the regular fire; after downtime → at most
 * one catch-up fire for the latest missed slot within the window, the rest skipped and counted;
 * then the next regular slot.
 */
import { describe, expect, it } from "vitest";
import { COUNT_CAP, ON_TIME_MS, planAlarm } from "../../src/schedules/catch-up";
import { compileCron } from "../../src/schedules/cron";
import { must } from "../../src/platform/must";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 0, 5, 12, 0, 0); // a Monday, 12:00 UTC
const everyMinute = must(compileCron("* * * * *", "UTC"), 'compileCron("* * * * *", "UTC")');
const daily3 = must(compileCron("0 3 * * *", "UTC"), 'compileCron("0 3 * * *", "UTC")');

describe("planAlarm", () => {
  it("an early or stray alarm fires nothing and stays armed for its slot", () => {
    expect(planAlarm(everyMinute, T0, T0 - 5, DAY)).toEqual({ fire: null, skipped: 0, skipped_capped: false, next_at: T0 });
  });

  it("on time: the regular fire for the armed slot, then the next slot", () => {
    expect(planAlarm(everyMinute, T0, T0 + 30, DAY)).toEqual({ fire: { slot_at: T0, catch_up: false }, skipped: 0, skipped_capped: false, next_at: T0 + MIN });
    expect(planAlarm(daily3, Date.UTC(2026, 0, 6, 3), Date.UTC(2026, 0, 6, 3) + ON_TIME_MS, DAY).fire).toEqual({
      slot_at: Date.UTC(2026, 0, 6, 3),
      catch_up: false,
    });
  });

  it("after downtime: one catch-up fire for the latest missed slot, the others skipped, then the next regular slot", () => {
    // Down from 12:00 to 12:10:30: slots 12:00 … 12:10 are due (11 of them).
    const plan = planAlarm(everyMinute, T0, T0 + 10 * MIN + 30_000, DAY);
    expect(plan).toEqual({ fire: { slot_at: T0 + 10 * MIN, catch_up: true }, skipped: 10, skipped_capped: false, next_at: T0 + 11 * MIN });
    // A daily job down three days: one catch-up (the latest 03:00), two skipped.
    const d = planAlarm(daily3, Date.UTC(2026, 0, 6, 3), Date.UTC(2026, 0, 8, 9), DAY);
    expect(d).toEqual({ fire: { slot_at: Date.UTC(2026, 0, 8, 3), catch_up: true }, skipped: 2, skipped_capped: false, next_at: Date.UTC(2026, 0, 9, 3) });
  });

  it("a single slot run late is a catch-up fire within the window", () => {
    expect(planAlarm(daily3, Date.UTC(2026, 0, 6, 3), Date.UTC(2026, 0, 6, 5), DAY)).toMatchObject({
      fire: { slot_at: Date.UTC(2026, 0, 6, 3), catch_up: true },
      skipped: 0,
    });
  });

  it("missed slots older than the window are skipped without a fire; window 0 never catches up", () => {
    expect(planAlarm(daily3, Date.UTC(2026, 0, 6, 3), Date.UTC(2026, 0, 8, 9), 3 * HOUR)).toEqual({
      fire: null,
      skipped: 3,
      skipped_capped: false,
      next_at: Date.UTC(2026, 0, 9, 3),
    });
    expect(planAlarm(everyMinute, T0, T0 + 5 * MIN + 1000, 0)).toEqual({ fire: null, skipped: 6, skipped_capped: false, next_at: T0 + 6 * MIN });
    // On time is on time, whatever the window.
    expect(planAlarm(everyMinute, T0, T0 + 1000, 0).fire).toEqual({ slot_at: T0, catch_up: false });
  });

  it("a very long downtime counts up to the cap and still catches up the latest slot only", () => {
    const now = T0 + 30 * DAY + 15_000;
    const plan = planAlarm(everyMinute, T0, now, DAY);
    expect(plan.fire).toEqual({ slot_at: T0 + 30 * DAY, catch_up: true });
    expect(plan.skipped).toBe(COUNT_CAP - 1);
    expect(plan.skipped_capped).toBe(true);
    expect(plan.next_at).toBe(T0 + 30 * DAY + MIN);
  });

  it("follows the schedule's timezone across a DST change", () => {
    // 09:00 in Berlin: 08:00 UTC in winter, 07:00 UTC after the switch on 2026-03-29.
    const berlin9 = must(compileCron("0 9 * * *", "Europe/Berlin"), 'compileCron("0 9 * * *", "Europe/Berli…');
    expect(berlin9.nextAfter(Date.UTC(2026, 2, 28, 12))).toBe(Date.UTC(2026, 2, 29, 7));
    expect(berlin9.nextAfter(Date.UTC(2026, 2, 27, 12))).toBe(Date.UTC(2026, 2, 28, 8));
    expect(planAlarm(berlin9, Date.UTC(2026, 2, 28, 8), Date.UTC(2026, 2, 28, 8, 0, 1), DAY).next_at).toBe(Date.UTC(2026, 2, 29, 7));
  });
});
