/**
 * Telegram Bot API.
 *
 * One door, `POST /api/channels/telegram/inbound`, registered with `setWebhook` and a
 * `secret_token`; Telegram echoes that secret in `X-Telegram-Bot-Api-Secret-Token` on every update
 * (there is no body signature, so the secret is the whole authentication). The provider message id
 * is the `update_id`, the sender is the chat id (a group chat is one thread), and our identity is
 * the bot id: the numeric prefix of `CHANNEL_TELEGRAM_BOT_TOKEN` before `:`.
 */
import { constantTimeEqual } from "../access-control/crypto";
import type {
  AnswerFeedbackTap,
  ChannelAdapter,
  ChannelEnv,
  InboundMessage,
  ParsedWebhook,
  SendArgs,
  SendDeps,
  SendResult,
  VerifyResult,
  Webhook,
} from "./adapter";
import type { InboundAttachment, MediaKind } from "../shared/media";
import {
  apiBase,
  arr,
  boundAttachments,
  boundParams,
  envString,
  failure,
  httpClass,
  isRecord,
  nonEmpty,
  parseJsonBytes,
  postOnce,
  str,
  toLocation,
} from "./common";
import { makeTelegramRich } from "./rich/telegram";
import { parseFeedbackReplyId } from "./rich/feedback";

export const TELEGRAM_ENV = {
  botToken: "CHANNEL_TELEGRAM_BOT_TOKEN",
  webhookSecret: "CHANNEL_TELEGRAM_WEBHOOK_SECRET",
  apiBase: "CHANNEL_TELEGRAM_API_BASE",
} as const;

export const TELEGRAM_DEFAULT_API_BASE = "https://api.telegram.org";

/** Prefix of an attachment url that is a Bot API `file_id` (resolve with `getFile`). */
export const TELEGRAM_FILE_PREFIX = "telegram-file:";

/** The bot id of a bot token (`<bot id>:<secret>`), or null when the token has another shape. */
export function telegramBotId(token: string | undefined): string | null {
  const m = token ? /^(\d+):\S+$/.exec(token.trim()) : null;
  return m ? m[1] : null;
}

function isConfigured(env: ChannelEnv): boolean {
  return telegramBotId(envString(env, TELEGRAM_ENV.botToken)) !== null && envString(env, TELEGRAM_ENV.webhookSecret) !== undefined;
}

async function verify(hook: Webhook, env: ChannelEnv): Promise<VerifyResult> {
  const secret = envString(env, TELEGRAM_ENV.webhookSecret);
  if (!isConfigured(env) || !secret) return { ok: false, status: 404, reason: "channel not configured" };
  const given = hook.headers.get("x-telegram-bot-api-secret-token");
  if (!given) return { ok: false, status: 401, reason: "missing secret token" };
  return constantTimeEqual(given, secret) ? { ok: true } : { ok: false, status: 401, reason: "bad secret token" };
}

function file(kind: MediaKind, f: unknown): InboundAttachment | undefined {
  if (!isRecord(f)) return undefined;
  const id = nonEmpty(f.file_id);
  if (!id) return undefined;
  return { kind, url: TELEGRAM_FILE_PREFIX + id, filename: nonEmpty(f.file_name), mime_type: nonEmpty(f.mime_type) };
}

/** The media of a message: the largest photo size, or the one document/animation/video/audio. */
function attachmentsOf(m: Record<string, unknown>): InboundAttachment[] | undefined {
  const caption = nonEmpty(m.caption);
  const items: Array<InboundAttachment | undefined> = [];
  const photos = arr(m.photo);
  if (photos.length) items.push(file("image", photos[photos.length - 1]));
  // An animation also arrives as `document` for old clients; take it once, as the video it is.
  if (m.animation) items.push(file("video", m.animation));
  else if (m.document) items.push(file("document", m.document));
  if (m.video) items.push(file("video", m.video));
  if (m.video_note) items.push(file("video", m.video_note));
  if (m.audio) items.push(file("audio", m.audio));
  if (m.voice) items.push(file("audio", m.voice));
  const out = boundAttachments(items);
  if (out && caption) out[0].caption = caption;
  return out;
}

function fromMessage(updateId: string, m: unknown, botId: string): InboundMessage | null {
  if (!isRecord(m) || !isRecord(m.chat)) return null;
  // Messages another bot wrote (including our own echoes in groups) never run a turn.
  if (isRecord(m.from) && m.from.is_bot === true) return null;
  const chat = nonEmpty(m.chat.id);
  if (!chat) return null;
  const text = str(m.text) ?? str(m.caption) ?? "";
  const attachments = attachmentsOf(m);
  const venue = isRecord(m.venue) ? m.venue : undefined;
  const loc = venue && isRecord(venue.location) ? venue.location : isRecord(m.location) ? m.location : undefined;
  const location = loc ? toLocation(loc.latitude, loc.longitude, venue?.title, venue?.address) : undefined;
  if (!text && !attachments && !location) return null; // stickers, contacts, service messages
  const out: InboundMessage = { kind: "message", provider_message_id: updateId, sender: chat, our_identity: botId, text };
  const language = isRecord(m.from) ? nonEmpty(m.from.language_code) : undefined;
  if (language) out.locale_hint = language;
  if (attachments) out.attachments = attachments;
  if (location) out.location = location;
  return out;
}

