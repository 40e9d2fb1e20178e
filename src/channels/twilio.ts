/**
 * Twilio Programmable Messaging (SMS, and WhatsApp-through-Twilio numbers alike).
 *
 * Doors: `POST /api/channels/twilio/inbound` (the number's "A message comes in" webhook) and
 * `POST /api/channels/twilio/status` (the status callback). Both are form-encoded and signed with
 * `X-Twilio-Signature` = base64 HMAC-SHA1(auth token, URL + each POST param name+value sorted by
 * name), where URL is the `CHANNEL_TWILIO_PUBLIC_URL` origin plus the request's path and query:
 * Twilio signs the URL it called, which a proxy or `wrangler dev` tunnel would otherwise hide.
 */
import { constantTimeEqual, hmacSha1 } from "../access-control/crypto";
import type { ChannelAdapter, ChannelEnv, ChannelEvent, ParsedWebhook, SendArgs, SendDeps, SendResult, VerifyResult, Webhook } from "./adapter";
import {
  allSet,
  apiBase,
  basicAuth,
  boundAttachments,
  boundParams,
  decodeUtf8,
  envString,
  failure,
  httpClass,
  isRecord,
  kindFromMime,
  nonEmpty,
  postOnce,
  str,
  toLocation,
} from "./common";
import { makeTwilioRich } from "./rich/twilio";

export const TWILIO_ENV = {
  accountSid: "CHANNEL_TWILIO_ACCOUNT_SID",
  authToken: "CHANNEL_TWILIO_AUTH_TOKEN",
  publicUrl: "CHANNEL_TWILIO_PUBLIC_URL",
  apiBase: "CHANNEL_TWILIO_API_BASE",
} as const;

/**
 * The API origin; the adapter appends the versioned path `/2010-04-01/Accounts/{sid}/...`, so a
 * fake provider only has to serve the same path under its own origin.
 */
export const TWILIO_DEFAULT_API_BASE = "https://api.twilio.com";

/** Status callback values that settle a message; every other status is progress and ignored. */
const RECEIPT_STATUS: Readonly<Record<string, "delivered" | "failed">> = {
  delivered: "delivered",
  failed: "failed",
  undelivered: "failed",
};

/** Twilio's documented maximum of media items on one inbound message. */
const MAX_TWILIO_MEDIA = 10;

function publicOrigin(env: ChannelEnv): string | null {
  const raw = envString(env, TWILIO_ENV.publicUrl);
  if (!raw) return null;
  try {
    const u = new URL(raw.trim());
    return u.protocol === "https:" || u.protocol === "http:" ? u.origin : null;
  } catch {
    return null;
  }
}

/** Form params in arrival order; null when the body is not UTF-8. */
function formParams(raw: Uint8Array): Array<[string, string]> | null {
  const text = decodeUtf8(raw);
  return text === null ? null : [...new URLSearchParams(text)];
}

function base64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/**
 * The expected `X-Twilio-Signature` for a URL and form params. Params sort by name (UTF-16 order,
 * which is byte order for Twilio's ASCII names); a repeated name keeps its arrival order.
 */
export async function twilioSignature(authToken: string, url: string, params: ReadonlyArray<readonly [string, string]>): Promise<string> {
  const sorted = [...params].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  let data = url;
  for (const [k, v] of sorted) data += k + v;
  return base64(await hmacSha1(authToken, data));
}

function isConfigured(env: ChannelEnv): boolean {
  return allSet(env, [TWILIO_ENV.accountSid, TWILIO_ENV.authToken]) && publicOrigin(env) !== null;
}

async function verify(hook: Webhook, env: ChannelEnv): Promise<VerifyResult> {
  const origin = publicOrigin(env);
  const token = envString(env, TWILIO_ENV.authToken);
  if (!isConfigured(env) || !origin || !token) return { ok: false, status: 404, reason: "channel not configured" };
  const given = hook.headers.get("x-twilio-signature");
  if (!given) return { ok: false, status: 401, reason: "missing signature" };
  const params = formParams(hook.raw);
  if (!params) return { ok: false, status: 401, reason: "bad signature" };
  const expected = await twilioSignature(token, origin + hook.url.pathname + hook.url.search, params);
  return constantTimeEqual(expected, given.trim()) ? { ok: true } : { ok: false, status: 401, reason: "bad signature" };
}

