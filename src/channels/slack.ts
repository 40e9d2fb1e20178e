/**
 * Slack Events API (and button/select taps from Interactivity pointed at the same door).
 *
 * One door, `POST /api/channels/slack/inbound`, used as the app's Event Subscriptions Request URL
 * (and optionally its Interactivity Request URL). Every request is signed with
 * `X-Slack-Signature: v0=<hex HMAC-SHA256(signing secret, "v0:{X-Slack-Request-Timestamp}:{raw
 * body}")>`; a timestamp more than 300 s away from now is refused as a replay. The sender is the
 * conversation (`event.channel`), so a channel or DM is one thread; our identity is the bot user.
 */
import { constantTimeEqual, hmacSha256, toHex } from "../access-control/crypto";
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
import type { InboundAttachment } from "../shared/media";
import {
  allSet,
  apiBase,
  arr,
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
} from "./common";
import { makeSlackRich } from "./rich/slack";
import { parseFeedbackReplyId } from "./rich/feedback";

export const SLACK_ENV = {
  signingSecret: "CHANNEL_SLACK_SIGNING_SECRET",
  botToken: "CHANNEL_SLACK_BOT_TOKEN",
  botUserId: "CHANNEL_SLACK_BOT_USER_ID",
  apiBase: "CHANNEL_SLACK_API_BASE",
} as const;

export const SLACK_DEFAULT_API_BASE = "https://slack.com/api";

/** Replay window of Slack's signing scheme. */
export const SLACK_MAX_SKEW_SECONDS = 300;

/** Web API errors that are Slack's side or a rate limit: retry later. Every other error is a refusal. */
const TRANSIENT_SLACK_ERRORS = new Set(["ratelimited", "rate_limited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"]);

/** Message subtypes that are still a person writing: a plain message with files attached. */
const PERSON_SUBTYPES = new Set(["file_share"]);

const REQUIRED = [SLACK_ENV.signingSecret, SLACK_ENV.botToken, SLACK_ENV.botUserId];

function isConfigured(env: ChannelEnv): boolean {
  return allSet(env, REQUIRED);
}

/** The expected `X-Slack-Signature` for a timestamp header value and raw body. */
export async function slackSignature(signingSecret: string, timestamp: string, raw: Uint8Array): Promise<string> {
  const prefix = new TextEncoder().encode(`v0:${timestamp}:`);
  const data = new Uint8Array(prefix.byteLength + raw.byteLength);
  data.set(prefix, 0);
  data.set(raw, prefix.byteLength);
  return `v0=${toHex(await hmacSha256(signingSecret, data))}`;
}

async function verify(hook: Webhook, env: ChannelEnv, now: Date): Promise<VerifyResult> {
  const secret = envString(env, SLACK_ENV.signingSecret);
  if (!isConfigured(env) || !secret) return { ok: false, status: 404, reason: "channel not configured" };
  const given = hook.headers.get("x-slack-signature");
  const ts = hook.headers.get("x-slack-request-timestamp")?.trim();
  if (!given || !ts) return { ok: false, status: 401, reason: "missing signature" };
  if (!/^\d{1,12}$/.test(ts) || Math.abs(now.getTime() / 1000 - Number(ts)) > SLACK_MAX_SKEW_SECONDS) {
    return { ok: false, status: 401, reason: "stale or malformed timestamp" };
  }
  const expected = await slackSignature(secret, ts, hook.raw);
  return constantTimeEqual(expected, given.trim().toLowerCase()) ? { ok: true } : { ok: false, status: 401, reason: "bad signature" };
}

