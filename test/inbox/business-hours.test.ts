import { describe, expect, it } from "vitest";
import { BusinessHours, awayMessage, formatOpening, hoursView, isOpen, nextOpening } from "../../src/conversations/business-hours";

const office = BusinessHours.parse({
  time_zone: "Europe/Berlin",
  weekly: {
    mon: [
      ["09:00", "12:00"],
      ["13:00", "17:30"],
    ],
    tue: [["09:00", "17:30"]],
    wed: [["09:00", "17:30"]],
    thu: [["09:00", "17:30"]],
    fri: [["09:00", "15:00"]],
  },
});

const at = (iso: string) => new Date(iso);

describe("business hours: isOpen", () => {
  it("reads the wall clock in the policy's zone, with several intervals a day", () => {
    // 2026-01-05 is a Monday; Berlin is UTC+1 in winter.
    expect(isOpen(office, at("2026-01-05T07:59:00Z"))).toBe(false);
    expect(isOpen(office, at("2026-01-05T08:00:00Z"))).toBe(true);
    expect(isOpen(office, at("2026-01-05T11:30:00Z"))).toBe(false); // lunch 12:30 local
    expect(isOpen(office, at("2026-01-05T12:00:00Z"))).toBe(true);
    expect(isOpen(office, at("2026-01-05T16:29:59Z"))).toBe(true);
    expect(isOpen(office, at("2026-01-05T16:30:00Z"))).toBe(false); // end is exclusive
  });

  it("keeps closed days closed", () => {
    expect(isOpen(office, at("2026-01-10T10:00:00Z"))).toBe(false); // Saturday
    expect(isOpen(office, at("2026-01-11T10:00:00Z"))).toBe(false); // Sunday
  });

  it("follows summer time: 09:00 local is 07:00Z in July", () => {
    expect(isOpen(office, at("2026-07-06T06:59:00Z"))).toBe(false);
    expect(isOpen(office, at("2026-07-06T07:00:00Z"))).toBe(true);
  });

  it("runs an interval past midnight into the next day", () => {
    const night = BusinessHours.parse({ time_zone: "UTC", weekly: { fri: [["22:00", "02:00"]] } });
    expect(isOpen(night, at("2026-01-09T21:59:00Z"))).toBe(false);
    expect(isOpen(night, at("2026-01-09T23:00:00Z"))).toBe(true);
    expect(isOpen(night, at("2026-01-10T01:59:00Z"))).toBe(true); // Saturday morning
    expect(isOpen(night, at("2026-01-10T02:00:00Z"))).toBe(false);
    expect(isOpen(night, at("2026-01-10T23:00:00Z"))).toBe(false);
  });

  it("ends a day at 24:00", () => {
    const late = BusinessHours.parse({ time_zone: "UTC", weekly: { mon: [["20:00", "24:00"]] } });
    expect(isOpen(late, at("2026-01-05T23:59:59Z"))).toBe(true);
    expect(isOpen(late, at("2026-01-06T00:00:00Z"))).toBe(false);
  });

  it("a week without hours is never open and has no next opening", () => {
    const none = BusinessHours.parse({ time_zone: "Asia/Tokyo", weekly: {} });
    expect(isOpen(none, at("2026-01-05T03:00:00Z"))).toBe(false);
    expect(nextOpening(none, at("2026-01-05T03:00:00Z"))).toBeNull();
    expect(awayMessage(none, at("2026-01-05T03:00:00Z"))).toBe("We are away right now. A person will be back as soon as possible.");
  });
});

