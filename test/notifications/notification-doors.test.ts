/**
 * The notifications doors (spec §4.9, §2.8; platform-facts A1) through the Worker,
 * against real NotificationFeed objects, with the providers faked at the network edge: the sink
 * path, channel sends on each channel, the audience clamp and the feed reads, and every refusal
 * of spec §4.9 (400, 403, 501, 502, 503), each leaving no feed entry.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SHARED_FEED, identityFeed, notificationFeedStub } from "../../src/notifications/rpc";
import { NotificationFeedAnswer } from "../../src/notifications/schemas";
import { fakeNetwork, type NetCall } from "../helpers/network";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";

type Answer = { status: number; body: any; headers: Headers };

/** POST /api/notifications as `key`, with altered settings when `vars` is given. */
async function send(body: unknown, key: string, vars?: Record<string, unknown>): Promise<Answer> {
  if (!vars) return call("POST", "/api/notifications", { key, body });
  const res = await fetchWithEnv(
    { ...env, ...vars },
    new Request(`${BASE}/api/notifications`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: JSON.stringify(body) }),
  );
  return { status: res.status, body: await res.json(), headers: res.headers };
}

async function feed(key: string, vars?: Record<string, unknown>): Promise<Answer> {
  if (!vars) return call("GET", "/api/notifications", { key });
  const res = await fetchWithEnv({ ...env, ...vars }, new Request(`${BASE}/api/notifications`, { headers: { "x-api-key": key } }));
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** The messages of the shared feed (as the admin reads it), newest first. */
async function sharedMessages(): Promise<string[]> {
  const r = await feed(await admin());
  expect(r.status).toBe(200);
  return r.body.data.notifications.map((n: any) => n.message);
}

/** An identity's feed, read from its object directly (no key needed). */
async function identityMessages(userId: string): Promise<string[]> {
  return (JSON.parse(await notificationFeedStub(env, identityFeed(userId)).list(1000)) as any[]).map((n) => n.message);
}

/** The four providers, answering like their APIs; `override` answers first when it returns one. */
function providers(override?: (req: Request, body: string) => Response | undefined): NetCall[] {
  return fakeNetwork((req, body) => {
    const o = override?.(req, body);
    if (o) return o;
    const host = new URL(req.url).host;
    if (host === "telegram.fake") return Response.json({ ok: true, result: { message_id: 7 } });
    if (host === "twilio.fake") return Response.json({ sid: "SM1" }, { status: 201 });
    if (host === "whatsapp.fake") return Response.json({ messaging_product: "whatsapp", messages: [{ id: "wamid.1" }] });
    if (host === "slack.fake") return Response.json({ ok: true, ts: "1.000100" });
    throw new Error(`unexpected outbound request: ${req.url}`);
  });
}

/** An owner key and a key it owns (the restricted caller), both with notifications:write. */
async function ownedPair() {
  const owner = await mintKey({ scopes: ["notifications:write"] });
  const owned = await mintKey({ scopes: ["notifications:write"], owner_user_id: owner.user_id });
  return { owner, owned };
}

describe("the internal sink", () => {
  it("records a send without channel to the shared feed, with minted id and created_at, newest first", async () => {
    const key = await admin();
    const [first, second] = [uniq("first"), uniq("second")];
    for (const message of [first, second]) {
      const r = await send({ message }, key);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({ data: "notification recorded to the internal sink" });
    }
    const r = await feed(key);
    expect(r.headers.get("content-type")).toContain("application/json");
    const [newest, older] = r.body.data.notifications;
    expect(newest).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/), message: second });
    expect(older.message).toBe(first);
    expect(newest.id).not.toBe(older.id);
  });

  it("stores the rich fields, with each media item's and the header's kind", async () => {
    const key = await admin();
    const message = uniq("rich");
    const body = {
      message,
      recipient: "ops-desk",
      media: [
        { url: "https://cdn.example/a.png", caption: "chart" },
        { url: "https://cdn.example/r", filename: "r.pdf" },
        { url: "https://cdn.example/v", kind: "video" },
      ],
      location: { latitude: 52.5, longitude: 13.4, name: "Office", address: "Main St 1" },
      options: [
        { text: "Yes", kind: "reply", id: "yes" },
        { text: "Docs", kind: "link", url: "https://docs.example" },
      ],
      header: { url: "https://cdn.example/h.jpg" },
      footer: "Reply soon",
    };
    expect((await send(body, key)).status).toBe(200);
    const stored = (await feed(key)).body.data.notifications.find((n: any) => n.message === message);
    expect(stored).toMatchObject({
      message,
      recipient: "ops-desk",
      media: [
        { kind: "image", url: "https://cdn.example/a.png", caption: "chart" },
        { kind: "document", url: "https://cdn.example/r", filename: "r.pdf" },
        { kind: "video", url: "https://cdn.example/v" },
      ],
      location: body.location,
      options: body.options,
      header: { kind: "image", url: "https://cdn.example/h.jpg" },
      footer: "Reply soon",
    });
    expect(stored.audience).toBeUndefined();
  });

  it("admits a media-only and a location-only send with a blank message, and a template alone", async () => {
    const key = await admin();
    expect((await send({ message: "", media: [{ url: "https://cdn.example/a.png" }] }, key)).status).toBe(200);
    expect((await send({ message: " ", location: { latitude: 1, longitude: 2 } }, key)).status).toBe(200);
    const template = { name: "order_update", language: "en_US", body_parameters: ["42"] };
    expect((await send({ message: "your order", template }, key)).status).toBe(200);
  });

  it("writes an audience-addressed send to the shared feed and that identity's feed", async () => {
    const key = await admin();
    const audience = uniq("someone");
    const message = uniq("addressed");
    expect((await send({ message, audience }, key)).status).toBe(200);
    expect(await identityMessages(audience)).toEqual([message]);
    expect(await sharedMessages()).toContain(message);
    const stored = (await feed(key)).body.data.notifications.find((n: any) => n.message === message);
    expect(stored.audience).toBe(audience);
  });

  it("keeps each feed at NOTIFICATIONS_FEED_MAX, dropping the oldest", async () => {
    const key = await admin();
    const vars = { NOTIFICATIONS_FEED_MAX: "3" };
    const audience = uniq("capped");
    const messages = Array.from({ length: 5 }, (_, i) => `${audience}-${i}`);
    for (const message of messages) expect((await send({ message, audience }, key, vars)).status).toBe(200);
    expect(await identityMessages(audience)).toEqual(["4", "3", "2"].map((i) => `${audience}-${i}`));
    const shared = (await feed(key, vars)).body.data.notifications.map((n: any) => n.message);
    expect(shared).toEqual(["4", "3", "2"].map((i) => `${audience}-${i}`));
  });

  it("gives the identity feed the NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS idle alarm, and the shared feed none", async () => {
    const audience = uniq("ttl");
    const before = Date.now();
    expect((await send({ message: "m", audience }, await admin(), { NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS: "3600" })).status).toBe(200);
    const after = Date.now();
    const alarmOf = (name: string) =>
      runInDurableObject(env.NOTIFICATION_FEEDS.get(env.NOTIFICATION_FEEDS.idFromName(name)), (_o, state) => state.storage.getAlarm());
    const alarm = await alarmOf(identityFeed(audience));
    expect(alarm).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(alarm).toBeLessThanOrEqual(after + 3_600_000);
    expect(await alarmOf(SHARED_FEED)).toBeNull();
  });

  it("answers the feed in the documented Notification shape", async () => {
    const key = await admin();
    expect(
      (
        await send(
          {
            message: uniq("shape"),
            audience: uniq("a"),
            media: [{ url: "https://cdn.example/a.png" }],
            sections: [{ title: "t", rows: [{ text: "a", kind: "reply" }] }],
          },
          key,
        )
      ).status,
    ).toBe(200);
    const r = await feed(key);
    expect(NotificationFeedAnswer.strict().safeParse(r.body.data).success).toBe(true);
    for (const n of r.body.data.notifications) expect(Object.keys(n).every((k) => k in NotificationFeedAnswer.shape.notifications.element.shape)).toBe(true);
  });
});