/** Slack escapes exactly these three in message text; the target sees what the person typed. */
function unescapeSlack(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function filesOf(files: unknown): InboundAttachment[] | undefined {
  return boundAttachments(
    arr(files).map((f) => {
      if (!isRecord(f)) return undefined;
      const url = nonEmpty(f.url_private); // absent on tombstoned or hidden files
      if (!url) return undefined;
      const mime = nonEmpty(f.mimetype);
      return { kind: kindFromMime(mime), url, filename: nonEmpty(f.name), mime_type: mime };
    }),
  );
}

function fromEvent(body: Record<string, unknown>, botUserId: string): InboundMessage | null {
  const e = body.event;
  const eventId = nonEmpty(body.event_id);
  if (!isRecord(e) || !eventId || e.type !== "message") return null;
  // Bot messages (ours included), edits, deletions, joins and other subtypes run no turn.
  if (e.bot_id !== undefined || e.hidden === true) return null;
  if (e.subtype !== undefined && !PERSON_SUBTYPES.has(str(e.subtype) ?? "")) return null;
  const user = nonEmpty(e.user);
  const channel = nonEmpty(e.channel);
  if (!user || !channel || user === botUserId) return null;
  const text = unescapeSlack(str(e.text) ?? "");
  const attachments = filesOf(e.files);
  if (!text && !attachments) return null;
  const out: InboundMessage = { kind: "message", provider_message_id: eventId, sender: channel, our_identity: botUserId, text };
  if (attachments) out.attachments = attachments;
  return out;
}

/**
 * A `block_actions` payload's first button or static-select tap: the label is the text, the
 * author-set `value` (else the `action_id`) is `params.reply_id`. Interactivity payloads carry no
 * event id; the `trigger_id` is unique per interaction and Slack does not redeliver them. An
 * answer feedback button's value rates its answer instead (the conversation is the sender).
 */
function fromBlockActions(p: Record<string, unknown>, botUserId: string): InboundMessage | AnswerFeedbackTap | null {
  const user = isRecord(p.user) ? nonEmpty(p.user.id) : undefined;
  const channel = isRecord(p.channel) ? nonEmpty(p.channel.id) : undefined;
  const trigger = nonEmpty(p.trigger_id);
  const action = arr(p.actions)[0];
  if (!user || user === botUserId || !channel || !trigger || !isRecord(action)) return null;
  let label: string | undefined;
  let id: string | undefined;
  if (action.type === "button") {
    label = isRecord(action.text) ? nonEmpty(action.text.text) : undefined;
    id = nonEmpty(action.value) ?? nonEmpty(action.action_id);
  } else if (action.type === "static_select" && isRecord(action.selected_option)) {
    const o = action.selected_option;
    label = isRecord(o.text) ? nonEmpty(o.text.text) : undefined;
    id = nonEmpty(o.value);
  }
  if (!label && !id) return null;
  const feedback = action.type === "button" ? parseFeedbackReplyId(id) : null;
  if (feedback) return { kind: "feedback", provider_message_id: trigger, sender: channel, our_identity: botUserId, ...feedback };
  const out: InboundMessage = { kind: "message", provider_message_id: trigger, sender: channel, our_identity: botUserId, text: label ?? id ?? "" };
  const params = boundParams([["reply_id", id]]);
  if (params) out.params = params;
  return out;
}

function parse(hook: Webhook, env: ChannelEnv): ParsedWebhook {
  const botUserId = envString(env, SLACK_ENV.botUserId);
  const text = decodeUtf8(hook.raw);
  if (!botUserId || text === null) return { events: [], ignored: 1 };
  let body: unknown;
  try {
    // Events arrive as JSON; interactivity as a form with one `payload` JSON field.
    body = text.trimStart().startsWith("{") ? JSON.parse(text) : JSON.parse(new URLSearchParams(text).get("payload") ?? "");
  } catch {
    return { events: [], ignored: 1 };
  }
  if (!isRecord(body)) return { events: [], ignored: 1 };
  if (body.type === "url_verification") {
    const challenge = str(body.challenge) ?? "";
    return { events: [], ignored: 0, reply: Response.json({ challenge }) };
  }
  let msg: ChannelEvent | null = null;
  if (body.type === "event_callback") msg = fromEvent(body, botUserId);
  else if (body.type === "block_actions") msg = fromBlockActions(body, botUserId);
  return msg ? { events: [msg], ignored: 0 } : { events: [], ignored: 1 };
}

async function send(args: SendArgs, deps: SendDeps): Promise<SendResult> {
  return postSlackMessage({ channel: args.to, text: args.text }, deps);
}

/** POSTs one `chat.postMessage` (text, or blocks with a text fallback) and classifies the answer. */
export async function postSlackMessage(message: Record<string, unknown>, deps: SendDeps): Promise<SendResult> {
  const token = envString(deps.env, SLACK_ENV.botToken);
  if (!token) return { ok: false, permanent: true, reason: "channel not configured" };
  // The bot token is the sending identity; `from` (the bot user id) is implied by it.
  const sent = await postOnce(
    deps.fetch,
    `${apiBase(deps.env, SLACK_ENV.apiBase, SLACK_DEFAULT_API_BASE)}/chat.postMessage`,
    {
      headers: { authorization: `Bearer ${token.trim()}`, "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify(message),
    },
    deps.timeoutMs,
  );
  if (!sent.ok) return sent.result;
  const { status, headers, json } = sent.answer;
  const body = isRecord(json) ? json : {};
  const cls = httpClass(status);
  if (cls === "ok" && body.ok === true) return { ok: true, provider_message_id: nonEmpty(body.ts) ?? null };
  if (cls !== "ok") return failure(status, cls === "permanent", `http ${status}`, headers);
  // HTTP 200 with `ok: false`: Slack's error code decides.
  const error = nonEmpty(body.error) ?? "unexpected response";
  const safe = /^[a-z0-9_]{1,64}$/.test(error) ? error : "unexpected response";
  return failure(status, !TRANSIENT_SLACK_ERRORS.has(safe), `slack error ${safe}`, headers);
}

/** The Slack adapter (decisions §11). */
export const slackAdapter: ChannelAdapter = {
  name: "slack",
  // No typing signal: the Web API offers a bot none outside the legacy RTM socket.
  capabilities: { media: true, location: false, template: false, interactive: true, form: false, typing: false },
  doors: { inbound: ["POST"] },
  ackStatus: 200,
  isConfigured,
  verify,
  parse,
  markup: { text: "slack-mrkdwn", body: "slack-mrkdwn" },
  send,
  rich: makeSlackRich(postSlackMessage),
};
