/**
 * Cron expressions through a kept library (croner, no dependencies, pure JavaScript: it runs in
 * workerd as is; docs/schedules.md "Cron"). Five fields (minute hour day-of-month month
 * day-of-week), evaluated in an IANA timezone, day-of-month and day-of-week combined with OR as in
 * Vixie cron; croner's extensions (`L`, `W`, `#`, names, nicknames such as `@daily`) come along.
 * croner's `?` (the current time at construction) is refused: a schedule must not depend on when
 * it was read. The library's error texts quote the input, so none is passed on.
 */
import { Cron } from "croner";

/** A compiled schedule: the next slot strictly after an instant, in epoch ms (null: never again). */
export interface SlotSource {
  nextAfter(ms: number): number | null;
  /** The latest slot at or before `ms` (null: none). */
  latestAtOrBefore(ms: number): number | null;
}

/** Is `tz` an IANA timezone name this runtime knows? Answers its canonical spelling, or null. */
export function canonicalTimezone(tz: string): string | null {
  // Names only: offsets ("+01:00") are not IANA zones, and a schedule should follow a place's DST.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/.test(tz) || tz.length > 64) return null;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** Compiles a five-field expression in `timezone` (already canonical); null when it is not one. */
export function compileCron(expression: string, timezone: string): SlotSource | null {
  if (expression.includes("?") || expression.length > 256) return null;
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone, mode: "5-part", paused: true });
  } catch {
    return null;
  }
  return {
    nextAfter(ms) {
      return cron.nextRun(new Date(ms))?.getTime() ?? null;
    },
    latestAtOrBefore(ms) {
      // previousRuns counts runs strictly before its reference: one ms later includes `ms` itself.
      return cron.previousRuns(1, new Date(ms + 1))[0]?.getTime() ?? null;
    },
  };
}
