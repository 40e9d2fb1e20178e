/**
 * Schedule specs (pure; src/schedules/spec.ts, cron.ts): the two spellings compile to one
 * five-field expression, timezones are IANA names, errors name the field and never the value, and
 * the derived name is stable per spec.
 */
import { describe, expect, it } from "vitest";
import { canonicalTimezone, compileCron } from "../../src/schedules/cron";
import { ScheduleKwargs, cadenceOf, derivedScheduleName } from "../../src/schedules/spec";
import { must } from "../../src/platform/must";

const cadence = (k: unknown) => {
  const parsed = ScheduleKwargs.safeParse(k);
  if (!parsed.success) return { refused: parsed.error.issues.map((i) => i.message).join("; ") };
  const c = cadenceOf(parsed.data);
  return "error" in c ? { error: c.error } : c.kind === "once" ? { once: true } : { expression: c.expression, timezone: c.timezone };
};

describe("cadenceOf", () => {
  it("{} runs once; cron and the crontab fields compile to the same expression", () => {
    expect(cadence({})).toEqual({ once: true });
    expect(cadence({ cron: " */15  9-17 * * mon-fri " })).toEqual({ expression: "*/15 9-17 * * mon-fri", timezone: "UTC" });
    expect(cadence({ minute: "*/15", hour: "9-17", day_of_week: "mon-fri" })).toEqual({ expression: "*/15 9-17 * * mon-fri", timezone: "UTC" });
    expect(cadence({ minute: 0, hour: 3, timezone: "Europe/Berlin" })).toEqual({ expression: "0 3 * * *", timezone: "Europe/Berlin" });
    expect(cadence({ cron: "@daily" })).toEqual({ expression: "@daily", timezone: "UTC" });
  });

  it("refuses cron with fields, a lone timezone, stray keys, bad expressions and unknown zones, naming the field only", () => {
    expect(cadence({ cron: "* * * * *", minute: 1 }).refused).toMatch(/not both/);
    expect(cadence({ timezone: "UTC" }).refused).toMatch(/timezone needs/);
    expect(cadence({ every: "minute" }).refused).toBeDefined();
    expect(cadence({ minute: "1 2" }).refused).toMatch(/one crontab field/);
    for (const bad of ["61 * * * *", "* * * *", "* * * * * *", "? * * * *", "@reboot", "0 0 31 2 *x"]) {
      const r = cadence({ cron: bad });
      expect(r, bad).toEqual({ error: "schedule_kwargs.cron: not a valid five-field crontab expression" });
    }
    expect(cadence({ hour: 30 })).toEqual({ error: "schedule_kwargs (crontab fields): not a valid five-field crontab expression" });
    expect(cadence({ cron: "* * * * *", timezone: "Mars/Olympus_Mons" })).toEqual({
      error: "schedule_kwargs.timezone: not an IANA timezone name this service knows",
    });
    expect(cadence({ cron: "* * * * *", timezone: "+01:00" }).error).toMatch(/timezone/);
  });

  it("an expression no date matches compiles but never fires", () => {
    expect(must(compileCron("0 0 30 2 *", "UTC"), 'compileCron("0 0 30 2 *", "UTC")').nextAfter(Date.UTC(2026, 0, 1))).toBeNull();
  });
});

describe("canonicalTimezone", () => {
  it("answers the canonical IANA spelling, or null", () => {
    expect(canonicalTimezone("UTC")).toBe("UTC");
    expect(canonicalTimezone("America/New_York")).toBe("America/New_York");
    expect(canonicalTimezone("Nowhere/City")).toBeNull();
    expect(canonicalTimezone("")).toBeNull();
  });
});

describe("derivedScheduleName", () => {
  it("is <tool>_<12 hex>, the same for the same spec whatever the key order, different for another spec", async () => {
    const a = await derivedScheduleName("echo", { message: "hi", n: { b: 1, a: 2 } }, "* * * * *", "UTC");
    expect(a).toMatch(/^echo_[0-9a-f]{12}$/);
    expect(await derivedScheduleName("echo", { n: { a: 2, b: 1 }, message: "hi" }, "* * * * *", "UTC")).toBe(a);
    expect(await derivedScheduleName("echo", { message: "hi", n: { b: 1, a: 2 } }, "*/2 * * * *", "UTC")).not.toBe(a);
    expect(await derivedScheduleName("echo", { message: "hi", n: { b: 1, a: 2 } }, "* * * * *", "Europe/Berlin")).not.toBe(a);
  });
});
