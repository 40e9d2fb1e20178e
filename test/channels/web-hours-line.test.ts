/**
 * The web chat's business-hours line (webchat/src/hours.ts, docs/channels.md "Business hours on the
 * web chat"): what it says for each answer of `POST config`, through the string table.
 */
import { describe, expect, it } from "vitest";
import { hoursLine } from "../../webchat/src/hours";

const none = { open_now: true, next_opening: null, reply_time_text: null, reply_time_seconds: null };

describe("the web chat's hours line", () => {
  it("out of hours: away, back at the next opening in the visitor's own clock", () => {
    const next = "2026-01-12T08:00:00.000Z";
    const line = hoursLine({ ...none, open_now: false, next_opening: next });
    const when = new Date(next).toLocaleString([], { weekday: "long", hour: "2-digit", minute: "2-digit" });
    expect(line).toBe(`We're away; back ${when}`);
    expect(hoursLine({ ...none, open_now: false })).toBe("We're away right now");
  });

  it("in hours: the expected reply time, its text first, else its seconds in whole minutes or hours", () => {
    expect(hoursLine(none)).toBeNull();
    expect(hoursLine({ ...none, reply_time_text: "a few hours", reply_time_seconds: 60 })).toBe("Typically replies in a few hours");
    expect(hoursLine({ ...none, reply_time_seconds: 90 })).toMatch(/^Typically replies in 2 min/);
    expect(hoursLine({ ...none, reply_time_seconds: 5400 })).toMatch(/^Typically replies in 2 hr/);
    expect(hoursLine({ ...none, reply_time_seconds: 0 })).toBeNull();
  });
});
