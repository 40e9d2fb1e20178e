import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ChannelEnv } from "../../src/channels/adapter";
import { adapterFor, channelAdapters, channelListing, configuredChannels } from "../../src/channels/registry";
import { receiveWebhook, webhookAck, webhookOf } from "../../src/channels/webhook";
import { DEFAULT_MAX_MESSAGE_CHARS } from "../../src/platform/settings/settings";
import { admin, call, fetchWithEnv, mintKey } from "../helpers/http";
import { nodeHmacHex, nodeTwilioSignature, webhook } from "../helpers/webhooks";

const ALL: ChannelEnv = {
  CHANNEL_TWILIO_ACCOUNT_SID: "AC1",
  CHANNEL_TWILIO_AUTH_TOKEN: "tw-token",
  CHANNEL_TWILIO_PUBLIC_URL: "https://bridge.example.com",
  CHANNEL_WHATSAPP_APP_SECRET: "wa-secret",
  CHANNEL_WHATSAPP_ACCESS_TOKEN: "wa-access",
  CHANNEL_WHATSAPP_VERIFY_TOKEN: "wa-verify",
  CHANNEL_TELEGRAM_BOT_TOKEN: "123:abc",
  CHANNEL_TELEGRAM_WEBHOOK_SECRET: "tg-secret",
  CHANNEL_SLACK_SIGNING_SECRET: "sl-secret",
  CHANNEL_SLACK_BOT_TOKEN: "xoxb-1",
  CHANNEL_SLACK_BOT_USER_ID: "U0BOT",
};
const NOW = new Date("2026-05-01T12:00:00Z");

describe("channel registry", () => {
  it("registers the five adapters under their max_message_chars keys", () => {
    expect(channelAdapters.map((a) => a.name)).toEqual(["twilio", "whatsapp", "telegram", "slack", "web"]);
    for (const a of channelAdapters) expect(Object.hasOwn(DEFAULT_MAX_MESSAGE_CHARS, a.name)).toBe(true);
    expect(adapterFor("slack")?.name).toBe("slack");
    expect(adapterFor("email")).toBeUndefined();
  });

  it("declares the capabilities of decisions §11", () => {
    const caps = Object.fromEntries(channelAdapters.map((a) => [a.name, a.capabilities]));
    expect(caps).toEqual({
      twilio: { media: true, location: false, template: false, interactive: false, form: false, typing: false },
      whatsapp: { media: true, location: true, template: true, interactive: true, form: true, typing: true },
      telegram: { media: true, location: true, template: false, interactive: true, form: false, typing: true },
      slack: { media: true, location: false, template: false, interactive: true, form: false, typing: false },
      web: { media: true, location: false, template: false, interactive: true, form: true, typing: false },
    });
  });

  it("lists a channel only when all its secrets are set (web needs none)", () => {
    expect(configuredChannels({}).map((a) => a.name)).toEqual(["web"]);
    expect(configuredChannels(ALL).map((a) => a.name)).toEqual(["twilio", "whatsapp", "telegram", "slack", "web"]);
    const { CHANNEL_WHATSAPP_VERIFY_TOKEN: _, ...noVerify } = ALL;
    expect(configuredChannels(noVerify).map((a) => a.name)).toEqual(["twilio", "telegram", "slack", "web"]);
  });

  it("builds the GET /api/channels listing with each channel's cap (null when the map lacks it)", () => {
    expect(channelListing(ALL, { twilio: 160, whatsapp: 4096, slack: 40000 })).toEqual([
      { name: "twilio", capabilities: { media: true, location: false, template: false, interactive: false, form: false, typing: false }, max_message_chars: 160 },
      { name: "whatsapp", capabilities: { media: true, location: true, template: true, interactive: true, form: true, typing: true }, max_message_chars: 4096 },
      { name: "telegram", capabilities: { media: true, location: true, template: false, interactive: true, form: false, typing: true }, max_message_chars: null },
      { name: "slack", capabilities: { media: true, location: false, template: false, interactive: true, form: false, typing: false }, max_message_chars: 40000 },
      { name: "web", capabilities: { media: true, location: false, template: false, interactive: true, form: true, typing: false }, max_message_chars: null },
    ]);
  });
});

