import { describe, expect, it } from "vitest";
import { hmacSha256, toHex } from "../../src/access-control/crypto";
import { readRecord, send } from "../helpers/bridge";
import { mintKey } from "../helpers/http";
import { eventually, rawRows } from "../helpers/threads";
import { fakeNetwork } from "../helpers/network";
import { HOOK, address, apiToolRoute, channelRoute, gate, getMode, network, operatorSend, transcript, type ChannelName } from "./helpers";
import { must } from "../../src/platform/must";

const IMG = { url: "https://cdn.example/cat.png" };
const reply = (text: string, extra: Record<string, unknown> = {}) => ({ text, kind: "reply", ...extra });

async function settled(threadId: string, messageId: string) {
  const rows = await eventually(
    () => rawRows(threadId),
    (x) => ["provisional", "failed", "delivered"].includes(x.find((r) => r.message_id === messageId)?.status ?? ""),
  );
  return JSON.parse(
    must(
      rows.find((r) => r.message_id === messageId),
      "the item found",
    ).record,
  );
}

describe("operator send: the rich-field contract (spec §4.7, §4.9)", () => {
  it.each([
    ["an unknown field", { text: "x", colour: "red" }, "colour"],
    ["a missing text", {}, "text"],
    ["a blank text with nothing else to carry the message", { text: "   " }, "text"],
    ["a bare-string option", { text: "pick", options: ["yes"] }, "options"],
    ["an option without kind", { text: "pick", options: [{ text: "yes" }] }, "options"],
    ["a link option without url", { text: "pick", options: [{ text: "site", kind: "link" }] }, "url"],
    ["a link option with a relative url", { text: "pick", options: [{ text: "site", kind: "link", url: "/x" }] }, "url"],
    ["a reply option with a url", { text: "pick", options: [reply("yes", { url: "https://x.example" })] }, "url"],
    ["an empty options list", { text: "pick", options: [] }, "options"],
    ["eleven options", { text: "pick", options: Array.from({ length: 11 }, (_, i) => reply(`o${i}`)) }, "options"],
    ["an over-long option text", { text: "pick", options: [reply("y".repeat(257))] }, "options"],
    ["an empty media list", { text: "look", media: [] }, "media"],
    ["an empty section", { text: "pick", sections: [{ title: "A", rows: [] }] }, "sections"],
    [
      "eleven rows across sections",
      {
        text: "pick",
        sections: [
          { title: "A", rows: Array.from({ length: 6 }, (_, i) => reply(`a${i}`)) },
          { title: "B", rows: Array.from({ length: 5 }, (_, i) => reply(`b${i}`)) },
        ],
      },
      "sections",
    ],
    ["an empty schema", { text: "fill", schema: {} }, "schema"],
    ["a template without a name", { text: "t", template: { language: "en" } }, "template"],
    ["an empty body_parameters list", { text: "t", template: { name: "n", language: "en", body_parameters: [] } }, "template"],
    ["media with a template", { text: "t", media: [IMG], template: { name: "n", language: "en" } }, "media"],
    ["options with a template", { text: "t", options: [reply("a")], template: { name: "n", language: "en" } }, "options"],
    ["schema with a template", { text: "t", schema: { flow_id: "1" }, template: { name: "n", language: "en" } }, "schema"],
    ["location with a template", { text: "t", location: { latitude: 1, longitude: 2 }, template: { name: "n", language: "en" } }, "location"],
    ["schema with options", { text: "t", schema: { flow_id: "1" }, options: [reply("a")] }, "options"],
    ["schema with sections", { text: "t", schema: { flow_id: "1" }, sections: [{ title: "A", rows: [reply("a")] }] }, "sections"],
    ["options with sections", { text: "t", options: [reply("a")], sections: [{ title: "A", rows: [reply("b")] }] }, "sections"],
    ["a header without options or sections", { text: "t", header: IMG }, "header"],
    ["a footer without options or sections", { text: "t", footer: "bye" }, "footer"],
    ["a blank footer", { text: "t", options: [reply("a")], footer: "  " }, "footer"],
  ])("400 for %s", async (_what, extra, field) => {
    const r = await channelRoute("whatsapp");
    const res = await operatorSend(r.name, { thread_id: `bridge:${r.name}:${address()}`, ...extra });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(field);
  });

  it("guards: 404 unknown route or person thread, 400 blank/off-route thread or foreign address, 403 without the write grant", async () => {
    const r = await channelRoute("twilio");
    const them = address();
    const threadId = `bridge:${r.name}:${them}`;
    expect((await operatorSend("no-such-route-o", { thread_id: "bridge:no-such-route-o:x", text: "x" })).status).toBe(404);
    expect((await operatorSend(r.name, { thread_id: `bridge:@person:${crypto.randomUUID()}`, text: "x" })).status).toBe(404);
    expect((await operatorSend(r.name, { thread_id: " ", text: "x" })).status).toBe(400);
    expect((await operatorSend(r.name, { thread_id: "bridge:another:x", text: "x" })).status).toBe(400);
    expect((await operatorSend(r.name, { thread_id: threadId, text: "x", address: "+19999" })).status).toBe(400);
    const reader = await mintKey({ scopes: ["conversations:read"] });
    expect((await operatorSend(r.name, { thread_id: threadId, text: "x" }, reader.key)).status).toBe(403);
    network();
    const ok = await operatorSend(r.name, { thread_id: threadId, text: "x", address: them });
    expect(ok.status).toBe(200);
    expect((await settled(threadId, ok.body.data.message_id)).status).toBe("provisional");
  });

  it("an api route takes text only: rich fields are 400 there (its callback carries text)", async () => {
    const r = await apiToolRoute({ callback_url: HOOK });
    const res = await operatorSend(r.name, { thread_id: `bridge:${r.name}:root/u`, text: "x", options: [reply("a")] });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("channel route");
  });

  it("refuses up front what the route's channel cannot express: too many chunks, a form outside WhatsApp's Flow subset", async () => {
    const tw = await channelRoute("twilio");
    const long = await operatorSend(tw.name, { thread_id: `bridge:${tw.name}:${address()}`, text: "x".repeat(1600 * 10 + 1) });
    expect(long.status).toBe(400);
    expect(long.body.error).toContain("max_outbound_chunks");
    const wa = await channelRoute("whatsapp");
    const form = await operatorSend(wa.name, { thread_id: `bridge:${wa.name}:${address()}`, text: "fill this", schema: { type: "object" } });
    expect(form.status).toBe(400);
    expect(form.body.error).toContain("flow_id");
  });
});