function parse(hook: Webhook): ParsedWebhook {
  const list = formParams(hook.raw);
  if (!list) return { events: [], ignored: 1 };
  const p = new Map(list);
  const sid = nonEmpty(p.get("MessageSid")) ?? nonEmpty(p.get("SmsSid"));
  if (hook.door === "status") {
    const status = RECEIPT_STATUS[(p.get("MessageStatus") ?? p.get("SmsStatus") ?? "").toLowerCase()];
    if (!sid || !status) return { events: [], ignored: 1 };
    const event: ChannelEvent = { kind: "receipt", provider_message_id: sid, status };
    const from = nonEmpty(p.get("From"));
    if (from) event.our_identity = from;
    const code = nonEmpty(p.get("ErrorCode"));
    if (status === "failed" && code && /^\d{1,10}$/.test(code)) event.error = `twilio error ${code}`;
    return { events: [event], ignored: 0 };
  }
  const sender = nonEmpty(p.get("From"));
  const ours = nonEmpty(p.get("To"));
  if (!sid || !sender || !ours) return { events: [], ignored: 1 };
  const numMedia = Math.min(Math.max(0, Number.parseInt(p.get("NumMedia") ?? "0", 10) || 0), MAX_TWILIO_MEDIA);
  const media = [];
  for (let i = 0; i < numMedia; i++) {
    const url = nonEmpty(p.get(`MediaUrl${i}`));
    const mime = nonEmpty(p.get(`MediaContentType${i}`));
    if (url) media.push({ kind: kindFromMime(mime), url, mime_type: mime });
  }
  const attachments = boundAttachments(media);
  // Twilio's WhatsApp senders report shared locations and template quick-reply taps this way.
  const location = toLocation(p.get("Latitude"), p.get("Longitude"), p.get("Label"), p.get("Address"));
  const params = boundParams([["button_payload", nonEmpty(p.get("ButtonPayload"))]]);
  const text = p.get("Body") ?? "";
  if (!text && !attachments && !location && !params) return { events: [], ignored: 1 };
  const message: ChannelEvent = { kind: "message", provider_message_id: sid, sender, our_identity: ours, text };
  if (attachments) message.attachments = attachments;
  if (location) message.location = location;
  if (params) message.params = params;
  return { events: [message], ignored: 0 };
}

async function send(args: SendArgs, deps: SendDeps): Promise<SendResult> {
  return postTwilioMessage(new URLSearchParams({ To: args.to, From: args.from, Body: args.text }), deps);
}

/** POSTs one Messages.json create (text chunk or media message) and classifies the answer. */
export async function postTwilioMessage(form: URLSearchParams, deps: SendDeps): Promise<SendResult> {
  const sid = envString(deps.env, TWILIO_ENV.accountSid);
  const token = envString(deps.env, TWILIO_ENV.authToken);
  if (!sid || !token) return { ok: false, permanent: true, reason: "channel not configured" };
  const base = apiBase(deps.env, TWILIO_ENV.apiBase, TWILIO_DEFAULT_API_BASE);
  const url = `${base}/2010-04-01/Accounts/${encodeURIComponent(sid)}/Messages.json`;
  const body = form.toString();
  const sent = await postOnce(
    deps.fetch,
    url,
    { headers: { authorization: basicAuth(sid, token), "content-type": "application/x-www-form-urlencoded", accept: "application/json" }, body },
    deps.timeoutMs,
  );
  if (!sent.ok) return sent.result;
  const { status, headers, json } = sent.answer;
  const cls = httpClass(status);
  if (cls === "ok") {
    // The HTTP status is Twilio's acceptance signal; an answer without a sid is still accepted.
    return { ok: true, provider_message_id: isRecord(json) ? (nonEmpty(json.sid) ?? null) : null };
  }
  const code = isRecord(json) ? str(json.code) : undefined;
  return failure(status, cls === "permanent", code ? `twilio error ${code}` : `http ${status}`, headers);
}

/** The Twilio SMS adapter (decisions §11). */
export const twilioAdapter: ChannelAdapter = {
  name: "twilio",
  // SMS has no typing signal.
  capabilities: { media: true, location: false, template: false, interactive: false, form: false, typing: false },
  doors: { inbound: ["POST"], status: ["POST"] },
  ackStatus: 204,
  isConfigured,
  verify: (hook, env) => verify(hook, env),
  parse: (hook) => parse(hook),
  markup: { text: "plain", body: "plain" },
  send,
  rich: makeTwilioRich(postTwilioMessage),
};