/**
 * An inline-keyboard tap: its callback `data` is both the text and `params.reply_id`; an answer
 * feedback button's data rates its answer instead (the chat is the sender, as for a message).
 */
function fromCallback(updateId: string, q: unknown, botId: string): InboundMessage | AnswerFeedbackTap | null {
  if (!isRecord(q) || (isRecord(q.from) && q.from.is_bot === true)) return null;
  const data = nonEmpty(q.data);
  const chat = isRecord(q.message) && isRecord(q.message.chat) ? nonEmpty(q.message.chat.id) : undefined;
  if (!data || !chat) return null; // game taps and taps on inline-mode messages have no chat
  const feedback = parseFeedbackReplyId(data);
  if (feedback) return { kind: "feedback", provider_message_id: updateId, sender: chat, our_identity: botId, ...feedback };
  const out: InboundMessage = { kind: "message", provider_message_id: updateId, sender: chat, our_identity: botId, text: data };
  const params = boundParams([["reply_id", data]]);
  if (params) out.params = params;
  return out;
}

function parse(hook: Webhook, env: ChannelEnv): ParsedWebhook {
  const botId = telegramBotId(envString(env, TELEGRAM_ENV.botToken));
  const update = parseJsonBytes(hook.raw);
  const updateId = isRecord(update) ? str(update.update_id) : undefined;
  if (!botId || !isRecord(update) || !updateId) return { events: [], ignored: 1 };
  // edited_message, channel_post, my_chat_member, ... are acknowledged and ignored.
  const msg = update.message
    ? fromMessage(updateId, update.message, botId)
    : update.callback_query
      ? fromCallback(updateId, update.callback_query, botId)
      : null;
  return msg ? { events: [msg], ignored: 0 } : { events: [], ignored: 1 };
}

/** `args.text` is Telegram HTML (planned by src/channels/markup.ts: escaped, well-formed per message). */
async function send(args: SendArgs, deps: SendDeps): Promise<SendResult> {
  return callTelegram("sendMessage", { chat_id: args.to, text: args.text, parse_mode: "HTML" }, deps);
}

/** Calls one Bot API send method (`sendMessage`, `sendPhoto`, …) and classifies the answer. */
export async function callTelegram(method: string, payload: Record<string, unknown>, deps: SendDeps): Promise<SendResult> {
  const token = envString(deps.env, TELEGRAM_ENV.botToken);
  if (!token) return { ok: false, permanent: true, reason: "channel not configured" };
  // The token is the sending identity; `from` (the bot id) is implied by it.
  const url = `${apiBase(deps.env, TELEGRAM_ENV.apiBase, TELEGRAM_DEFAULT_API_BASE)}/bot${token.trim()}/${method}`;
  const sent = await postOnce(deps.fetch, url, { headers: { "content-type": "application/json" }, body: JSON.stringify(payload) }, deps.timeoutMs);
  if (!sent.ok) return sent.result;
  const { status, headers, json } = sent.answer;
  const body = isRecord(json) ? json : {};
  if (httpClass(status) === "ok" && body.ok === true) {
    return { ok: true, provider_message_id: isRecord(body.result) ? (nonEmpty(body.result.message_id) ?? null) : null };
  }
  // Telegram mirrors the HTTP status in `error_code`; a 2xx without `ok: true` is a refusal.
  const code = typeof body.error_code === "number" ? body.error_code : status;
  const permanent = httpClass(code) !== "transient";
  const r = failure(status, permanent, `telegram error ${code}`, headers);
  const after = isRecord(body.parameters) ? body.parameters.retry_after : undefined;
  if (!r.ok && typeof after === "number" && Number.isFinite(after) && after >= 0) r.retry_after_seconds = Math.ceil(after);
  return r;
}

/** The Telegram adapter (decisions §11). */
export const telegramAdapter: ChannelAdapter = {
  name: "telegram",
  capabilities: { media: true, location: true, template: false, interactive: true, form: false, typing: true },
  doors: { inbound: ["POST"] },
  ackStatus: 200,
  isConfigured,
  verify: (hook, env) => verify(hook, env),
  parse,
  markup: { text: "telegram-html", body: "plain" },
  send,
  rich: makeTelegramRich(callTelegram, TELEGRAM_FILE_PREFIX),
  typing: {
    // `sendChatAction`: the status shows for 5 s at most, or until the bot's next message arrives.
    send: (args, deps) => callTelegram("sendChatAction", { chat_id: args.to, action: "typing" }, deps),
    refreshMs: 4_500,
  },
};
