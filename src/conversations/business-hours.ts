/**
 * A route's business hours (docs/inbox.md, "Business hours"): the policy's shape and the pure time
 * logic on it. Wall-clock times are read and made with Intl.DateTimeFormat in the policy's IANA
 * time zone, so daylight-saving changes follow the zone's own rules with no library.
 *
 * An interval whose end is not after its start runs past midnight into the next day ("22:00" to
 * "02:00"); "24:00" ends a day. An opening time that a spring-forward change skips opens as much
 * later as the gap is long; one a fall-back change repeats opens at its first occurrence.
 */
import { z } from "zod";
import { nonBlankText } from "../platform/http/identifiers";

export const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$|^24:00$/;
const clock = z.string().regex(HHMM, { message: "must be HH:MM (00:00 to 24:00)" });

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Whether `tag` is a BCP 47 locale Intl accepts. */
export function isLocale(tag: string): boolean {
  try {
    return new Intl.Locale(tag).baseName.length > 0;
  } catch {
    return false;
  }
}

const Interval = z
  .tuple([clock, clock])
  .refine(([from, to]) => from !== to, { message: "an interval must not start and end at the same time" })
  .refine(([from]) => from !== "24:00", { message: "an interval cannot start at 24:00" });

const Day = z.array(Interval).max(8);

export const WeeklyHours = z
  .object({ mon: Day.optional(), tue: Day.optional(), wed: Day.optional(), thu: Day.optional(), fri: Day.optional(), sat: Day.optional(), sun: Day.optional() })
  .strict();
export type WeeklyHours = z.infer<typeof WeeklyHours>;

/**
 * The business-hours policy of a route (`PUT /api/conversations/{route_name}/hours`). A weekday
 * left out or empty is closed all day.
 */
export const BusinessHours = z
  .object({
    time_zone: z.string().min(1).max(64).refine(isTimeZone, { message: "must be an IANA time zone name, e.g. Europe/Berlin" }),
    weekly: WeeklyHours,
    /** Sent out of hours at a handoff instead of the holding message; `{next_opening}` is replaced (null: the default text). */
    away_message: nonBlankText(1024).nullable().default(null),
    /** Shown as "typically replies in …" (free text), or its seconds. */
    reply_time_text: nonBlankText(200).nullable().default(null),
    reply_time_seconds: z
      .number()
      .int()
      .min(0)
      .max(30 * 86_400)
      .nullable()
      .default(null),
    /** The locale the next opening is written in when the person's is unknown. */
    locale: z.string().min(2).max(35).refine(isLocale, { message: "must be a BCP 47 locale, e.g. de-DE" }).default("en"),
    /**
     * Out of hours the agent answers either way; only a handoff says when a person is back (`answer`),
     * or the customer is also told beside the agent's answer, once per closed period (`handoff_note`).
     */
    agent_out_of_hours: z.enum(["answer", "handoff_note"]).default("answer"),
  })
  .strict();
export type BusinessHours = z.infer<typeof BusinessHours>;

export const DEFAULT_AWAY_MESSAGE = "We are away right now. A person will be back {next_opening}.";

function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