describe("restricted and unrestricted callers", () => {
  it("clamps an owned key's audience to itself and refuses another identity with 403", async () => {
    const { owner, owned } = await ownedPair();
    const own = uniq("own");
    expect((await send({ message: own }, owned.key)).status).toBe(200);
    expect((await send({ message: uniq("explicit"), audience: owned.user_id }, owned.key)).status).toBe(200);
    const other = await send({ message: uniq("other"), audience: owner.user_id }, owned.key);
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ error: "Forbidden" });
    expect(await identityMessages(owner.user_id)).toEqual([]);
    expect((await identityMessages(owned.user_id))[1]).toBe(own);
  });

  it("an owned key reads only its own feed (everything addressed to it, no broadcasts); others read the shared feed", async () => {
    const key = await admin();
    const { owner, owned } = await ownedPair();
    const mine = uniq("mine");
    const toMe = uniq("to-me");
    const broadcast = uniq("broadcast");
    const toOther = uniq("to-other");
    expect((await send({ message: mine }, owned.key)).status).toBe(200);
    expect((await send({ message: toMe, audience: owned.user_id }, key)).status).toBe(200);
    expect((await send({ message: broadcast }, key)).status).toBe(200);
    expect((await send({ message: toOther, audience: owner.user_id }, key)).status).toBe(200);

    const restricted = await feed(owned.key);
    expect(restricted.status).toBe(200);
    expect(restricted.body.data.notifications.map((n: any) => n.message)).toEqual([toMe, mine]);
    expect(restricted.body.data.notifications.every((n: any) => n.audience === owned.user_id)).toBe(true);

    // The owner is an ownerless key: unrestricted, so it reads the shared feed, which holds all four.
    const shared = (await feed(owner.key)).body.data.notifications.map((n: any) => n.message);
    expect(shared.slice(0, 4)).toEqual([toOther, broadcast, toMe, mine]);
  });

  it("an owned key's channel send lands in its own feed too", async () => {
    providers();
    const { owned } = await ownedPair();
    const message = uniq("pushed");
    const r = await send({ message, channel: "telegram", recipient: "42" }, owned.key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await identityMessages(owned.user_id)).toEqual([message]);
  });

  it("refuses sender_identity (400) before the clamp would refuse the audience (403)", async () => {
    const { owner, owned } = await ownedPair();
    const r = await send({ message: "x", audience: owner.user_id, sender_identity: owned.user_id }, owned.key);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/sender_identity/);
  });
});

