/**
 * The inbound door's channel-independent half: door and method check, signature verification on
 * the raw bytes, then normalization. The door handler (bridge routing) only has to act on the
 * outcome: refuse, answer the protocol reply, or route the events and answer `webhookAck`.
 */
import type { ChannelAdapter, ChannelEnv, ChannelEvent, Webhook, WebhookDoor, WebhookMethod } from "./adapter";
import { adapterFor } from "./registry";

export type WebhookOutcome =
  /** Runs no turn. 404 unknown/unconfigured channel or door; 405 wrong method; 401/403 verify. */
  | { kind: "refused"; status: 401 | 403 | 404 | 405; error: string; allow?: string }
  /** A verified protocol request (WhatsApp GET handshake, Slack url_verification): answer as is. */
  | { kind: "reply"; response: Response }
  /** A verified webhook: route `events`, then answer `webhookAck(adapter)` (or 5xx on a store fault). */
  | { kind: "events"; adapter: ChannelAdapter; events: ChannelEvent[]; ignored: number };

/** Builds the adapter's view of a request whose body the door already read. */
export function webhookOf(door: WebhookDoor, request: Request, raw: Uint8Array): Webhook {
  return { door, method: request.method.toUpperCase() as WebhookMethod, url: new URL(request.url), headers: request.headers, raw };
}

/**
 * Verifies then parses one webhook for `channel`. Verification always precedes parsing, and a
 * channel whose secrets are unset answers 404 as if its doors did not exist (fail closed).
 */
export async function receiveWebhook(channel: string, hook: Webhook, env: ChannelEnv, now: Date): Promise<WebhookOutcome> {
  const adapter = adapterFor(channel);
  const methods = adapter?.doors[hook.door];
  if (!adapter || !methods || !adapter.isConfigured(env)) return { kind: "refused", status: 404, error: "not found" };
  if (!methods.includes(hook.method)) return { kind: "refused", status: 405, error: "method not allowed", allow: methods.join(", ") };
  const verdict = await adapter.verify(hook, env, now);
  if (!verdict.ok) return { kind: "refused", status: verdict.status, error: verdict.reason };
  let parsed;
  try {
    parsed = adapter.parse(hook, env);
  } catch (err) {
    // Adapters are written not to throw; if one does, a verified webhook is still acknowledged
    // (a provider would only redeliver the same bytes) and the fault is logged, never echoed.
    console.error(`channel ${adapter.name}: parse failed`, err);
    parsed = { events: [], ignored: 1 };
  }
  if (parsed.reply) return { kind: "reply", response: parsed.reply };
  return { kind: "events", adapter, events: parsed.events, ignored: parsed.ignored };
}

/** The plain acknowledgement of a verified webhook: Twilio 204 (no TwiML reply), others 200. */
export function webhookAck(adapter: ChannelAdapter): Response {
  return adapter.ackStatus === 204 ? new Response(null, { status: 204 }) : Response.json({ data: { ok: true } }, { status: 200 });
}
