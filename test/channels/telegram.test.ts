import { describe, expect, it } from "vitest";
import type { ChannelEnv } from "../../src/channels/adapter";
import { TELEGRAM_DEFAULT_API_BASE, telegramAdapter, telegramBotId } from "../../src/channels/telegram";
import { fakeFetch, hangingFetch, json } from "../helpers/network";
import { webhook } from "../helpers/webhooks";

const TOKEN = "7012345678:AAHfake-token_value";
const ENV: ChannelEnv = { CHANNEL_TELEGRAM_BOT_TOKEN: TOKEN, CHANNEL_TELEGRAM_WEBHOOK_SECRET: "tg-secret_123" };
const URL_IN = "https://bridge.example.com/api/channels/telegram/inbound";
const NOW = new Date("2026-05-01T12:00:00Z");

const hook = (update: unknown, secret: string | null = "tg-secret_123") =>
  webhook({ url: URL_IN, headers: secret === null ? {} : { "x-telegram-bot-api-secret-token": secret }, body: JSON.stringify(update) });
const parsed = (update: unknown) => telegramAdapter.parse(hook(update), ENV);
const user = { id: 42, is_bot: false, first_name: "Ana" };
const chat = { id: 42, type: "private", first_name: "Ana" };
const message = (m: Record<string, unknown>) => ({ update_id: 900001, message: { message_id: 11, from: user, chat, date: 1714564800, ...m } });
const base = { kind: "message", provider_message_id: "900001", sender: "42", our_identity: "7012345678" };

describe("telegram: secret token", () => {
  it("accepts the header equal to the webhook secret", async () => {
    expect(await telegramAdapter.verify(hook(message({ text: "hi" })), ENV, NOW)).toEqual({ ok: true });
  });

  it("refuses a wrong, differently-cased or missing secret", async () => {
    expect(await telegramAdapter.verify(hook(message({ text: "hi" }), "tg-secret_124"), ENV, NOW)).toEqual({
      ok: false,
      status: 401,
      reason: "bad secret token",
    });
    expect(await telegramAdapter.verify(hook(message({ text: "hi" }), "TG-SECRET_123"), ENV, NOW)).toMatchObject({ ok: false, status: 401 });
    expect(await telegramAdapter.verify(hook(message({ text: "hi" }), null), ENV, NOW)).toEqual({ ok: false, status: 401, reason: "missing secret token" });
  });

  it("fails closed (404) without the secret, without the token, or with a token not shaped <id>:<secret>", async () => {
    for (const env of [
      { CHANNEL_TELEGRAM_BOT_TOKEN: TOKEN },
      { CHANNEL_TELEGRAM_WEBHOOK_SECRET: "tg-secret_123" },
      { ...ENV, CHANNEL_TELEGRAM_BOT_TOKEN: "not-a-token" },
    ]) {
      expect(telegramAdapter.isConfigured(env)).toBe(false);
      expect(await telegramAdapter.verify(hook(message({ text: "hi" })), env, NOW)).toEqual({ ok: false, status: 404, reason: "channel not configured" });
    }
  });

  it("derives the bot id from the token's numeric prefix", () => {
    expect(telegramBotId(TOKEN)).toBe("7012345678");
    expect(telegramBotId(":abc")).toBeNull();
    expect(telegramBotId("123abc")).toBeNull();
    expect(telegramBotId(undefined)).toBeNull();
  });
});

