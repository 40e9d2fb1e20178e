/**
 * The notifications area's pure policy: composition rules, the audience clamp and the
 * feed a reader sees, the body schema's caps and media kind inference, the record minted from a
 * send, and the per-channel address settings.
 */
import { describe, expect, it } from "vitest";
import { clampAudience, feedOfReader } from "../../src/notifications/audience";
import { compositionIssues } from "../../src/notifications/composition";
import { richPartOf } from "../../src/channels/rich/types";
import { mintNotification } from "../../src/notifications/record";
import { NotificationSendBody } from "../../src/notifications/schemas";
import { parseNotificationSettings } from "../../src/platform/settings/notification-settings";
import { must } from "../../src/platform/must";

const opt = (text: string) => ({ text, kind: "reply" as const });
const media = [{ url: "https://cdn.example/a.png" }];
const fields = (issues: Array<{ field: string }>) => issues.map((i) => i.field);

describe("composition rules", () => {
  it("admits each documented combination", () => {
    for (const b of [
      { message: "hi" },
      { message: "", media },
      { message: " ", location: { latitude: 1, longitude: 2 } },
      { message: "pick", options: [opt("a")], media, location: {} },
      { message: "pick", sections: [{ rows: [opt("a")] }], header: {}, footer: "f" },
      { message: "fill", schema: { a: 1 }, media },
      { message: "tpl", template: {} },
    ]) {
      expect(compositionIssues(b), JSON.stringify(b)).toEqual([]);
    }
  });

  it.each([
    ["options with sections", { message: "x", options: [opt("a")], sections: [{ rows: [opt("a")] }] }, ["sections"]],
    ["schema with options", { message: "x", schema: { a: 1 }, options: [opt("a")] }, ["options"]],
    ["schema with sections", { message: "x", schema: { a: 1 }, sections: [{ rows: [opt("a")] }] }, ["sections"]],
    ["schema with location", { message: "x", schema: { a: 1 }, location: {} }, ["location"]],
    ["template with media", { message: "x", template: {}, media }, ["media"]],
    [
      "template with every other content field",
      { message: "x", template: {}, media, location: {}, options: [opt("a")], header: {}, footer: "f", schema: {} },
      ["media", "location", "options", "header", "footer", "schema", "options", "location"],
    ],
    ["header without options", { message: "x", header: {} }, ["header"]],
    ["footer without options", { message: "x", media, footer: "f" }, ["footer"]],
    ["a blank message alone", { message: "  " }, ["message"]],
    ["a blank message with options", { message: "", media, options: [opt("a")] }, ["message"]],
    ["a blank message with a template", { message: "", template: {} }, ["message"]],
    ["a blank message with a form", { message: "\n", media, schema: { a: 1 } }, ["message"]],
  ])("refuses %s", (_what, b, expected) => {
    expect(fields(compositionIssues(b as never))).toEqual(expected);
  });

  it("caps the rows of all sections together at 100", () => {
    const rows = (n: number) => Array.from({ length: n }, (_, i) => opt(`o${i}`));
    expect(compositionIssues({ message: "x", sections: [{ rows: rows(50) }, { rows: rows(50) }] })).toEqual([]);
    expect(fields(compositionIssues({ message: "x", sections: [{ rows: rows(50) }, { rows: rows(51) }] }))).toEqual(["sections"]);
  });
});

describe("the audience clamp", () => {
  const owned = { restricted: true, user_id: "ann" };
  const admin = { restricted: false, user_id: "root" };

  it("gives a restricted caller's omitted audience its own id, admits its own id, refuses another", () => {
    expect(clampAudience(owned, undefined)).toEqual({ ok: true, audience: "ann" });
    expect(clampAudience(owned, "ann")).toEqual({ ok: true, audience: "ann" });
    expect(clampAudience(owned, "bob")).toEqual({ ok: false });
  });

  it("passes an unrestricted caller through: any audience, or a broadcast", () => {
    expect(clampAudience(admin, undefined)).toEqual({ ok: true, audience: undefined });
    expect(clampAudience(admin, "bob")).toEqual({ ok: true, audience: "bob" });
  });

  it("reads a restricted caller's own feed and everyone else's shared feed", () => {
    expect(feedOfReader(owned)).toEqual({ kind: "identity", user_id: "ann" });
    expect(feedOfReader(admin)).toEqual({ kind: "shared" });
  });
});

