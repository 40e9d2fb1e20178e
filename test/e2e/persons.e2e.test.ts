/**
 * Persons end to end: against a real `wrangler dev`, a participant greets a
 * Telegram route of a multichannel tool target, links WhatsApp with the code, is answered on one
 * person thread with one stable person_id, is taken over by an operator who answers by hand on the
 * channel the message came from, and is erased.
 */
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { type FakeProviders, type ProviderSend, startFakeProviders } from "./support/fake-providers";
import { pollUntil } from "./support/poll";
import { type ToolServer, startToolServer } from "./support/tool-server";
import { must } from "../../src/platform/must";

const S = {
  whatsappSecret: "whatsapp-persons-secret",
  whatsappToken: "whatsapp-persons-access",
  telegramToken: "515151:telegram-persons",
  telegramSecret: "telegram-persons-secret",
};
const TG_BOT = "515151";
const WA_NUMBER_ID = "pn-persons";
const TG_CHAT = 31337;
const WA_FROM = "4915550031337";
const GREETING = "Welcome! To link another channel, send {pairing_code} there.";

let dev: DevServer;
let fake: FakeProviders;
let tool: ToolServer;
let base: string;
let adminKey: string;

beforeAll(async () => {
  fake = await startFakeProviders();
  // The tool shows what it was given of the person, so the test reads it off the channel answer.
  tool = await startToolServer((k) => `${k.person_id} ${Array.isArray(k.person_addresses) ? k.person_addresses.length : 0}: ${k.message}`);
  dev = await startDev({
    vars: {
      CHANNEL_WHATSAPP_APP_SECRET: S.whatsappSecret,
      CHANNEL_WHATSAPP_ACCESS_TOKEN: S.whatsappToken,
      CHANNEL_WHATSAPP_VERIFY_TOKEN: "whatsapp-persons-verify",
      CHANNEL_WHATSAPP_API_BASE: fake.base("whatsapp"),
      CHANNEL_TELEGRAM_BOT_TOKEN: S.telegramToken,
      CHANNEL_TELEGRAM_WEBHOOK_SECRET: S.telegramSecret,
      CHANNEL_TELEGRAM_API_BASE: fake.base("telegram"),
    },
  });
  base = dev.baseUrl;
  adminKey = (await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } })).body.data.token;
}, 120_000);

afterAll(async () => {
  await dev?.close();
  await fake?.close();
  await tool?.stop();
});