describe("telegram: normalization", () => {
  it("maps update_id / chat id / bot id and the text", () => {
    expect(parsed(message({ text: "Hello ✨" }))).toEqual({ events: [{ ...base, text: "Hello ✨" }], ignored: 0 });
    // The sender's language, when Telegram reports it, travels as a hint for a new person's locale.
    expect(parsed(message({ text: "Olá", from: { ...user, language_code: "pt-br" } }))).toEqual({
      events: [{ ...base, text: "Olá", locale_hint: "pt-br" }],
      ignored: 0,
    });
  });

  it("uses the chat id (not the user id) as the sender in a group", () => {
    const out = parsed(message({ chat: { id: -100123, type: "supergroup", title: "Team" }, text: "hi all" }));
    expect(out.events[0]).toMatchObject({ sender: "-100123" });
  });

  it("maps the largest photo size with its caption", () => {
    const out = parsed(
      message({
        caption: "my cat",
        photo: [
          { file_id: "small", file_unique_id: "a", width: 90, height: 90 },
          { file_id: "large", file_unique_id: "b", width: 1280, height: 1280 },
        ],
      }),
    );
    expect(out.events[0]).toEqual({ ...base, text: "my cat", attachments: [{ kind: "image", url: "telegram-file:large", caption: "my cat" }] });
  });

  it("maps document, video, audio, voice and video notes", () => {
    const cases: Array<[Record<string, unknown>, Record<string, unknown>]> = [
      [
        { document: { file_id: "D1", file_name: "report.pdf", mime_type: "application/pdf" } },
        { kind: "document", url: "telegram-file:D1", filename: "report.pdf", mime_type: "application/pdf" },
      ],
      [{ video: { file_id: "V1", mime_type: "video/mp4", duration: 3 } }, { kind: "video", url: "telegram-file:V1", mime_type: "video/mp4" }],
      [
        { audio: { file_id: "A1", mime_type: "audio/mpeg", file_name: "song.mp3" } },
        { kind: "audio", url: "telegram-file:A1", filename: "song.mp3", mime_type: "audio/mpeg" },
      ],
      [{ voice: { file_id: "VO1", mime_type: "audio/ogg", duration: 2 } }, { kind: "audio", url: "telegram-file:VO1", mime_type: "audio/ogg" }],
      [{ video_note: { file_id: "VN1", length: 240, duration: 2 } }, { kind: "video", url: "telegram-file:VN1" }],
      // An animation also carries `document`; it is taken once, as a video.
      [
        { animation: { file_id: "G1", mime_type: "video/mp4" }, document: { file_id: "G1", mime_type: "video/mp4" } },
        { kind: "video", url: "telegram-file:G1", mime_type: "video/mp4" },
      ],
    ];
    for (const [m, attachment] of cases) expect(parsed(message(m)).events[0]).toEqual({ ...base, text: "", attachments: [attachment] });
  });

  it("maps a location and a venue", () => {
    expect(parsed(message({ location: { latitude: 48.8584, longitude: 2.2945 } })).events[0]).toEqual({
      ...base,
      text: "",
      location: { latitude: 48.8584, longitude: 2.2945 },
    });
    const venue = parsed(
      message({
        location: { latitude: 1, longitude: 2 },
        venue: { location: { latitude: 48.86, longitude: 2.33 }, title: "Louvre", address: "Rue de Rivoli" },
      }),
    );
    expect(venue.events[0]).toMatchObject({ location: { latitude: 48.86, longitude: 2.33, name: "Louvre", address: "Rue de Rivoli" } });
  });

  it("maps an inline-keyboard tap: text = data, params.reply_id = data, sender = the message's chat", () => {
    const out = parsed({
      update_id: 900002,
      callback_query: { id: "cbq1", from: user, message: { message_id: 5, chat, date: 1 }, chat_instance: "ci", data: "opt:yes" },
    });
    expect(out).toEqual({ events: [{ ...base, provider_message_id: "900002", text: "opt:yes", params: { reply_id: "opt:yes" } }], ignored: 0 });
  });

  it("ignores edits, channel posts, bot authors, stickers, membership updates and data-less taps", () => {
    for (const u of [
      { update_id: 1, edited_message: { message_id: 1, from: user, chat, date: 1, edit_date: 2, text: "fixed" } },
      { update_id: 2, channel_post: { message_id: 1, chat: { id: -1001, type: "channel" }, date: 1, text: "news" } },
      { update_id: 3, message: { message_id: 1, from: { id: 99, is_bot: true, first_name: "OtherBot" }, chat, date: 1, text: "beep" } },
      { update_id: 4, message: { message_id: 1, from: user, chat, date: 1, sticker: { file_id: "S", type: "regular" } } },
      { update_id: 5, my_chat_member: { chat, from: user, date: 1 } },
      { update_id: 6, callback_query: { id: "q", from: user, chat_instance: "c", game_short_name: "g" } },
      { update_id: 7, message_reaction: { chat, message_id: 1, date: 1, old_reaction: [], new_reaction: [{ type: "emoji", emoji: "👍" }] } },
    ]) {
      expect(parsed(u)).toEqual({ events: [], ignored: 1 });
    }
  });

  it("never throws on malformed JSON or a missing update_id", () => {
    expect(telegramAdapter.parse(webhook({ url: URL_IN, body: "{oops" }), ENV)).toEqual({ events: [], ignored: 1 });
    expect(parsed({ message: { text: "no id" } })).toEqual({ events: [], ignored: 1 });
  });
});