describe("the send body", () => {
  const parse = (b: unknown) => NotificationSendBody.safeParse(b);
  const error = (b: unknown) => {
    const r = parse(b);
    return r.success ? "" : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
  };

  it("refuses any non-null sender_identity, and names it first", () => {
    expect(parse({ message: "x", sender_identity: null }).success).toBe(true);
    for (const v of ["bridge", "", 0, false, {}]) expect(error({ message: "x", sender_identity: v })).toMatch(/^sender_identity: is reserved/);
    expect(error({ sender_identity: "x", message: "", options: [] })).toMatch(/^sender_identity/);
  });

  it("infers a media item's kind when absent and keeps a given one", () => {
    const r = parse({
      message: "",
      media: [
        { url: "https://cdn.example/a.PNG" },
        { url: "https://cdn.example/clip.mp4?x=1" },
        { url: "https://cdn.example/song.mp3" },
        { url: "https://cdn.example/photo.jpg", filename: "report.pdf" },
        { url: "https://cdn.example/raw" },
        { url: "https://cdn.example/raw", kind: "image", caption: " cap " },
      ],
    });
    expect(r.success).toBe(true);
    expect(must(must(r.data, "r.data").media, "r.data.media").map((m) => m.kind)).toEqual(["image", "video", "audio", "document", "document", "image"]);
    expect(must(must(r.data, "r.data").media, "r.data.media")[5].caption).toBe("cap");
  });

  it.each([
    ["a filename on non-document media", { message: "", media: [{ url: "https://x.example/a", kind: "image", filename: "a.png" }] }, "media.0.filename"],
    ["an http media url", { message: "", media: [{ url: "http://x.example/a.png" }] }, "media.0.url"],
    ["a relative media url", { message: "", media: [{ url: "/a.png" }] }, "media.0.url"],
    ["a multi-line media url", { message: "", media: [{ url: "https://x.example/a\n.png" }] }, "media.0.url"],
    ["a blank caption", { message: "", media: [{ url: "https://x.example/a.png", caption: " " }] }, "media.0.caption"],
    ["a 256-character filename", { message: "", media: [{ url: "https://x.example/a", filename: "f".repeat(256) }] }, "media.0.filename"],
    ["51 media items", { message: "", media: Array.from({ length: 51 }, () => media[0]) }, "media"],
    ["an empty media list", { message: "x", media: [] }, "media"],
    ["an empty options list", { message: "x", options: [] }, "options"],
    ["an empty sections list", { message: "x", sections: [] }, "sections"],
    ["a section without rows", { message: "x", sections: [{ title: "t", rows: [] }] }, "sections.0.rows"],
    ["an empty schema", { message: "x", channel: "whatsapp", schema: {} }, "schema"],
    ["101 options", { message: "x", options: Array.from({ length: 101 }, (_, i) => opt(`o${i}`)) }, "options"],
    ["11 sections", { message: "x", sections: Array.from({ length: 11 }, () => ({ title: "t", rows: [opt("a")] })) }, "sections"],
    ["an option id with a space", { message: "x", options: [{ ...opt("a"), id: "a b" }] }, "options.0.id"],
    ["a link option without url", { message: "x", options: [{ text: "go", kind: "link" }] }, "options.0.url"],
    ["a reply option with a url", { message: "x", options: [{ ...opt("a"), url: "https://x.example" }] }, "options.0.url"],
    ["a bare string option", { message: "x", options: ["yes"] }, "options.0"],
    ["a 1001-character option text", { message: "x", options: [opt("o".repeat(1001))] }, "options.0.text"],
    ["a blank footer", { message: "x", options: [opt("a")], footer: " " }, "footer"],
    ["a message over 65536 characters", { message: "m".repeat(65_537) }, "message"],
    ["a blank recipient", { message: "x", recipient: " " }, "recipient"],
    ["a blank audience", { message: "x", audience: "" }, "audience"],
    ["a 513-character audience", { message: "x", audience: "a".repeat(513) }, "audience"],
    ["an unknown field", { message: "x", colour: "red" }, ""],
    ["a missing message", { channel: "telegram" }, "message"],
  ])("refuses %s", (_what, b, path) => {
    const r = parse(b);
    expect(r.success).toBe(false);
    expect(must(r.error, "r.error").issues.map((i) => i.path.join("."))).toContain(path);
  });

  it("admits 100 options, and 10 sections of 10 rows", () => {
    expect(parse({ message: "x", options: Array.from({ length: 100 }, (_, i) => opt(`o${i}`)) }).success).toBe(true);
    expect(
      parse({ message: "x", sections: Array.from({ length: 10 }, (_, s) => ({ title: `s${s}`, rows: Array.from({ length: 10 }, (_, i) => opt(`o${i}`)) })) })
        .success,
    ).toBe(true);
  });
});

describe("the minted record and the rich part", () => {
  it("carries the minted fields, the clamped audience, the recipient used, and only the fields sent", () => {
    const body = NotificationSendBody.parse({ message: "pick", options: [opt("a")], footer: "f", recipient: "ignored-here" });
    const n = mintNotification(body, { audience: "ann", recipient: "42" }, "id-1", new Date("2026-05-01T12:00:00Z"));
    expect(n).toEqual({
      id: "id-1",
      created_at: "2026-05-01T12:00:00.000Z",
      message: "pick",
      audience: "ann",
      recipient: "42",
      options: [opt("a")],
      footer: "f",
    });
    expect(mintNotification(NotificationSendBody.parse({ message: "hi" }), {}, "id-2", new Date(0))).toEqual({
      id: "id-2",
      created_at: "1970-01-01T00:00:00.000Z",
      message: "hi",
    });
  });

  it("composes the rich part from the rich fields only", () => {
    expect(richPartOf(NotificationSendBody.parse({ message: "hi", channel: "telegram", recipient: "1" }))).toBeNull();
    expect(richPartOf(NotificationSendBody.parse({ message: "", media }))).toEqual({ media: [{ kind: "image", url: media[0].url }] });
  });
});

describe("per-channel address settings", () => {
  it("maps NOTIFICATIONS_FROM_<CHANNEL> and NOTIFICATIONS_RECIPIENT_<CHANNEL> by lower-case name, blank as unset", () => {
    const errors: string[] = [];
    const s = parseNotificationSettings(
      { NOTIFICATIONS_FROM_TWILIO: " +15550001 ", NOTIFICATIONS_FROM_SLACK: "  ", NOTIFICATIONS_RECIPIENT_TELEGRAM: "42", OTHER: "x" },
      errors,
    );
    expect(errors).toEqual([]);
    expect({ ...s.senders }).toEqual({ twilio: "+15550001" });
    expect({ ...s.defaultRecipients }).toEqual({ telegram: "42" });
  });

  it("names a multi-line value's variable, never the value", () => {
    const errors: string[] = [];
    parseNotificationSettings({ NOTIFICATIONS_RECIPIENT_TWILIO: "secret\nvalue" }, errors);
    expect(errors).toEqual(["NOTIFICATIONS_RECIPIENT_TWILIO must be one line of at most 512 characters"]);
  });
});