let tgUpdate = 7000;
function telegram(text: string) {
  const body = JSON.stringify({
    update_id: ++tgUpdate,
    message: {
      message_id: tgUpdate,
      date: 1,
      chat: { id: TG_CHAT, type: "private" },
      from: { id: TG_CHAT, is_bot: false, first_name: "P", language_code: "de" },
      text,
    },
  });
  return fetch(`${base}/api/channels/telegram/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": S.telegramSecret },
    body,
  });
}

let waId = 0;
function whatsapp(text: string) {
  const body = JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "w",
        changes: [
          {
            field: "messages",
            value: {
              metadata: { phone_number_id: WA_NUMBER_ID },
              messages: [{ from: WA_FROM, id: `wamid.persons${++waId}`, type: "text", text: { body: text } }],
            },
          },
        ],
      },
    ],
  });
  const sig = `sha256=${createHmac("sha256", S.whatsappSecret).update(body).digest("hex")}`;
  return fetch(`${base}/api/channels/whatsapp/inbound`, { method: "POST", headers: { "content-type": "application/json", "x-hub-signature-256": sig }, body });
}

/** The text of the next send to `channel` after the first `seen` sends (the fake records every one). */
async function nextSend(channel: ProviderSend["channel"], seen: number): Promise<string> {
  const sends = await pollUntil(
    `a ${channel} send`,
    () => fake.sends.filter((s) => s.channel === channel),
    (s) => s.length > seen,
  );
  const s = sends[seen];
  return channel === "telegram" ? s.body.text : s.body.text.body;
}
const sent = (channel: ProviderSend["channel"]) => fake.sends.filter((s) => s.channel === channel).length;

describe("persons against a real wrangler dev", () => {
  it("greeting with a code on Telegram, redeemed from WhatsApp, one person thread, operator takeover, erase", async () => {
    // A multichannel HTTP tool target behind a Telegram route and a WhatsApp route.
    const declared = await http(base, "POST", "/api/tools-config/entries", {
      key: adminKey,
      body: {
        title: "persona",
        kind: "http",
        description: "answers with what it saw of the person",
        url: tool.url,
        input_schema: {
          type: "object",
          properties: { message: { type: "string" }, person_id: { type: "string" }, person_addresses: { type: "array" } },
          required: ["message"],
        },
      },
    });
    expect(declared.status, JSON.stringify(declared.body)).toBe(200);
    const exec = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "persona-runner", scopes: ["tool:persona"] } });
    expect(exec.status).toBe(200);
    const payload_expr = "{message: .message, person_id, person_addresses}";
    for (const [name, channel, identity] of [
      ["tg-persons", "telegram", TG_BOT],
      ["wa-persons", "whatsapp", WA_NUMBER_ID],
    ]) {
      const r = await http(base, "POST", `/api/conversations/${name}`, {
        key: adminKey,
        body: { door: "channel", channel, our_identity: identity, target_kind: "tool", target_name: "persona", execution_key: "persona-runner", payload_expr },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const cfg = await http(base, "PUT", "/api/conversation-configs/tool/persona", {
      key: adminKey,
      body: { target_kind: "tool", target_name: "persona", multichannel: true, greeting_template: GREETING },
    });
    expect(cfg.status, JSON.stringify(cfg.body)).toBe(200);

    // 1. First contact on Telegram: the greeting with a fresh code, then the tool's answer.
    expect((await telegram("hello")).status).toBe(200);
    const greeted = await nextSend("telegram", 0);
    const match = greeted.match(/^Welcome! To link another channel, send (LINK-[A-Z0-9]{8}) there\.\n\n([0-9a-f-]{36}) 1: hello$/);
    expect(match, greeted).not.toBeNull();
    const [, code, personId] = must(match, "match");
    const personThread = `bridge:@person:${personId}`;
    const person = await http(base, "GET", `/api/conversations/persons/${personId}`, { key: adminKey });
    expect(person.body.data).toMatchObject({ target_kind: "tool", target_name: "persona", locale: "de" });

    // 2. Redeemed from WhatsApp (its own first contact, so greeted too): linked.
    expect((await whatsapp(`my code is ${code}`)).status).toBe(200);
    expect(await nextSend("whatsapp", 0)).toMatch(/Done — this conversation is now linked to your other one\.$/);

    // 3. From either channel, one person thread and one stable person_id with both addresses.
    expect((await whatsapp("from whatsapp")).status).toBe(200);
    expect(await nextSend("whatsapp", 1)).toBe(`${personId} 2: from whatsapp`);
    expect((await telegram("from telegram")).status).toBe(200);
    expect(await nextSend("telegram", 1)).toBe(`${personId} 2: from telegram`);
    const both = await http(base, "GET", `/api/conversations/persons/${personId}`, { key: adminKey });
    expect(both.body.data.addresses.map((a: any) => [a.channel, a.address, a.routes])).toEqual([
      ["telegram", String(TG_CHAT), ["tg-persons"]],
      ["whatsapp", WA_FROM, ["wa-persons"]],
    ]);
    const transcript = await pollUntil(
      "the person transcript",
      () => http(base, "GET", `/api/conversations/wa-persons/transcript?thread_id=${encodeURIComponent(personThread)}`, { key: adminKey }),
      (t) => t.body?.data?.total === 2,
    );
    expect(transcript.body.data.items.map((r: any) => [r.route_name, r.inbound_text])).toEqual([
      ["wa-persons", "from whatsapp"],
      ["tg-persons", "from telegram"],
    ]);

    // 4. An operator takes the person over (from the Telegram route) and answers by hand where the person wrote.
    const calls = tool.calls.length;
    const mode = await http(base, "PUT", "/api/conversations/tg-persons/thread/mode", { key: adminKey, body: { thread_id: personThread, mode: "manual" } });
    expect(mode.body.data).toEqual({ route_name: "tg-persons", thread_id: personThread, mode: "manual", source: "thread" });
    const waBefore = sent("whatsapp");
    expect((await whatsapp("can a human help?")).status).toBe(200);
    await pollUntil(
      "the silent turn",
      () => http(base, "GET", `/api/conversations/wa-persons/transcript?thread_id=${encodeURIComponent(personThread)}&order=desc`, { key: adminKey }),
      (t) => t.body?.data?.items?.[0]?.status === "silent",
    );
    expect(tool.calls.length).toBe(calls);
    const hand = await http(base, "POST", "/api/conversations/tg-persons/thread/messages", {
      key: adminKey,
      body: { thread_id: personThread, text: "Hi, a human here." },
    });
    expect(hand.status, JSON.stringify(hand.body)).toBe(200);
    expect(await nextSend("whatsapp", waBefore)).toBe("Hi, a human here.");
    expect(sent("whatsapp")).toBe(waBefore + 1);

    // 5. Erase: transcript 404, person 404, a second erase answers erased: false.
    const erased = await http(base, "DELETE", `/api/conversations/persons/${personId}`, { key: adminKey });
    expect(erased.body.data).toEqual({ person_id: personId, removed: 4, erased: true });
    expect((await http(base, "GET", `/api/conversations/tg-persons/transcript?thread_id=${encodeURIComponent(personThread)}`, { key: adminKey })).status).toBe(
      404,
    );
    expect((await http(base, "GET", `/api/conversations/persons/${personId}`, { key: adminKey })).status).toBe(404);
    expect((await http(base, "DELETE", `/api/conversations/persons/${personId}`, { key: adminKey })).body.data).toEqual({
      person_id: personId,
      removed: 0,
      erased: false,
    });
  });

  it("an event into the linked person's thread is answered on the event's route, to the person's address there", async () => {
    // The routes and the multichannel config of the first case stay; its person was erased. The
    // Telegram route is re-posted with a payload that names an event (an event has no message).
    const payload_expr = '{message: (.message // ("event " + .event.kind)), person_id, person_addresses}';
    for (const [name, channel, identity] of [
      ["tg-persons", "telegram", TG_BOT],
      ["wa-persons", "whatsapp", WA_NUMBER_ID],
    ]) {
      const r = await http(base, "POST", `/api/conversations/${name}`, {
        key: adminKey,
        body: { door: "channel", channel, our_identity: identity, target_kind: "tool", target_name: "persona", execution_key: "persona-runner", payload_expr },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    // A new person on Telegram (greeted again, with a code), linked from WhatsApp.
    const tgSeen = sent("telegram");
    expect((await telegram("back again")).status).toBe(200);
    const greeted = await nextSend("telegram", tgSeen);
    const [, code, personId] = must(greeted.match(/(LINK-[A-Z0-9]{8}).*\n\n([0-9a-f-]{36}) 1: back again$/s), "the match");
    const personThread = `bridge:@person:${personId}`;
    const waSeen = sent("whatsapp");
    expect((await whatsapp(`code ${code}`)).status).toBe(200);
    expect(await nextSend("whatsapp", waSeen)).toMatch(/now linked/);
    // The person's newest message is on WhatsApp.
    expect((await whatsapp("latest on whatsapp")).status).toBe(200);
    expect(await nextSend("whatsapp", waSeen + 1)).toBe(`${personId} 2: latest on whatsapp`);

    // An event by thread_id on the Telegram route: answered on Telegram, to the person's chat.
    const tgBefore = sent("telegram");
    const ev = await http(base, "POST", "/api/conversations/tg-persons/events", {
      key: adminKey,
      body: { thread_id: personThread, event: { event_id: "e2e-shipped", kind: "order.shipped", payload: {} } },
    });
    expect(ev.status, JSON.stringify(ev.body)).toBe(202);
    expect(ev.body.data.thread_id).toBe(personThread);
    expect(await nextSend("telegram", tgBefore)).toBe(`${personId} 2: event order.shipped`);
    expect(must(fake.sends.filter((s) => s.channel === "telegram").at(-1), "the item").body.chat_id).toBe(String(TG_CHAT));
    // On the WhatsApp route: to the person's WhatsApp number.
    const waBefore = sent("whatsapp");
    const onWa = await http(base, "POST", "/api/conversations/wa-persons/events", {
      key: adminKey,
      body: { thread_id: personThread, event: { event_id: "e2e-delivered", kind: "order.delivered", payload: {} } },
    });
    expect(onWa.status, JSON.stringify(onWa.body)).toBe(202);
    expect(await nextSend("whatsapp", waBefore)).toBe(`${personId} 2: event order.delivered`);
    expect(must(fake.sends.filter((s) => s.channel === "whatsapp").at(-1), "the item").body.to).toBe(WA_FROM);
    expect((await http(base, "DELETE", `/api/conversations/persons/${personId}`, { key: adminKey })).body.data).toMatchObject({
      person_id: personId,
      erased: true,
    });
  });
});