describe("telegram: send", () => {
  const args = { to: "42", from: "7012345678", text: "Answer 📦" };

  it("POSTs {chat_id, text, parse_mode: HTML} to {base}/bot{token}/sendMessage and reads result.message_id", async () => {
    const f = fakeFetch(() => json({ ok: true, result: { message_id: 321, chat: { id: 42 }, date: 1, text: "Answer 📦" } }));
    expect(await telegramAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5000 })).toEqual({ ok: true, provider_message_id: "321" });
    const [req] = f.calls;
    expect(TELEGRAM_DEFAULT_API_BASE).toBe("https://api.telegram.org");
    expect(req.url).toBe(`https://api.telegram.org/bot${TOKEN}/sendMessage`);
    expect(req.method).toBe("POST");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["authorization"]).toBeUndefined();
    expect(JSON.parse(req.body)).toEqual({ chat_id: "42", parse_mode: "HTML", text: "Answer 📦" });
  });

  it("honours CHANNEL_TELEGRAM_API_BASE", async () => {
    const f = fakeFetch(() => json({ ok: true, result: { message_id: 1 } }));
    await telegramAdapter.send(args, { fetch: f.fetch, env: { ...ENV, CHANNEL_TELEGRAM_API_BASE: "http://127.0.0.1:9001" }, timeoutMs: 5000 });
    expect(f.calls[0].url).toBe(`http://127.0.0.1:9001/bot${TOKEN}/sendMessage`);
  });

  it("classifies refusals as permanent, 429 and 5xx as transient, and never leaks the token", async () => {
    const send = (res: () => Response) => telegramAdapter.send(args, { fetch: fakeFetch(res).fetch, env: ENV, timeoutMs: 5000 });
    const blocked = await send(() => json({ ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" }, 403));
    expect(blocked).toEqual({ ok: false, permanent: true, status: 403, reason: "telegram error 403" });
    const limited = await send(() =>
      json({ ok: false, error_code: 429, description: "Too Many Requests: retry after 12", parameters: { retry_after: 12 } }, 429),
    );
    expect(limited).toEqual({ ok: false, permanent: false, status: 429, reason: "telegram error 429", retry_after_seconds: 12 });
    expect(await send(() => new Response("", { status: 502 }))).toEqual({ ok: false, permanent: false, status: 502, reason: "telegram error 502" });
    // Success is `ok: true` only.
    expect(await send(() => json({ ok: false }))).toMatchObject({ ok: false, permanent: true, status: 200 });
    expect(await send(() => new Response("<html>", { status: 200 }))).toMatchObject({ ok: false, permanent: true });
    for (const r of [blocked, limited]) expect(JSON.stringify(r)).not.toContain("AAHfake");
  });

  it("times out through the AbortSignal as a transient failure", async () => {
    const f = hangingFetch();
    expect(await telegramAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5 })).toEqual({ ok: false, permanent: false, reason: "timeout" });
  });
});
