/**
 * WhatsApp Cloud API (Meta Graph).
 *
 * One door, `/api/channels/whatsapp/inbound`: `GET` is the subscription handshake
 * (`hub.mode=subscribe`, `hub.verify_token` must equal `CHANNEL_WHATSAPP_VERIFY_TOKEN`, the
 * answer echoes `hub.challenge` as text/plain; anything else is 403), `POST` carries messages and
 * `statuses[]` receipts signed with `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret,
 * raw body)>`.
 */
import { constantTimeEqual, hmacSha256, toHex } from "../access-control/crypto";
import type { JsonObject } from "../platform/http/bounded-json";
import type {
  AnswerFeedbackTap,
  ChannelAdapter,
  ChannelEnv,
  ChannelEvent,
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
  allSet,
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
import { makeWhatsAppRich } from "./rich/whatsapp";
import { parseFeedbackReplyId } from "./rich/feedback";

export const WHATSAPP_ENV = {
  appSecret: "CHANNEL_WHATSAPP_APP_SECRET",
  accessToken: "CHANNEL_WHATSAPP_ACCESS_TOKEN",
  verifyToken: "CHANNEL_WHATSAPP_VERIFY_TOKEN",
  apiBase: "CHANNEL_WHATSAPP_API_BASE",
} as const;

/** Graph API base including the version segment; sends go to `{base}/{phone_number_id}/messages`. */
export const WHATSAPP_DEFAULT_API_BASE = "https://graph.facebook.com/v21.0";

/** Prefix of an attachment url that is a Graph media id (resolve with `GET {base}/{media id}`). */
export const WHATSAPP_MEDIA_PREFIX = "whatsapp-media:";

/**
 * Graph error codes that mean "try again later" (rate limits, temporary unavailability); every
 * other error on a 4xx answer is a refusal of this message.
 */
const TRANSIENT_GRAPH_CODES = new Set([1, 2, 4, 17, 32, 613, 80007, 130429, 131000, 131016, 131056]);

const REQUIRED = [WHATSAPP_ENV.appSecret, WHATSAPP_ENV.accessToken, WHATSAPP_ENV.verifyToken];

function isConfigured(env: ChannelEnv): boolean {
  return allSet(env, REQUIRED);
}

async function verify(hook: Webhook, env: ChannelEnv): Promise<VerifyResult> {
  const verifyToken = envString(env, WHATSAPP_ENV.verifyToken);
  const appSecret = envString(env, WHATSAPP_ENV.appSecret);
  if (!isConfigured(env) || !verifyToken || !appSecret) return { ok: false, status: 404, reason: "channel not configured" };
  if (hook.method === "GET") {
    const q = hook.url.searchParams;
    const token = q.get("hub.verify_token");
    const good = q.get("hub.mode") === "subscribe" && token !== null && constantTimeEqual(token, verifyToken) && q.get("hub.challenge") !== null;
    return good ? { ok: true } : { ok: false, status: 403, reason: "handshake refused" };
  }
  const given = hook.headers.get("x-hub-signature-256");
  if (!given) return { ok: false, status: 401, reason: "missing signature" };
  const expected = `sha256=${toHex(await hmacSha256(appSecret, hook.raw))}`;
  return constantTimeEqual(expected, given.trim().toLowerCase()) ? { ok: true } : { ok: false, status: 401, reason: "bad signature" };
}

/** A media object of a message (`image`, `video`, `audio`, `document`, `sticker`) as an attachment. */
function media(kind: MediaKind, m: unknown): InboundAttachment | undefined {
  if (!isRecord(m)) return undefined;
  const id = nonEmpty(m.id);
  if (!id) return undefined;
  return {
    kind,
    url: WHATSAPP_MEDIA_PREFIX + id,
    caption: nonEmpty(m.caption),
    filename: nonEmpty(m.filename),
    mime_type: nonEmpty(m.mime_type),
  };
}

const MEDIA_TYPES: Readonly<Record<string, MediaKind>> = {
  image: "image",
  sticker: "image",
  video: "video",
  audio: "audio",
  document: "document",
};

/** The click-to-WhatsApp ad referral, as `referral_*` params (spec §4.2). */
function referralParams(r: unknown): Array<[string, string | undefined]> {
  if (!isRecord(r)) return [];
  return ["source_url", "source_id", "source_type", "headline", "body", "ctwa_clid"].map((k) => [`referral_${k}`, nonEmpty(r[k])]);
}

/**
 * One `messages[]` entry, or null when it is not a participant message we carry. A reply button of
 * an answer's feedback rates that answer instead (the sender's number is the sender, as for a message).
 */
function message(m: unknown, ourIdentity: string): InboundMessage | AnswerFeedbackTap | null {
  if (!isRecord(m)) return null;
  const id = nonEmpty(m.id);
  const from = nonEmpty(m.from);
  const type = str(m.type) ?? "";
  if (!id || !from) return null;
  let text = "";
  let attachments: InboundAttachment[] | undefined;
  let location;
  let form: JsonObject | undefined;
  const tap: Array<[string, string | undefined]> = [];
  if (type === "text") {
    text = isRecord(m.text) ? (str(m.text.body) ?? "") : "";
  } else if (type in MEDIA_TYPES) {
    const a = media(MEDIA_TYPES[type], m[type]);
    attachments = boundAttachments([a]);
    text = a?.caption ?? "";
  } else if (type === "location" && isRecord(m.location)) {
    const l = m.location;
    location = toLocation(l.latitude, l.longitude, l.name, l.address);
  } else if (type === "interactive" && isRecord(m.interactive)) {
    const i = m.interactive;
    const reply = i.type === "button_reply" ? i.button_reply : i.type === "list_reply" ? i.list_reply : undefined;
    const feedback = i.type === "button_reply" && isRecord(reply) ? parseFeedbackReplyId(nonEmpty(reply.id)) : null;
    if (feedback) return { kind: "feedback", provider_message_id: id, sender: from, our_identity: ourIdentity, ...feedback };
    if (isRecord(reply)) {
      text = str(reply.title) ?? "";
      tap.push(["reply_id", nonEmpty(reply.id)]);
    } else if (i.type === "nfm_reply" && isRecord(i.nfm_reply)) {
      // A WhatsApp Flow submission: the ask-less form answer of spec §4.7 `schema`.
      try {
        const parsed: unknown = JSON.parse(str(i.nfm_reply.response_json) ?? "");
        // JSON.parse yields JSON only: an object from it is a JSON object.
        if (isRecord(parsed)) form = parsed as JsonObject;
      } catch {
        form = undefined;
      }
      text = str(i.nfm_reply.body) ?? "";
    }
  } else if (type === "button" && isRecord(m.button)) {
    // A template quick-reply tap.
    text = str(m.button.text) ?? "";
    tap.push(["button_payload", nonEmpty(m.button.payload)]);
  }
  const params = boundParams([...tap, ...referralParams(m.referral)]);
  // Reactions, contacts, orders, system and unsupported messages carry nothing we route.
  if (!text && !attachments && !location && !form && !tap.some(([, v]) => v)) return null;
  const out: InboundMessage = { kind: "message", provider_message_id: id, sender: from, our_identity: ourIdentity, text };
  if (attachments) out.attachments = attachments;
  if (location) out.location = location;
  if (params) out.params = params;
  if (form) out.form = form;
  return out;
}

function receipt(s: unknown, ourIdentity: string | undefined): ChannelEvent | null {
  if (!isRecord(s)) return null;
  const id = nonEmpty(s.id);
  const status = s.status === "delivered" ? "delivered" : s.status === "failed" ? "failed" : null;
  if (!id || !status) return null;
  const r: ChannelEvent = { kind: "receipt", provider_message_id: id, status };
  if (ourIdentity) r.our_identity = ourIdentity;
  const code = isRecord(arr(s.errors)[0]) ? str((arr(s.errors)[0] as Record<string, unknown>).code) : undefined;
  if (status === "failed" && code && /^\d{1,10}$/.test(code)) r.error = `whatsapp error ${code}`;
  return r;
}

function parse(hook: Webhook): ParsedWebhook {
  if (hook.method === "GET") {
    const challenge = hook.url.searchParams.get("hub.challenge") ?? "";
    return { events: [], ignored: 0, reply: new Response(challenge, { status: 200, headers: { "content-type": "text/plain; charset=utf-8" } }) };
  }
  const body = parseJsonBytes(hook.raw);
  if (!isRecord(body) || !Array.isArray(body.entry)) return { events: [], ignored: 1 };
  const events: ChannelEvent[] = [];
  let ignored = 0;
  for (const entry of body.entry) {
    const changes = isRecord(entry) ? arr(entry.changes) : [];
    if (!changes.length) ignored += 1;
    for (const change of changes) {
      const value = isRecord(change) && change.field === "messages" && isRecord(change.value) ? change.value : null;
      if (!value) {
        ignored += 1;
        continue;
      }
      const ours = isRecord(value.metadata) ? nonEmpty(value.metadata.phone_number_id) : undefined;
      for (const m of arr(value.messages)) {
        const msg = ours ? message(m, ours) : null;
        if (msg) events.push(msg);
        else ignored += 1;
      }
      for (const s of arr(value.statuses)) {
        const r = receipt(s, ours);
        if (r) events.push(r);
        else ignored += 1;
      }
    }
  }
  return { events, ignored };
}

async function send(args: SendArgs, deps: SendDeps): Promise<SendResult> {
  return postWhatsAppMessage(args.from, { to: args.to, type: "text", text: { body: args.text } }, deps);
}

/** POSTs one Graph `/{phone_number_id}/messages` (any message type) and classifies the answer. */
export async function postWhatsAppMessage(from: string, message: Record<string, unknown>, deps: SendDeps): Promise<SendResult> {
  const token = envString(deps.env, WHATSAPP_ENV.accessToken);
  if (!token) return { ok: false, permanent: true, reason: "channel not configured" };
  const url = `${apiBase(deps.env, WHATSAPP_ENV.apiBase, WHATSAPP_DEFAULT_API_BASE)}/${encodeURIComponent(from)}/messages`;
  const body = JSON.stringify({ messaging_product: "whatsapp", ...message });
  const sent = await postOnce(deps.fetch, url, { headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body }, deps.timeoutMs);
  if (!sent.ok) return sent.result;
  const { status, headers, json } = sent.answer;
  const cls = httpClass(status);
  if (cls === "ok") {
    const first = isRecord(json) ? arr(json.messages)[0] : undefined;
    return { ok: true, provider_message_id: isRecord(first) ? (nonEmpty(first.id) ?? null) : null };
  }
  const err = isRecord(json) && isRecord(json.error) ? json.error : undefined;
  const code = err && typeof err.code === "number" ? err.code : undefined;
  const permanent = cls === "permanent" && !(code !== undefined && TRANSIENT_GRAPH_CODES.has(code));
  return failure(status, permanent, code !== undefined ? `whatsapp error ${code}` : `http ${status}`, headers);
}

/** The WhatsApp Cloud adapter (decisions §11). */
export const whatsappAdapter: ChannelAdapter = {
  name: "whatsapp",
  capabilities: { media: true, location: true, template: true, interactive: true, form: true, typing: true },
  doors: { inbound: ["GET", "POST"] },
  ackStatus: 200,
  isConfigured,
  verify: (hook, env) => verify(hook, env),
  parse: (hook) => parse(hook),
  markup: { text: "whatsapp", body: "whatsapp" },
  send,
  rich: makeWhatsAppRich(postWhatsAppMessage, WHATSAPP_MEDIA_PREFIX),
  typing: {
    // Marks the customer's message read and shows the typing indicator in one call (Cloud API
    // "typing indicators"); it fades after 25 s or with the answer, so it is sent once.
    send: async (args, deps) => {
      if (!args.reply_to) return { ok: false, permanent: true, reason: "no inbound message to mark read" };
      return postWhatsAppMessage(args.from, { status: "read", message_id: args.reply_to, typing_indicator: { type: "text" } }, deps);
    },
    refreshMs: null,
  },
};
