/**
 * The web chat's business-hours line (webchat/src/hours.ts, docs/channels.md "Business hours on the
 * web chat"): what it says for each answer of `POST config`, through the string table in force,
 * the next opening written in the chat's language.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { hoursLine } from "../../webchat/src/hours";
import { setStrings } from "../../webchat/src/strings";
import { STRING_TABLES } from "../../src/web-chat/strings/index";

const none = { open_now: true, next_opening: null, reply_time_text: null, reply_time_seconds: null };

describe("the web chat's hours line", () => {
  beforeEach(() => setStrings(STRING_TABLES.en, "en"));

  it("out of hours: away, back at the next opening in the visitor's own clock", () => {
    const next = "2026-01-12T08:00:00.000Z";
    const line = hoursLine({ ...none, open_now: false, next_opening: next });
    const when = new Date(next).toLocaleString("en", { weekday: "long", hour: "2-digit", minute: "2-digit" });
    expect(line).toBe(`We're away; back ${when}`);
    expect(hoursLine({ ...none, open_now: false })).toBe("We're away right now");
    setStrings(STRING_TABLES.de, "de");
    const wann = new Date(next).toLocaleString("de", { weekday: "long", hour: "2-digit", minute: "2-digit" });
    expect(hoursLine({ ...none, open_now: false, next_opening: next })).toBe(`Wir sind gerade nicht da; zurück ${wann}`);
  });

  it("in hours: the expected reply time, its text first, else its seconds in whole minutes or hours", () => {
    expect(hoursLine(none)).toBeNull();
    expect(hoursLine({ ...none, reply_time_text: "a few hours", reply_time_seconds: 60 })).toBe("Typically replies in a few hours");
    expect(hoursLine({ ...none, reply_time_seconds: 90 })).toMatch(/^Typically replies in 2 min/);
    expect(hoursLine({ ...none, reply_time_seconds: 5400 })).toMatch(/^Typically replies in 2 hr/);
    expect(hoursLine({ ...none, reply_time_seconds: 0 })).toBeNull();
  });
});