interface Wall {
  year: number;
  month: number;
  day: number;
  weekday: number;
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall clock in `zone` at `ms`. */
function wallAt(zone: string, ms: number): Wall & { second: number; hour: number } {
  const parts: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(new Date(ms))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  const year = parts.year ?? 0;
  const month = parts.month ?? 1;
  const day = parts.day ?? 1;
  const hour = (parts.hour ?? 0) % 24;
  return {
    year,
    month,
    day,
    hour,
    second: parts.second ?? 0,
    minute: hour * 60 + (parts.minute ?? 0),
    weekday: new Date(Date.UTC(year, month - 1, day)).getUTCDay(),
  };
}

/** The zone's offset from UTC at `ms`, in ms. */
function offsetAt(zone: string, ms: number): number {
  const w = wallAt(zone, ms);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, 0, w.minute, w.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/**
 * The instant the wall clock in `zone` reads the given local date and minute of day: the earlier
 * one of a time a fall-back change repeats; a time a spring-forward change skips is moved on by the gap.
 */
function instantOf(zone: string, year: number, month: number, day: number, minuteOfDay: number): number {
  const wall = Date.UTC(year, month - 1, day, 0, minuteOfDay);
  // A change happens at most once a day: the offsets a day before and after bracket any change.
  const before = wall - offsetAt(zone, wall - 86_400_000);
  const after = wall - offsetAt(zone, wall + 86_400_000);
  const matching = [before, after].filter((t) => t + offsetAt(zone, t) === wall);
  return matching.length ? Math.min(...matching) : Math.max(before, after);
}

function intervals(policy: Pick<BusinessHours, "weekly">, weekday: number): Array<[number, number]> {
  return (policy.weekly[WEEKDAYS[weekday] as Weekday] ?? []).map(([a, b]) => [minutes(a), minutes(b)]);
}

/** Whether the route is open at `at`. */
export function isOpen(policy: Pick<BusinessHours, "weekly" | "time_zone">, at: Date): boolean {
  const w = wallAt(policy.time_zone, at.getTime());
  for (const [from, to] of intervals(policy, w.weekday)) {
    if (to > from ? w.minute >= from && w.minute < to : w.minute >= from) return true;
  }
  // Yesterday's intervals that run past midnight.
  for (const [from, to] of intervals(policy, (w.weekday + 6) % 7)) if (to <= from && w.minute < to) return true;
  return false;
}

/** The next instant at or after `at` when the route opens: `at` itself when open, null when the week has no hours. */
export function nextOpening(policy: Pick<BusinessHours, "weekly" | "time_zone">, at: Date): Date | null {
  if (isOpen(policy, at)) return at;
  const now = at.getTime();
  const w = wallAt(policy.time_zone, now);
  let best: number | null = null;
  // Eight days ahead covers a week whose only opening is earlier today's weekday.
  for (let k = 0; k <= 8; k++) {
    const date = new Date(Date.UTC(w.year, w.month - 1, w.day + k));
    for (const [from] of intervals(policy, date.getUTCDay())) {
      const t = instantOf(policy.time_zone, date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), from);
      if (t > now && (best === null || t < best)) best = t;
    }
    if (best !== null) break;
  }
  return best === null ? null : new Date(best);
}

/** The next opening as a person reads it, in the policy's zone: "Monday 09:00 CET". */
export function formatOpening(policy: Pick<BusinessHours, "time_zone" | "locale">, at: Date, locale?: string | null): string {
  const tag = locale && isLocale(locale) ? locale : policy.locale;
  return new Intl.DateTimeFormat(tag, { timeZone: policy.time_zone, weekday: "long", hour: "2-digit", minute: "2-digit", timeZoneName: "short" }).format(at);
}

/** The away message for a handoff at `at` (null when the route is open then). */
export function awayMessage(policy: BusinessHours, at: Date, locale?: string | null): string | null {
  if (isOpen(policy, at)) return null;
  const next = nextOpening(policy, at);
  const text = policy.away_message ?? DEFAULT_AWAY_MESSAGE;
  const when = next === null ? "as soon as possible" : formatOpening(policy, next, locale);
  return text.replaceAll("{next_opening}", when);
}

/** What a page may show: open now, the next opening (ISO; null while open or with no hours), the expected reply time. */
export function hoursView(
  policy: BusinessHours | null,
  at: Date,
): { open_now: boolean; next_opening: string | null; reply_time_text: string | null; reply_time_seconds: number | null } {
  if (policy === null) return { open_now: true, next_opening: null, reply_time_text: null, reply_time_seconds: null };
  const open = isOpen(policy, at);
  const next = open ? null : nextOpening(policy, at);
  return {
    open_now: open,
    next_opening: next === null ? null : next.toISOString(),
    reply_time_text: policy.reply_time_text,
    reply_time_seconds: policy.reply_time_seconds,
  };
}