describe("receiveWebhook (door → verify → parse)", () => {
  const tgUpdate = JSON.stringify({
    update_id: 77,
    message: { message_id: 1, from: { id: 5, is_bot: false }, chat: { id: 5, type: "private" }, date: 1, text: "hi" },
  });
  const tg = (secret: string, method: "GET" | "POST" = "POST") =>
    webhook({
      method,
      url: "https://bridge.example.com/api/channels/telegram/inbound",
      headers: { "x-telegram-bot-api-secret-token": secret },
      body: tgUpdate,
    });

  it("answers 404 for an unknown channel, an unconfigured one, and a door the channel lacks", async () => {
    expect(await receiveWebhook("email", tg("tg-secret"), ALL, NOW)).toEqual({ kind: "refused", status: 404, error: "not found" });
    expect(await receiveWebhook("telegram", tg("tg-secret"), {}, NOW)).toEqual({ kind: "refused", status: 404, error: "not found" });
    expect(await receiveWebhook("telegram", { ...tg("tg-secret"), door: "status" }, ALL, NOW)).toEqual({ kind: "refused", status: 404, error: "not found" });
  });

  it("answers 405 with Allow for a method the door does not take", async () => {
    expect(await receiveWebhook("telegram", tg("tg-secret", "GET"), ALL, NOW)).toEqual({
      kind: "refused",
      status: 405,
      error: "method not allowed",
      allow: "POST",
    });
  });

  it("answers 401 for a bad signature and never parses", async () => {
    expect(await receiveWebhook("telegram", tg("wrong"), ALL, NOW)).toEqual({ kind: "refused", status: 401, error: "bad secret token" });
  });

  it("hands back the events of a verified webhook, with the adapter's ack", async () => {
    const out = await receiveWebhook("telegram", tg("tg-secret"), ALL, NOW);
    expect(out).toMatchObject({
      kind: "events",
      ignored: 0,
      events: [{ kind: "message", provider_message_id: "77", sender: "5", our_identity: "123", text: "hi" }],
    });
    if (out.kind !== "events") throw new Error("expected events");
    const ack = webhookAck(out.adapter);
    expect(ack.status).toBe(200);
    expect(await ack.json()).toEqual({ data: { ok: true } });
  });

  it("acknowledges Twilio with 204 and no body", async () => {
    const params = { MessageSid: "SM1", From: "+1", To: "+2", Body: "x" };
    const url = "https://bridge.example.com/api/channels/twilio/inbound";
    const hook = webhook({
      url,
      headers: { "x-twilio-signature": nodeTwilioSignature("tw-token", url, params) },
      body: new URLSearchParams(params).toString(),
    });
    const out = await receiveWebhook("twilio", hook, ALL, NOW);
    if (out.kind !== "events") throw new Error("expected events");
    const ack = webhookAck(out.adapter);
    expect(ack.status).toBe(204);
    expect(await ack.text()).toBe("");
  });

  it("passes a protocol reply through (WhatsApp handshake, Slack url_verification)", async () => {
    const handshake = webhook({
      method: "GET",
      url: "https://bridge.example.com/api/channels/whatsapp/inbound?hub.mode=subscribe&hub.verify_token=wa-verify&hub.challenge=42",
    });
    const out = await receiveWebhook("whatsapp", handshake, ALL, NOW);
    expect(out.kind).toBe("reply");
    if (out.kind === "reply") expect(await out.response.text()).toBe("42");

    const body = JSON.stringify({ type: "url_verification", challenge: "c-1" });
    const ts = String(Math.floor(NOW.getTime() / 1000));
    const slack = webhook({
      url: "https://bridge.example.com/api/channels/slack/inbound",
      headers: { "x-slack-request-timestamp": ts, "x-slack-signature": `v0=${nodeHmacHex("sha256", "sl-secret", `v0:${ts}:${body}`)}` },
      body,
    });
    const s = await receiveWebhook("slack", slack, ALL, NOW);
    expect(s.kind).toBe("reply");
    if (s.kind === "reply") expect(await s.response.json()).toEqual({ challenge: "c-1" });
  });

  it("builds the adapter's view of a Request the door already read", () => {
    const req = new Request("https://bridge.example.com/api/channels/slack/inbound?x=1", { method: "post", headers: { "x-a": "1" } });
    const raw = new Uint8Array([1, 2]);
    const hook = webhookOf("inbound", req, raw);
    expect(hook.method).toBe("POST");
    expect(hook.url.search).toBe("?x=1");
    expect(hook.headers.get("x-a")).toBe("1");
    expect(hook.raw).toBe(raw);
  });
});

describe("GET /api/channels", () => {
  it("lists the configured channels (the test env configures all four providers; web needs nothing) with capabilities and caps", async () => {
    expect(
      configuredChannels(env)
        .map((a) => a.name)
        .sort(),
    ).toEqual(["slack", "telegram", "twilio", "web", "whatsapp"]);
    const r = await call("GET", "/api/channels", { key: await admin() });
    expect(r.status).toBe(200);
    const twilio = r.body.data.channels.find((ch: { name: string }) => ch.name === "twilio");
    expect(twilio).toMatchObject({ max_message_chars: 1600, capabilities: { media: true } });
  });

  it("lists only web when no CHANNEL_* vars are set", async () => {
    const bare = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith("CHANNEL_")));
    expect(configuredChannels(bare).map((a) => a.name)).toEqual(["web"]);
    const res = await fetchWithEnv(bare, new Request("https://bridge.test/api/channels", { headers: { "x-api-key": await admin() } }));
    expect(await res.json()).toEqual({
      data: {
        channels: [{ name: "web", capabilities: { media: true, location: false, template: false, interactive: true, form: true, typing: false }, max_message_chars: 8000 }],
      },
    });
  });

  it("needs an api key and the channels read grant", async () => {
    expect((await call("GET", "/api/channels")).status).toBe(401);
    const other = await mintKey({ scopes: ["tools:read"] });
    expect((await call("GET", "/api/channels", { key: other.key })).status).toBe(403);
    const reader = await mintKey({ scopes: ["channels:read"] });
    expect((await call("GET", "/api/channels", { key: reader.key })).status).toBe(200);
  });

  it("is documented in the OpenAPI document under the channels tag", async () => {
    const r = await call("GET", "/api/openapi.json");
    const op = r.body.paths["/api/channels"].get;
    expect(op.tags).toEqual(["channels"]);
    expect(op["x-required-grant"]).toBe("channels:read");
  });
});