describe("operator send: delivery (spec §3.1 operator send)", () => {
  it("answers 200 to operator send, then delivers", async () => {
    // The provider is held until the answer is in hand: the door must not wait for the delivery.
    const held = gate();
    const calls = fakeNetwork(async (req) => {
      if (new URL(req.url).host !== "twilio.fake") return new Response("unexpected host", { status: 599 });
      await held.wait();
      return Response.json({ sid: `SM${crypto.randomUUID().replace(/-/g, "")}` }, { status: 201 });
    });
    const r = await channelRoute("twilio");
    const threadId = `bridge:${r.name}:${address()}`;
    const res = await operatorSend(r.name, { thread_id: threadId, text: "Delivered after the answer." });
    expect(res).toMatchObject({ status: 200, body: { data: { message_id: expect.any(String), thread_id: threadId } } });
    expect(Object.keys(res.body.data).sort()).toEqual(["message_id", "thread_id"]);
    const minted = (await rawRows(threadId)).find((row) => row.message_id === res.body.data.message_id);
    expect(minted?.status).toBe("pending_delivery");
    held.open();
    expect((await settled(threadId, res.body.data.message_id)).status).toBe("provisional");
    expect(calls.filter((c) => new URL(c.url).host === "twilio.fake")).toHaveLength(1);
  });

  it("an api route: minted answered, origin operator, one signed callback; the transcript lists it", async () => {
    const net = network();
    const r = await apiToolRoute({ callback_url: HOOK });
    const operator = await mintKey({ scopes: ["conversations"] });
    const first = await send(r.name, { external_user_id: "client", text: "hi", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    const res = await operatorSend(r.name, { thread_id: threadId, text: "An operator writes." }, operator.key);
    expect(res).toMatchObject({ status: 200, body: { data: { message_id: expect.any(String), thread_id: threadId } } });
    const rec = await eventually(
      () => readRecord(r.name, res.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    expect(rec.body.data).toMatchObject({
      origin: "operator",
      answer_status: "answered",
      answer: "An operator writes.",
      inbound_text: "",
      submitted_by: operator.user_id,
      client_address: "client",
      attempts: 1,
    });
    const hooks = net.to("hooks.example.com");
    expect(hooks).toHaveLength(1);
    expect(JSON.parse(hooks[0].body)).toEqual({ message_id: res.body.data.message_id, thread_id: threadId, status: "answered", answer: "An operator writes." });
    expect(hooks[0].headers["x-service-signature"]).toBe(`sha256=${toHex(await hmacSha256(must(r.callback_secret, "r.callback_secret"), hooks[0].body))}`);
    const page = await transcript(r.name, threadId);
    expect(page.body.data.items.map((x: any) => x.origin)).toEqual(["client", "operator"]);
  });

  it("a poll-only api route: the record is delivered at once; either mode, and the mode never changes", async () => {
    const r = await apiToolRoute({ initial_mode: "manual" });
    const threadId = `bridge:${r.name}:root/u`;
    const res = await operatorSend(r.name, { thread_id: threadId, text: "hello" });
    expect((await readRecord(r.name, res.body.data.message_id)).body.data).toMatchObject({ status: "delivered", origin: "operator" });
    expect((await getMode(r.name, threadId)).body.data).toEqual({ mode: "manual", source: "route" });
  });

  it("a channel route chunks the text like any answer and sends from the route identity", async () => {
    const net = network();
    const r = await channelRoute("twilio");
    const them = address();
    const threadId = `bridge:${r.name}:${them}`;
    const text = `${"a".repeat(1500)} ${"b".repeat(1000)}`;
    const res = await operatorSend(r.name, { thread_id: threadId, text, media: [{ ...IMG, caption: "a cat" }] });
    const rec = await settled(threadId, res.body.data.message_id);
    expect(rec).toMatchObject({ status: "provisional", origin: "operator", answer_part: { media: [{ kind: "image", url: IMG.url, caption: "a cat" }] } });
    const bodies = net.to("twilio.fake").map((c) => [...new URLSearchParams(c.body)]);
    expect(bodies).toEqual([
      [
        ["To", them],
        ["From", r.identity],
        ["Body", `${"a".repeat(1500)} `],
      ],
      [
        ["To", them],
        ["From", r.identity],
        ["Body", "b".repeat(1000)],
      ],
      [
        ["To", them],
        ["From", r.identity],
        ["Body", "a cat"],
        ["MediaUrl", IMG.url],
      ],
    ]);
    expect(rec.outbound_message_ids).toHaveLength(3);
  });
});

/** Per channel: which parts go through and which fail the record for a missing capability. */
const GATING: Array<[ChannelName, string, Record<string, unknown>, string | null]> = [
  ["twilio", "media", { media: [IMG] }, null],
  ["twilio", "location", { location: { latitude: 1, longitude: 2 } }, "location"],
  ["twilio", "template", { template: { name: "hello", language: "en" } }, "template"],
  ["twilio", "options", { options: [reply("yes")] }, "interactive"],
  ["twilio", "form", { schema: { flow_id: "1" } }, "form"],
  ["whatsapp", "media", { media: [IMG] }, null],
  ["whatsapp", "location", { location: { latitude: 1, longitude: 2 } }, null],
  ["whatsapp", "template", { template: { name: "hello", language: "en" } }, null],
  ["whatsapp", "options", { options: [reply("yes")] }, null],
  ["whatsapp", "form", { schema: { flow_id: "1" } }, null],
  ["telegram", "media", { media: [IMG] }, null],
  ["telegram", "location", { location: { latitude: 1, longitude: 2 } }, null],
  ["telegram", "template", { template: { name: "hello", language: "en" } }, "template"],
  ["telegram", "options", { options: [reply("yes")] }, null],
  ["telegram", "form", { schema: { flow_id: "1" } }, "form"],
  ["slack", "media", { media: [IMG] }, null],
  ["slack", "location", { location: { latitude: 1, longitude: 2 } }, "location"],
  ["slack", "template", { template: { name: "hello", language: "en" } }, "template"],
  ["slack", "options", { options: [reply("yes")] }, null],
  ["slack", "form", { schema: { flow_id: "1" } }, "form"],
];

describe("operator send: capability gating per channel (spec §4.7)", () => {
  it.each(GATING)("%s with %s", async (channel, _part, fields, missing) => {
    const net = network();
    const r = await channelRoute(channel);
    const threadId = `bridge:${r.name}:${channel === "slack" ? "C0TEST" : channel === "telegram" ? "777" : address()}`;
    const res = await operatorSend(r.name, { thread_id: threadId, text: "See this.", ...fields });
    expect(res.status).toBe(200);
    const rec = await settled(threadId, res.body.data.message_id);
    const host = `${channel}.fake`;
    if (missing) {
      // Loud: the record fails naming the capability; nothing reaches the provider, nothing is dropped.
      expect(rec.status).toBe("failed");
      expect(rec.error).toContain(`lacks the ${missing} capability`);
      expect(net.to(host)).toHaveLength(0);
      expect((await readRecord(r.name, rec.message_id)).body.data).toMatchObject({ status: "failed", answer_part: fields });
    } else {
      expect(rec.status).toBe("provisional");
      expect(net.to(host).length).toBeGreaterThanOrEqual(1);
    }
  });

  it("sends each part in the provider's own shape", async () => {
    const net = network();
    const wa = await channelRoute("whatsapp");
    const waThread = `bridge:${wa.name}:${address()}`;
    const a = await operatorSend(wa.name, {
      thread_id: waThread,
      text: "Pick a slot",
      media: [IMG],
      location: { latitude: 52.5, longitude: 13.4, name: "Office" },
      options: [reply("Morning", { id: "am" }), reply("Evening", { id: "pm" })],
      header: { url: "https://cdn.example/banner.jpg" },
      footer: "Reply any time",
    });
    await settled(waThread, a.body.data.message_id);
    const tpl = await operatorSend(wa.name, {
      thread_id: waThread,
      text: "(template: order_update)",
      template: { name: "order_update", language: "en_US", body_parameters: ["42"], buttons: [{ payload: "TRACK", kind: "quick_reply" }] },
    });
    await settled(waThread, tpl.body.data.message_id);
    const wabodies = net.to("whatsapp.fake").map((c) => JSON.parse(c.body));
    expect(wabodies.map((b) => b.type)).toEqual(["image", "location", "interactive", "template"]);
    expect(wabodies[0]).toMatchObject({ messaging_product: "whatsapp", image: { link: IMG.url } });
    expect(wabodies[2].interactive).toEqual({
      type: "button",
      body: { text: "Pick a slot" },
      action: {
        buttons: [
          { type: "reply", reply: { id: "am", title: "Morning" } },
          { type: "reply", reply: { id: "pm", title: "Evening" } },
        ],
      },
      header: { type: "image", image: { link: "https://cdn.example/banner.jpg" } },
      footer: { text: "Reply any time" },
    });
    expect(wabodies[3].template).toEqual({
      name: "order_update",
      language: { code: "en_US" },
      components: [
        { type: "body", parameters: [{ type: "text", text: "42" }] },
        { type: "button", sub_type: "quick_reply", index: "0", parameters: [{ type: "payload", payload: "TRACK" }] },
      ],
    });

    const tg = await channelRoute("telegram");
    const tgThread = `bridge:${tg.name}:555`;
    const t = await operatorSend(tg.name, {
      thread_id: tgThread,
      text: "Choose",
      sections: [{ title: "Drinks", rows: [reply("Tea"), { text: "Menu", kind: "link", url: "https://menu.example" }] }],
      footer: "Thanks",
    });
    await settled(tgThread, t.body.data.message_id);
    const [tgCall] = net.to("telegram.fake");
    expect(tgCall.url).toMatch(/\/sendMessage$/);
    expect(JSON.parse(tgCall.body)).toEqual({
      chat_id: "555",
      text: "Choose\n\nThanks",
      reply_markup: { inline_keyboard: [[{ text: "Tea", callback_data: "Tea" }], [{ text: "Menu", url: "https://menu.example" }]] },
    });

    const sl = await channelRoute("slack");
    const slThread = `bridge:${sl.name}:C0OPS`;
    const s = await operatorSend(sl.name, { thread_id: slThread, text: "Approve?", options: [reply("Yes", { id: "approve" }), reply("No")] });
    await settled(slThread, s.body.data.message_id);
    const slBody = JSON.parse(net.to("slack.fake")[0].body);
    expect(slBody).toEqual({
      channel: "C0OPS",
      text: "Approve?",
      blocks: [
        { type: "section", text: { type: "mrkdwn", text: "Approve?" } },
        {
          type: "actions",
          elements: [
            { type: "button", text: { type: "plain_text", text: "Yes" }, action_id: "option-1", value: "approve" },
            { type: "button", text: { type: "plain_text", text: "No" }, action_id: "option-2", value: "No" },
          ],
        },
      ],
    });
  });

  it("a shape the channel cannot express fails loudly at delivery too (e.g. a WhatsApp list with a media header)", async () => {
    const net = network();
    const wa = await channelRoute("whatsapp");
    const res = await operatorSend(wa.name, {
      thread_id: `bridge:${wa.name}:${address()}`,
      text: "Pick",
      options: Array.from({ length: 4 }, (_, i) => reply(`o${i}`)),
      header: IMG,
    });
    // Known at the door for the route's channel: refused before anything is written.
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("media header");
    expect(net.calls).toHaveLength(0);
  });
});
