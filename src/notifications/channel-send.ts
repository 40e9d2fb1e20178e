/**
 * A notification's channel send (spec §4.9; platform-facts A1 steps 6 and 9): one attempt, no
 * retry, through the same adapters, planner and rich senders as a thread's delivery machine
 * (src/conversations/thread/delivery.ts): `planOutbound` splits the message into chunks by the channel's
 * `max_message_chars` and appends the rich part's provider requests; each step goes out with
 * `sendOutboundStep`, bounded by `delivery_send_timeout_seconds`.
 *
 * `prepareChannelSend` decides everything that can be refused before a byte leaves, so a refused
 * send writes nothing and sends nothing:
 *   unknown or unconfigured channel → 400; a capability the channel lacks → 501 (never
 *   downgraded); a part the channel cannot express, or a message needing more than
 *   `max_outbound_chunks` provider messages → 400; no recipient → 400; no sending identity → 501.
 * `deliverChannelSend` then sends the steps in order and stops at the first failure: a transient
 * one is 503 (with `retry_after` when the provider named one), a permanent one 502.
 *
 * Addresses (a notification has no route): the recipient is the body's `recipient`, else the
 * channel's `NOTIFICATIONS_RECIPIENT_<CHANNEL>`; the sending identity (a route's `our_identity`)
 * is `NOTIFICATIONS_FROM_<CHANNEL>`, else the identity the channel's own config names (Telegram's
 * bot id, Slack's bot user id: those providers send as the token's bot anyway).
 */
import type { ChannelAdapter, SendDeps } from "../channels/adapter";
import { ChannelConfigError, maxCharsFor } from "../channels/chunking";
import { envString } from "../channels/common";
import { adapterFor } from "../channels/registry";
import { type OutboundStep, planOutbound, sendOutboundStep } from "../channels/rich/outbound";
import type { RichPart } from "../channels/rich/types";
import { SLACK_ENV } from "../channels/slack";
import { TELEGRAM_ENV, telegramBotId } from "../channels/telegram";
import type { Env } from "../platform/env";
import { type HttpError, badRequest, serverError } from "../platform/http/errors";
import { edgeFetch } from "../platform/net/edge-fetch";
import type { Settings } from "../platform/settings/settings";

/** A send that passed every check, ready to go out. */
export interface PreparedSend {
  adapter: ChannelAdapter;
  steps: OutboundStep[];
  to: string;
  from: string;
}

/** The identity a channel's own config names, for channels whose token implies the sender. */
export function channelOwnIdentity(channel: string, env: Env): string | undefined {
  if (channel === "telegram") return telegramBotId(envString(env, TELEGRAM_ENV.botToken)) ?? undefined;
  if (channel === "slack") return envString(env, SLACK_ENV.botUserId)?.trim();
  return undefined;
}

/** 501 for what the channel cannot carry: a contract refusal, so it carries a stable code. */
function capabilityRefusal(message: string): HttpError {
  return serverError("channel-capability-not-configured", message);
}

/** Every refusal that needs the channel, decided before anything is sent or written. */
export function prepareChannelSend(
  env: Env,
  settings: Settings,
  channel: string,
  message: string,
  part: RichPart | null,
  recipient: string | undefined,
): PreparedSend {
  const adapter = adapterFor(channel);
  // The name is not echoed: it is caller input.
  if (!adapter) throw badRequest("invalid body: channel: unknown channel");
  if (!adapter.isConfigured(env)) throw badRequest(`invalid body: channel: channel ${adapter.name} is not configured`);
  let maxChars: number;
  try {
    maxChars = maxCharsFor(adapter.name, settings.conversations);
  } catch (err) {
    // Spec §7: a channel missing from max_message_chars is a loud configuration error at send.
    if (err instanceof ChannelConfigError) {
      throw serverError("invalid-configuration", err.message, { reason: `configuration error: ${err.message}` });
    }
    throw err;
  }
  const c = settings.conversations;
  const plan = planOutbound(adapter, message, part, maxChars, c.maxOutboundChunks);
  if (!plan.ok) {
    if (plan.kind === "capability") throw capabilityRefusal(plan.error);
    throw badRequest(`invalid body: ${plan.error}`);
  }
  if (plan.tooLong) throw badRequest(`invalid body: message: needs more than max_outbound_chunks (${c.maxOutboundChunks}) messages on channel ${adapter.name}`);
  const n = settings.notifications;
  const to = recipient ?? (Object.hasOwn(n.defaultRecipients, adapter.name) ? n.defaultRecipients[adapter.name] : undefined);
  if (to === undefined)
    throw badRequest(`invalid body: recipient: is required on channel ${adapter.name} (or set NOTIFICATIONS_RECIPIENT_${adapter.name.toUpperCase()})`);
  const from = (Object.hasOwn(n.senders, adapter.name) ? n.senders[adapter.name] : undefined) ?? channelOwnIdentity(adapter.name, env);
  if (from === undefined) {
    const setting = `NOTIFICATIONS_FROM_${adapter.name.toUpperCase()}`;
    throw serverError("notification-sender-not-configured", `channel ${adapter.name} has no identity to send notifications from (set ${setting})`);
  }
  return { adapter, steps: plan.steps, to, from };
}

/**
 * Where a send to a web visitor lands (their transcript). The door passes the web chat's sink, so
 * this area does not reach up into the web chat and the threads it writes to.
 */
export type WebTranscriptSink = (env: Env, identity: string, visitor: string) => NonNullable<SendDeps["transcript"]>;

/**
 * Sends the prepared steps once, in order. The first failure ends the send: steps accepted before
 * it stay delivered (a provider message cannot be taken back), and the caller gets the failure.
 */
export async function deliverChannelSend(send: PreparedSend, env: Env, settings: Settings, web: WebTranscriptSink): Promise<void> {
  const deps = {
    fetch: edgeFetch,
    env,
    timeoutMs: settings.conversations.deliverySendTimeoutSeconds * 1000,
    // A web visitor has no provider: the send lands in their transcript.
    ...(send.adapter.name === "web" ? { transcript: web(env, send.from, send.to) } : {}),
  };
  for (const step of send.steps) {
    const r = await sendOutboundStep(send.adapter, step, { to: send.to, from: send.from }, deps);
    if (r.ok) continue;
    // `reason` is a provider code or a fixed phrase (adapters never put user text or secrets in it).
    if (r.permanent) throw serverError("channel_send_refused", `channel ${send.adapter.name} refused the notification (${r.reason})`);
    const after = r.retry_after_seconds;
    throw serverError("channel_send_unavailable", `channel ${send.adapter.name} could not take the notification now (${r.reason}); try again later`, {
      ...(after !== undefined ? { extra: { retry_after: after }, retryAfterSeconds: after } : {}),
    });
  }
}