describe("channel sends", () => {
  it("sends through Telegram to the recipient, answers which channel, and records only with an audience", async () => {
    const calls = providers();
    const key = await admin();
    const message = uniq("tg");
    const r = await send({ message, channel: "telegram", recipient: "4242" }, key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ data: "notification sent via 'telegram'" });
    expect(calls).toHaveLength(1);
    expect(calls[0].url).toBe("https://telegram.fake/bot123456:telegram-test-token/sendMessage");
    expect(JSON.parse(calls[0].body)).toEqual({ chat_id: "4242", parse_mode: "HTML", text: message });
    expect(await sharedMessages()).not.toContain(message);

    const audience = uniq("watcher");
    const addressed = uniq("tg-addressed");
    expect((await send({ message: addressed, channel: "telegram", recipient: "4242", audience }, key)).status).toBe(200);
    expect(await identityMessages(audience)).toEqual([addressed]);
    const stored = (await feed(key)).body.data.notifications.find((n: any) => n.message === addressed);
    expect(stored).toMatchObject({ recipient: "4242", audience });
  });

  it("carries options as a Telegram keyboard and media as its own messages", async () => {
    const calls = providers();
    const r = await send(
      {
        message: "Pick one",
        channel: "telegram",
        recipient: "9",
        media: [{ url: "https://cdn.example/a.png" }],
        options: [
          { text: "Yes", kind: "reply" },
          { text: "No", kind: "reply" },
        ],
        footer: "thanks",
      },
      await admin(),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(calls.map((c) => new URL(c.url).pathname.split("/").pop())).toEqual(["sendPhoto", "sendMessage"]);
    expect(JSON.parse(calls[1].body)).toEqual({
      chat_id: "9",
      text: "Pick one\n\nthanks",
      reply_markup: { inline_keyboard: [[{ text: "Yes", callback_data: "Yes" }], [{ text: "No", callback_data: "No" }]] },
    });
  });

  it("sends from NOTIFICATIONS_FROM_<CHANNEL> and to NOTIFICATIONS_RECIPIENT_<CHANNEL> when recipient is left out", async () => {
    const calls = providers();
    const vars = { NOTIFICATIONS_FROM_TWILIO: "+15550001111", NOTIFICATIONS_RECIPIENT_TWILIO: "+15559990000", NOTIFICATIONS_FROM_WHATSAPP: "1555000" };
    const key = await admin();
    expect((await send({ message: "sms", channel: "twilio" }, key, vars)).status).toBe(200);
    expect(new URLSearchParams(calls[0].body).get("From")).toBe("+15550001111");
    expect(new URLSearchParams(calls[0].body).get("To")).toBe("+15559990000");
    expect((await send({ message: "wa", channel: "whatsapp", recipient: "15551234" }, key, vars)).status).toBe(200);
    expect(calls[1].url).toBe("https://whatsapp.fake/v21.0/1555000/messages");
    expect(JSON.parse(calls[1].body)).toMatchObject({ to: "15551234", type: "text", text: { body: "wa" } });
  });

  it("Slack sends as its bot without any notification setting", async () => {
    const calls = providers();
    const r = await send({ message: "deploy done", channel: "slack", recipient: "C123" }, await admin());
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(calls[0].url).toBe("https://slack.fake/api/chat.postMessage");
    expect(JSON.parse(calls[0].body)).toMatchObject({ channel: "C123", text: "deploy done" });
  });

  it("sends a WhatsApp Flow form (schema) and a template", async () => {
    const calls = providers();
    const vars = { NOTIFICATIONS_FROM_WHATSAPP: "1555000" };
    const key = await admin();
    expect((await send({ message: "Tell us more", channel: "whatsapp", recipient: "1", schema: { flow_id: "flow-1" } }, key, vars)).status).toBe(200);
    expect(JSON.parse(calls[0].body).interactive.type).toBe("flow");
    expect(
      (await send({ message: "order", channel: "whatsapp", recipient: "1", template: { name: "order_update", language: "en_US" } }, key, vars)).status,
    ).toBe(200);
    expect(JSON.parse(calls[1].body)).toMatchObject({ type: "template", template: { name: "order_update" } });
  });
});