describe("business hours: nextOpening", () => {
  it("answers the instant itself while open", () => {
    const now = at("2026-01-05T09:00:00Z");
    expect(nextOpening(office, now)).toEqual(now);
  });

  it("finds the afternoon interval over lunch, and Monday over the weekend", () => {
    expect(nextOpening(office, at("2026-01-05T11:15:00Z"))?.toISOString()).toBe("2026-01-05T12:00:00.000Z");
    expect(nextOpening(office, at("2026-01-09T15:00:00Z"))?.toISOString()).toBe("2026-01-12T08:00:00.000Z");
  });

  it("finds the same weekday a week on when it is the only open day", () => {
    const mondays = BusinessHours.parse({ time_zone: "UTC", weekly: { mon: [["09:00", "10:00"]] } });
    expect(nextOpening(mondays, at("2026-01-05T10:00:00Z"))?.toISOString()).toBe("2026-01-12T09:00:00.000Z");
  });

  it("crosses the spring-forward change with the new offset (Europe/Berlin, 2026-03-29)", () => {
    // Friday 27 March after closing, UTC+1; Monday 30 March 09:00 is UTC+2.
    expect(nextOpening(office, at("2026-03-27T15:00:00Z"))?.toISOString()).toBe("2026-03-30T07:00:00.000Z");
  });

  it("crosses the fall-back change with the new offset (America/New_York, 2026-11-01)", () => {
    const ny = BusinessHours.parse({ time_zone: "America/New_York", weekly: { mon: [["09:00", "17:00"]] } });
    // Saturday 31 October, EDT (UTC-4); Monday 2 November 09:00 is EST (UTC-5).
    expect(nextOpening(ny, at("2026-10-31T12:00:00Z"))?.toISOString()).toBe("2026-11-02T14:00:00.000Z");
  });

  it("moves an opening time the spring change skips on by the gap", () => {
    const early = BusinessHours.parse({ time_zone: "Europe/Berlin", weekly: { sun: [["02:30", "05:00"]] } });
    // 02:30 does not exist on 2026-03-29 in Berlin: it opens at 03:30 CEST = 01:30Z.
    const next = nextOpening(early, at("2026-03-28T12:00:00Z"));
    expect(next?.toISOString()).toBe("2026-03-29T01:30:00.000Z");
    expect(next && isOpen(early, next)).toBe(true);
  });

  it("opens a time the fall-back change repeats at its first occurrence", () => {
    const early = BusinessHours.parse({ time_zone: "Europe/Berlin", weekly: { sun: [["02:30", "05:00"]] } });
    // 2026-10-25: 02:30 CEST (00:30Z) comes first, then 02:30 CET (01:30Z).
    expect(nextOpening(early, at("2026-10-24T12:00:00Z"))?.toISOString()).toBe("2026-10-25T00:30:00.000Z");
  });

  it("handles a zone with a half-hour offset", () => {
    const india = BusinessHours.parse({ time_zone: "Asia/Kolkata", weekly: { tue: [["09:00", "18:00"]] } });
    expect(nextOpening(india, at("2026-01-05T12:00:00Z"))?.toISOString()).toBe("2026-01-06T03:30:00.000Z");
  });
});

describe("business hours: texts and the policy's checks", () => {
  it("writes the next opening in the policy's zone and the asked locale", () => {
    const monday = at("2026-01-12T08:00:00Z");
    expect(formatOpening(office, monday)).toContain("Monday");
    expect(formatOpening(office, monday)).toContain("09:00");
    expect(formatOpening(office, monday, "de-DE")).toContain("Montag");
  });

  it("fills {next_opening} in the away message out of hours, and says nothing while open", () => {
    const p = BusinessHours.parse({ ...office, away_message: "Closed. Back {next_opening}." });
    expect(awayMessage(p, at("2026-01-10T10:00:00Z"))).toMatch(/^Closed\. Back Monday.*09:00/);
    expect(awayMessage(p, at("2026-01-05T09:00:00Z"))).toBeNull();
  });

  it("a page's view: open now, the next opening, the reply time", () => {
    const p = BusinessHours.parse({ ...office, reply_time_text: "a few hours" });
    expect(hoursView(p, at("2026-01-10T10:00:00Z"))).toEqual({
      open_now: false,
      next_opening: "2026-01-12T08:00:00.000Z",
      reply_time_text: "a few hours",
      reply_time_seconds: null,
    });
    expect(hoursView(null, at("2026-01-10T10:00:00Z")).open_now).toBe(true);
  });

  it("refuses an unknown zone, a bad time, an unknown weekday and unknown fields, naming them", () => {
    const bad = (v: unknown) => {
      const r = BusinessHours.safeParse(v);
      return r.success ? null : r.error.issues.map((i) => i.path.join("."));
    };
    expect(bad({ time_zone: "Mars/Olympus", weekly: {} })).toEqual(["time_zone"]);
    expect(bad({ time_zone: "UTC", weekly: { mon: [["9:00", "17:00"]] } })).toEqual(["weekly.mon.0.0"]);
    expect(bad({ time_zone: "UTC", weekly: { mon: [["09:00", "09:00"]] } })).toEqual(["weekly.mon.0"]);
    expect(bad({ time_zone: "UTC", weekly: { monday: [] } })).toEqual(["weekly"]);
    expect(bad({ time_zone: "UTC", weekly: {}, colour: "red" })).toEqual([""]);
    expect(bad({ time_zone: "UTC", weekly: {}, agent_out_of_hours: "sleep" })).toEqual(["agent_out_of_hours"]);
    expect(bad({ time_zone: "UTC", weekly: {}, locale: "!!" })).toEqual(["locale"]);
  });
});
