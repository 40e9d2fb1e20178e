/**
 * The line the chat shows about its route's business hours (docs/channels.md, "Business hours on
 * the web chat"), from `POST config`: out of hours, when people are back, written in the chat's
 * language and the visitor's own time zone (the browser's); in hours, the expected reply time when
 * the route sets one.
 */
import { locale, t } from "./strings";

export type Hours = { open_now: boolean; next_opening: string | null; reply_time_text: string | null; reply_time_seconds: number | null };

/** The line for `h`, or null when there is nothing to say. */
export function hoursLine(h: Hours): string | null {
  if (!h.open_now)
    return h.next_opening
      ? t("hours.away", { when: new Date(h.next_opening).toLocaleString(locale(), { weekday: "long", hour: "2-digit", minute: "2-digit" }) })
      : t("hours.closed");
  const s = h.reply_time_seconds ?? 0;
  // Seconds are said in whole minutes, or whole hours from one hour on, rounded up ("5 min", "2 hr").
  const unit = s < 3600 ? 60 : 3600;
  const time = h.reply_time_text ?? (s && new Intl.NumberFormat(locale(), { style: "unit", unit: unit > 60 ? "hour" : "minute" }).format(Math.ceil(s / unit)));
  return time ? t("hours.reply", { time }) : null;
}