describe("refusals (spec §4.9), none of which leaves a feed entry or sends anything", () => {
  /** Sends as the admin with an audience and checks that nothing was recorded for it. */
  async function refused(body: Record<string, unknown>, vars?: Record<string, unknown>) {
    const calls = providers();
    const audience = uniq("nobody");
    const message = typeof body.message === "string" && body.message.trim() ? `${body.message}-${audience}` : body.message;
    // A case about the audience itself keeps its own (and records nowhere, as the check shows).
    const r = await send({ audience, ...body, message }, await admin(), vars);
    expect(await identityMessages(audience)).toEqual([]);
    if (typeof message === "string" && message.trim()) expect(await sharedMessages()).not.toContain(message);
    return { ...r, calls };
  }

  it.each([
    ["a blank message without media", { message: "  " }, "message"],
    ["a blank message with options", { message: "", media: [{ url: "https://cdn.example/a.png" }], options: [{ text: "a", kind: "reply" }] }, "message"],
    ["an unknown channel", { message: "m", channel: "pigeon", recipient: "1" }, "unknown channel"],
    ["a blank channel", { message: "m", channel: " ", recipient: "1" }, "channel"],
    ["a blank recipient", { message: "m", channel: "telegram", recipient: " " }, "recipient"],
    ["a blank audience", { message: "m", audience: " " }, "audience"],
    ["sender_identity", { message: "m", sender_identity: "bridge" }, "sender_identity"],
    ["an empty media list", { message: "m", media: [] }, "media"],
    ["an empty options list", { message: "m", options: [] }, "options"],
    ["an empty schema", { message: "m", channel: "whatsapp", recipient: "1", schema: {} }, "schema"],
    ["101 options", { message: "m", options: Array.from({ length: 101 }, (_, i) => ({ text: `o${i}`, kind: "reply" })) }, "options"],
    [
      "101 rows across sections",
      {
        message: "m",
        sections: [
          { title: "a", rows: Array.from({ length: 51 }, (_, i) => ({ text: `o${i}`, kind: "reply" })) },
          { title: "b", rows: Array.from({ length: 50 }, (_, i) => ({ text: `p${i}`, kind: "reply" })) },
        ],
      },
      "sections",
    ],
    [
      "options with sections",
      { message: "m", options: [{ text: "a", kind: "reply" }], sections: [{ title: "s", rows: [{ text: "a", kind: "reply" }] }] },
      "sections",
    ],
    [
      "schema with options",
      { message: "m", channel: "whatsapp", recipient: "1", schema: { flow_id: "f" }, options: [{ text: "a", kind: "reply" }] },
      "options",
    ],
    ["template with media", { message: "m", template: { name: "t", language: "en" }, media: [{ url: "https://cdn.example/a.png" }] }, "media"],
    ["a footer without options", { message: "m", footer: "f" }, "footer"],
    ["a header without options", { message: "m", header: { url: "https://cdn.example/a.png" } }, "header"],
    ["schema with no channel", { message: "m", schema: { flow_id: "f" } }, "schema: needs a channel"],
    ["a form the channel's subset refuses (no flow_id)", { message: "m", channel: "whatsapp", recipient: "1", schema: { fields: [] } }, "flow_id"],
    [
      "a shape the channel cannot express (a reply option over 64 bytes on Telegram)",
      { message: "m", channel: "telegram", recipient: "1", options: [{ text: "o".repeat(65), kind: "reply" }] },
      "64 bytes",
    ],
    [
      "a message needing more than max_outbound_chunks messages",
      { message: "word ".repeat(10_000), channel: "telegram", recipient: "1" },
      "max_outbound_chunks",
    ],
    ["a channel send without recipient nor default", { message: "m", channel: "telegram" }, "recipient"],
  ])("400 for %s", async (_what, body, expected) => {
    const r = await refused(body);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toContain(expected);
    expect(r.calls).toEqual([]);
  });

  it("never echoes an unknown channel's name", async () => {
    const r = await send({ message: "m", channel: "secret-channel-name" }, await admin());
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).not.toContain("secret-channel-name");
  });

  it("400 for a channel that exists but is not configured", async () => {
    const r = await refused({ message: "m", channel: "slack", recipient: "C1" }, { CHANNEL_SLACK_BOT_TOKEN: "" });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("not configured");
  });

  it.each([
    ["location on Twilio", "twilio", { location: { latitude: 1, longitude: 2 } }, "location"],
    ["options on Twilio", "twilio", { options: [{ text: "a", kind: "reply" }] }, "interactive"],
    ["a template on Telegram", "telegram", { template: { name: "t", language: "en" } }, "template"],
    ["a form on Slack", "slack", { schema: { flow_id: "f" } }, "form"],
    ["location on Slack", "slack", { location: { latitude: 1, longitude: 2 } }, "location"],
  ])("501 for %s (a capability the channel lacks, never downgraded)", async (_what, channel, fields, capability) => {
    const r = await refused({ message: "m", channel, recipient: "1", ...fields });
    expect(r.status, JSON.stringify(r.body)).toBe(501);
    expect(r.body).toEqual({ error: expect.stringContaining(capability), code: "channel-capability-not-configured" });
    expect(r.calls).toEqual([]);
  });

  it("501 when a channel has no identity to send from (Twilio without NOTIFICATIONS_FROM_TWILIO)", async () => {
    const r = await refused({ message: "m", channel: "twilio", recipient: "+1555" });
    expect(r.status).toBe(501);
    expect(r.body).toEqual({ error: expect.stringContaining("NOTIFICATIONS_FROM_TWILIO"), code: "notification-sender-not-configured" });
    expect(r.calls).toEqual([]);
  });

  it("503 with the provider's retry_after on a transient failure, and nothing recorded", async () => {
    const limited = () =>
      Response.json(
        { ok: false, error_code: 429, description: "Too Many Requests: retry after 12", parameters: { retry_after: 12 } },
        { status: 429, headers: { "retry-after": "12" } },
      );
    providers(limited);
    const audience = uniq("limited");
    const message = uniq("limited-msg");
    const res = await send({ message, channel: "telegram", recipient: "1", audience }, await admin());
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: expect.stringContaining("telegram"), retry_after: 12, code: "channel_send_unavailable" });
    expect(res.headers.get("retry-after")).toBe("12");
    expect(await identityMessages(audience)).toEqual([]);
    expect(await sharedMessages()).not.toContain(message);
  });

  it("503 without retry_after when the provider names none (a 5xx)", async () => {
    providers(() => new Response("upstream down", { status: 502 }));
    const res = await send({ message: "m", channel: "slack", recipient: "C1" }, await admin());
    expect(res.status).toBe(503);
    expect(res.body.retry_after).toBeUndefined();
  });

  it("502 on a permanent refusal, and nothing recorded", async () => {
    providers(() => Response.json({ ok: false, error_code: 400, description: "Bad Request: chat not found" }, { status: 400 }));
    const audience = uniq("refused");
    const message = uniq("refused-msg");
    const res = await send({ message, channel: "telegram", recipient: "1", audience }, await admin());
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ error: expect.stringContaining("telegram error 400"), code: "channel_send_refused" });
    expect(JSON.stringify(res.body)).not.toContain("chat not found");
    expect(await identityMessages(audience)).toEqual([]);
    expect(await sharedMessages()).not.toContain(message);
  });
});

