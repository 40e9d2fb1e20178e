/**
 * A route's business hours on its threads screen (docs/inbox.md "Business hours", docs/console.md
 * "Conversations"): whether the route is open now and when it opens next, and, for a key that may
 * write them, the hours to edit (`PUT …/hours`) or drop (`DELETE …/hours`). Read when the panel is
 * first opened, so a route's threads cost no extra request until someone looks.
 */
import { call, path } from "../api";
import { DOORS } from "../doors";
import { field, fill, h, select } from "../dom";
import { can } from "../session";
import { announce, busy, errorBox, when } from "../ui";

interface Hours {
  time_zone: string;
  weekly: Partial<Record<Day, Array<[string, string]>>>;
  away_message: string | null;
  reply_time_text: string | null;
  reply_time_seconds: number | null;
  locale: string;
  agent_out_of_hours: "answer" | "handoff_note";
}

interface HoursView {
  hours: Hours | null;
  open_now: boolean;
  next_opening: string | null;
  updated_at: string | null;
  updated_by: string | null;
}

type Day = "mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun";
const DAYS: Array<[Day, string]> = [
  ["mon", "Monday"],
  ["tue", "Tuesday"],
  ["wed", "Wednesday"],
  ["thu", "Thursday"],
  ["fri", "Friday"],
  ["sat", "Saturday"],
  ["sun", "Sunday"],
];
const INTERVAL = /^(\d\d:\d\d)\s*-\s*(\d\d:\d\d)$/;

/** A day's intervals as an operator types them: "09:00-12:00, 13:00-17:30". */
function dayText(intervals: Array<[string, string]> | undefined): string {
  return (intervals ?? []).map(([a, b]) => `${a}-${b}`).join(", ");
}

/** The intervals of `text`, or the error naming the day. */
function parseDay(label: string, text: string): Array<[string, string]> {
  const parts = text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  return parts.map((p) => {
    const m = INTERVAL.exec(p);
    if (!m) throw new Error(`${label}: write the hours as 09:00-17:00, several separated by commas.`);
    return [m[1], m[2]];
  });
}

/** The panel for `route`: a closed <details> that reads the hours when first opened. */
export function hoursPanel(route: string): HTMLElement | null {
  if (!can(DOORS.hours)) return null;
  const body = h("div", { class: "hours-body" });
  const panel = h("details", { class: "hours" }, h("summary", null, "Business hours"), body);
  let loaded = false;
  panel.addEventListener("toggle", () => {
    if (!panel.open || loaded) return;
    loaded = true;
    void load(route, body);
  });
  return panel;
}

async function load(route: string, body: HTMLElement): Promise<void> {
  const err = errorBox();
  fill(body, h("p", { class: "muted" }, "Loading business hours…"));
  try {
    render(route, body, await call<HoursView>("GET", path(DOORS.hours[1], { route_name: route })));
  } catch (e) {
    err.show(e);
    fill(body, err.el);
  }
}

function render(route: string, box: HTMLElement, v: HoursView): void {
  const state = !v.hours
    ? h("p", null, "No hours set: the route is always open.")
    : h(
        "p",
        null,
        v.open_now ? "Open now." : v.next_opening ? ["Closed. Opens next ", when(v.next_opening), "."] : "Closed: the week has no open hours.",
        v.updated_by ? h("span", { class: "muted" }, ` Set by ${v.updated_by} `, when(v.updated_at)) : null,
      );
  if (!can(DOORS.hoursSet)) {
    fill(box, state, v.hours ? h("pre", null, JSON.stringify(v.hours, null, 2)) : null);
    return;
  }
  const cur = v.hours;
  const input = (name: string, value: string, extra: Record<string, string | number | boolean> = {}) =>
    h("input", { type: "text", name, value, autocomplete: "off", ...extra });
  const zone = input("time_zone", cur?.time_zone ?? Intl.DateTimeFormat().resolvedOptions().timeZone, { required: true });
  const days = DAYS.map(([day, label]) => ({ day, label, el: input(day, dayText(cur?.weekly[day]), { placeholder: "closed" }) }));
  const away = h("textarea", { name: "away_message", rows: 2 });
  away.value = cur?.away_message ?? "";
  const replyText = input("reply_time_text", cur?.reply_time_text ?? "", { placeholder: "a few hours" });
  const replySeconds = input("reply_time_seconds", cur?.reply_time_seconds === null || !cur ? "" : String(cur.reply_time_seconds), {
    type: "number",
    min: 0,
  });
  const locale = input("locale", cur?.locale ?? "en", { required: true });
  const agent = select(
    "agent_out_of_hours",
    [
      ["answer", "Answers; only a handoff says when a person is back"],
      ["handoff_note", "Answers, and says once when a person is back"],
    ],
    cur?.agent_out_of_hours ?? "answer",
  );
  const err = errorBox();
  const save = h("button", { type: "submit", class: "primary" }, "Save hours");
  const form = h(
    "form",
    { class: "hours-form", "aria-label": "Business hours" },
    field("Time zone", zone, "An IANA name, e.g. Europe/Berlin."),
    h(
      "fieldset",
      { class: "hours-week" },
      h("legend", null, "Open hours (e.g. 09:00-12:00, 13:00-17:30; empty: closed)"),
      days.map((d) => field(d.label, d.el)),
    ),
    field("Away message", away, "Sent at a handoff out of hours; {next_opening} becomes the next opening. Empty: the default text."),
    field("Expected reply time", replyText, "Shown on the web chat in hours, e.g. “a few hours”."),
    field("…or in seconds", replySeconds),
    field("Locale of the next opening", locale, "When the person's own is unknown, e.g. de-DE."),
    field("The agent out of hours", agent),
    save,
    err.el,
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void busy(save, err, async () => {
      const weekly: Hours["weekly"] = {};
      for (const d of days) {
        const intervals = parseDay(d.label, d.el.value);
        if (intervals.length) weekly[d.day] = intervals;
      }
      const body: Hours = {
        time_zone: zone.value.trim(),
        weekly,
        away_message: away.value.trim() || null,
        reply_time_text: replyText.value.trim() || null,
        reply_time_seconds: replySeconds.value === "" ? null : Number(replySeconds.value),
        locale: locale.value.trim(),
        agent_out_of_hours: agent.value === "handoff_note" ? "handoff_note" : "answer",
      };
      const got = await call<HoursView>("PUT", path(DOORS.hoursSet[1], { route_name: route }), { body });
      announce(`Business hours of ${route} saved.`);
      render(route, box, got);
    });
  });
  const drop = cur && can(DOORS.hoursDrop) ? h("button", { type: "button", class: "danger" }, "Remove hours") : null;
  drop?.addEventListener("click", () => {
    if (!confirm(`Remove the business hours of ${route}? It will be always open.`)) return;
    void busy(drop, err, async () => {
      await call("DELETE", path(DOORS.hoursDrop[1], { route_name: route }));
      announce(`Business hours of ${route} removed.`);
      await load(route, box);
    });
  });
  fill(box, state, form, drop);
}
