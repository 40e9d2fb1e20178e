import { describe, expect, it } from "vitest";
import { TOO_LONG_TEXT } from "../../src/channels/chunking";
import { adapterFor } from "../../src/channels/registry";
import { planOutbound, sendOutboundStep } from "../../src/channels/rich/outbound";
import { type RichPart, requiredCapabilities } from "../../src/channels/rich/types";
import { fakeFetch, json } from "../helpers/network";
import { must } from "../../src/platform/must";

const ad = (name: string) => must(adapterFor(name), "adapterFor(name)");
const reply = (text: string, extra: Record<string, unknown> = {}) => ({ text, kind: "reply" as const, ...extra });
const IMG = { kind: "image" as const, url: "https://cdn.example/a.png" };

function steps(channel: string, text: string, part: RichPart | null, max = 4096, chunks = 10) {
  const plan = planOutbound(ad(channel), text, part, max, chunks);
  if (!plan.ok) throw new Error(plan.error);
  return plan;
}

describe("rich part planning (pure)", () => {
  it("names the capabilities a part needs", () => {
    expect(requiredCapabilities({ media: [IMG], footer: "f", options: [reply("a")] }).sort()).toEqual(["interactive", "media"]);
    expect(requiredCapabilities({ schema: { a: 1 }, location: { latitude: 0, longitude: 0 }, template: { name: "n", language: "en" } }).sort()).toEqual([
      "form",
      "location",
      "template",
    ]);
  });

  it("a plain answer is its non-blank chunks; too many is the fixed notice", () => {
    expect(steps("twilio", "ab cd", null, 3).steps).toEqual([
      { kind: "text", text: "ab " },
      { kind: "text", text: "cd" },
    ]);
    expect(steps("twilio", "x".repeat(31), null, 3, 10)).toEqual({ ok: true, steps: [{ kind: "text", text: TOO_LONG_TEXT }], tooLong: true });
  });

  it("a missing capability refuses the whole plan, naming it", () => {
    const plan = planOutbound(ad("slack"), "hi", { location: { latitude: 1, longitude: 2 }, media: [IMG] }, 100, 10);
    expect(plan).toEqual({ ok: false, kind: "capability", error: "channel slack lacks the location capability this message needs" });
  });

  it("rich steps count toward max_outbound_chunks", () => {
    const media = Array.from({ length: 11 }, (_, i) => ({ ...IMG, url: `https://cdn.example/${i}.png` }));
    expect(steps("twilio", "ab", { media }, 100, 3).tooLong).toBe(false); // one text + two MMS
    expect(steps("twilio", "ab cd", { media }, 3, 3).tooLong).toBe(true);
  });

  it("an interactive part carries the last chunk as its body; earlier chunks go first as text", () => {
    const plan = steps("telegram", "first part second", { options: [reply("ok")] }, 11);
    expect(plan.steps).toEqual([
      { kind: "text", text: "first part " },
      {
        kind: "rich",
        step: { method: "sendMessage", payload: { text: "second", reply_markup: { inline_keyboard: [[{ text: "ok", callback_data: "ok" }]] } } },
      },
    ]);
  });

  it("a template is the whole message: the text is not sent", () => {
    const plan = steps("whatsapp", "Your order shipped", { template: { name: "shipped", language: "en" } });
    expect(plan.steps).toEqual([{ kind: "rich", step: { type: "template", template: { name: "shipped", language: { code: "en" } } } }]);
  });

  it("twilio: up to 10 media per message, captions as the body", () => {
    const media = Array.from({ length: 12 }, (_, i) => ({ ...IMG, url: `https://cdn.example/${i}.png`, ...(i === 11 ? { caption: "last" } : {}) }));
    const rich = steps("twilio", "", { media }).steps;
    expect(rich).toHaveLength(2);
    expect((rich[0] as any).step.media_urls).toHaveLength(10);
    expect((rich[1] as any).step).toEqual({ media_urls: ["https://cdn.example/10.png", "https://cdn.example/11.png"], body: "last" });
  });

  it("whatsapp: one link option is a cta_url; lists for many options or sections; refusals for what Cloud API cannot send", () => {
    const cta = steps("whatsapp", "Visit", { options: [{ text: "Site", kind: "link", url: "https://x.example" }] }).steps[0] as any;
    expect(cta.step.interactive).toEqual({
      type: "cta_url",
      body: { text: "Visit" },
      action: { name: "cta_url", parameters: { display_text: "Site", url: "https://x.example" } },
    });
    const list = steps("whatsapp", "Pick", { sections: [{ title: "A", rows: [reply("one", { id: "1", description: "first" })] }] }).steps[0] as any;
    expect(list.step.interactive).toEqual({
      type: "list",
      body: { text: "Pick" },
      action: { button: "Choose", sections: [{ title: "A", rows: [{ id: "1", title: "one", description: "first" }] }] },
    });
    const described = steps("whatsapp", "Pick", { options: [reply("one", { description: "d" })] }).steps[0] as any;
    expect(described.step.interactive.type).toBe("list");
    const refuse = (part: RichPart) => planOutbound(ad("whatsapp"), "Pick", part, 4096, 10);
    expect(refuse({ options: [reply("a"), { text: "b", kind: "link", url: "https://b.example" }] })).toMatchObject({ ok: false, kind: "shape" });
    expect(refuse({ options: [reply("a")], header: { kind: "audio", url: "https://a.example/x.mp3" } })).toMatchObject({ ok: false, kind: "shape" });
    expect(planOutbound(ad("whatsapp"), "", { options: [reply("a")] }, 4096, 10)).toMatchObject({ ok: false, kind: "shape" });
  });

  it("whatsapp: media references and Flow forms", () => {
    const media = steps("whatsapp", "", {
      media: [
        { kind: "document", url: "whatsapp-media:123", filename: "a.pdf", caption: "doc" },
        { kind: "audio", url: "https://x/a.mp3", caption: "dropped" },
      ],
    }).steps;
    expect(media.map((s: any) => s.step)).toEqual([
      { type: "document", document: { id: "123", caption: "doc", filename: "a.pdf" } },
      { type: "audio", audio: { link: "https://x/a.mp3" } },
    ]);
    const flow = steps("whatsapp", "Fill in", { schema: { flow_id: "F1", screen: "START", data: { a: 1 }, flow_cta: "Go" } }).steps[0] as any;
    expect(flow.step.interactive).toEqual({
      type: "flow",
      body: { text: "Fill in" },
      action: {
        name: "flow",
        parameters: {
          flow_message_version: "3",
          flow_id: "F1",
          flow_cta: "Go",
          flow_action: "navigate",
          flow_action_payload: { screen: "START", data: { a: 1 } },
        },
      },
    });
  });

  it("telegram: media by url or file id, venue vs location, header media with the keyboard, callback data bound", () => {
    const plan = steps("telegram", "Hi", {
      media: [{ kind: "video", url: "telegram-file:ABC", caption: "clip" }],
      location: { latitude: 1, longitude: 2, name: "HQ", address: "Main St" },
      options: [reply("go")],
      header: IMG,
      footer: "bye",
    }).steps.map((s: any) => s.step);
    expect(plan).toEqual([
      { method: "sendVideo", payload: { video: "ABC", caption: "clip" } },
      { method: "sendVenue", payload: { latitude: 1, longitude: 2, title: "HQ", address: "Main St" } },
      { method: "sendPhoto", payload: { photo: IMG.url, caption: "Hi\n\nbye", reply_markup: { inline_keyboard: [[{ text: "go", callback_data: "go" }]] } } },
    ]);
    expect((steps("telegram", "", { location: { latitude: 1, longitude: 2, name: "HQ" } }).steps[0] as any).step.method).toBe("sendLocation");
    expect(planOutbound(ad("telegram"), "Hi", { options: [reply("é".repeat(33))] }, 4096, 10)).toMatchObject({ ok: false, kind: "shape" });
  });

  it("slack: media blocks (images inline, other files as links, mrkdwn escaped)", () => {
    const s = steps("slack", "", { media: [IMG, { kind: "document", url: "https://f.example/r.pdf", filename: "Q1 <draft> & notes.pdf" }] }).steps[0] as any;
    expect(s.step).toEqual({
      text: "Q1 <draft> & notes.pdf",
      blocks: [
        { type: "image", image_url: IMG.url, alt_text: "image" },
        { type: "section", text: { type: "mrkdwn", text: "<https://f.example/r.pdf|Q1 &lt;draft&gt; &amp; notes.pdf>" } },
      ],
    });
  });

  it("sends a rich step through the channel's own request, with the thread address and our identity", async () => {
    const { fetch, calls } = fakeFetch(() => json({ ok: true, result: { message_id: 9 } }));
    const env = { CHANNEL_TELEGRAM_BOT_TOKEN: "1:tok", CHANNEL_TELEGRAM_API_BASE: "https://tg.example" };
    const plan = steps("telegram", "", { location: { latitude: 1, longitude: 2 } });
    const r = await sendOutboundStep(ad("telegram"), plan.steps[0], { to: "42", from: "1" }, { fetch, env, timeoutMs: 1000 });
    expect(r).toEqual({ ok: true, provider_message_id: "9" });
    expect(calls[0].url).toBe("https://tg.example/bot1:tok/sendLocation");
    expect(JSON.parse(calls[0].body)).toEqual({ chat_id: "42", latitude: 1, longitude: 2 });
  });
});