describe("without INTERACTIONS_STORE_URL", () => {
  const noSink = { INTERACTIONS_STORE_URL: "" };

  it("a sink send is 501 interactions-not-configured, and the feed reads an honest empty list", async () => {
    const key = await admin();
    const r = await send({ message: "m" }, key, noSink);
    expect(r.status).toBe(501);
    expect(r.body).toMatchObject({ code: "interactions-not-configured" });
    const list = await feed(key, noSink);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: { notifications: [] } });
    const { owned } = await ownedPair();
    expect((await feed(owned.key, noSink)).body).toEqual({ data: { notifications: [] } });
  });

  it("a channel send without audience still goes out; one that would record is refused before sending", async () => {
    const calls = providers();
    const key = await admin();
    expect((await send({ message: "m", channel: "telegram", recipient: "1" }, key, noSink)).status).toBe(200);
    expect(calls).toHaveLength(1);
    const addressed = await send({ message: "m", channel: "telegram", recipient: "1", audience: "someone" }, key, noSink);
    expect(addressed.status).toBe(501);
    expect(addressed.body).toMatchObject({ code: "interactions-not-configured" });
    // An owned key's audience is always itself, so its channel sends need the sink too.
    const { owned } = await ownedPair();
    expect((await send({ message: "m", channel: "telegram", recipient: "1" }, owned.key, noSink)).status).toBe(501);
    expect(calls).toHaveLength(1);
  });
});

describe("authorization", () => {
  it("needs notifications:write to send and notifications:read to read", async () => {
    const reader = await mintKey({ scopes: ["notifications:read"] });
    expect((await send({ message: "m" }, reader.key)).status).toBe(403);
    expect((await feed(reader.key)).status).toBe(200);
    const other = await mintKey({ scopes: ["states:write"] });
    expect((await feed(other.key)).status).toBe(403);
    expect((await call("GET", "/api/notifications")).status).toBe(401);
  });
});
