/**
 * The one channel adapter interface (design.md "Channel adapters share one interface").
 *
 * An adapter is a plain object with no state: it verifies a provider's webhook on the raw bytes,
 * normalizes it into channel events, and sends one text chunk. Everything it needs comes in as
 * arguments (the Worker env for its `CHANNEL_*` vars, an injected `fetch`, the clock), so tests
 * construct an env object and a fake fetch instead of patching globals. A fifth channel is one new
 * file exporting a `ChannelAdapter` plus one line in `registry.ts`; see docs/channels.md.
 */

import type { JsonObject } from "../platform/http/bounded-json";
import type { ChannelCapabilities, ChannelEnv, SendDeps, SendResult } from "./channel-types";
import type { InboundAttachment, Location } from "../shared/media";
import type { VisitorProfile } from "../shared/visitor-profile";
import type { RichSender } from "./rich/types";
import type { Markup } from "./markup";

// Declared in the leaf channel-types.ts (rich/ needs them too); re-exported so the adapters keep
// importing their whole interface from here.
export type { ChannelCapabilities, ChannelEnv, SendDeps, SendResult };

/** The built-in channel registry names (also the keys of `max_message_chars`). */
export type ChannelName = "twilio" | "whatsapp" | "telegram" | "slack" | "web";

/** An inbound message from a participant, normalized. */
export interface InboundMessage {
  kind: "message";
  /** The dedupe key together with the channel name (decisions §11 field table). */
  provider_message_id: string;
  /** The participant's address: the thread's `client_address`. */
  sender: string;
  /** Our side of the conversation: routes are looked up by (channel, our_identity). */
  our_identity: string;
  /** The rendered text; `""` for a media-, location- or form-only message. */
  text: string;
  attachments?: InboundAttachment[];
  location?: Location;
  /** Tap enrichment (`reply_id`, `button_payload`, `referral_*`), already within spec §4.2 bounds. */
  params?: Record<string, string>;
  /** An ask-less form submission (WhatsApp Flows `nfm_reply`), a JSON object. */
  form?: JsonObject;
  /**
   * The sender's language as the provider reports it (Telegram's `from.language_code`), unchecked;
   * it seeds a new person's locale at first contact once canonicalized as BCP 47.
   */
  locale_hint?: string;
  /**
   * What the sender told about themselves, as the channel vouches for it: a web visitor's pre-chat
   * answers and the site's verified claims (docs/channels.md, "Pre-chat form"). Reaches the turn and
   * the record, and a multichannel target's person.
   */
  profile?: VisitorProfile;
  /**
   * Who the rate cap counts this message against, when not the sender: a web visitor's network
   * bucket, so that minting fresh visitors does not mint fresh allowances.
   */
  cap_key?: string;
}

/** A delivery receipt for an OUTBOUND message we sent (its provider id is what `send` returned). */
export interface ReceiptUpdate {
  kind: "receipt";
  provider_message_id: string;
  status: "delivered" | "failed";
  /** Our identity the message was sent from, when the provider names it. */
  our_identity?: string;
  /** The provider's error code on a failed receipt (never user text), for the admin `error`. */
  error?: string;
}

/**
 * A tap on an answer's 👍/👎 buttons (src/channels/rich/feedback.ts): rates that answer, runs no
 * turn. `sender` and `our_identity` are the webhook's, as for a message; `message_id` is the
 * record the button named, which the thread checks is the sender's own.
 */
export interface AnswerFeedbackTap {
  kind: "feedback";
  provider_message_id: string;
  sender: string;
  our_identity: string;
  message_id: string;
  rating: "up" | "down";
}

export type ChannelEvent = InboundMessage | ReceiptUpdate | AnswerFeedbackTap;

/** The webhook doors: `/api/channels/{name}/inbound` and `/api/channels/{name}/status`. */
export type WebhookDoor = "inbound" | "status";
export type WebhookMethod = "GET" | "POST";

/**
 * One webhook request as the door read it: the raw body is already read (≤ 1 MiB) because the
 * signature covers the exact bytes, so adapters get the bytes rather than a consumable Request.
 */
export interface Webhook {
  door: WebhookDoor;
  method: WebhookMethod;
  /** The URL the Worker received (path and query matter to Twilio's signature). */
  url: URL;
  headers: Headers;
  raw: Uint8Array;
}

/**
 * The verdict on a webhook's authenticity. 404: the channel is not configured (its doors do not
 * exist); 401: missing or bad signature; 403: a failed WhatsApp GET handshake (what Meta expects).
 * `reason` is a fixed phrase for logs and the error body; it never carries request values.
 */
export type VerifyResult = { ok: true } | { ok: false; status: 401 | 403 | 404; reason: string };

/** What a verified webhook carried. */
export interface ParsedWebhook {
  events: ChannelEvent[];
  /** Updates acknowledged without a turn: bot messages, edits, reactions, unknown shapes. */
  ignored: number;
  /** A protocol answer that replaces the plain ack (WhatsApp GET handshake, Slack url_verification). */
  reply?: Response;
}

/** One outbound chunk: from our identity to the participant's address. */
export interface SendArgs {
  to: string;
  from: string;
  text: string;
}

/** A typing signal: to the participant, from our identity, about their message (`reply_to`: its provider id). */
export interface TypingArgs {
  to: string;
  from: string;
  reply_to: string | null;
}

/** How a channel shows that an answer is being prepared (present exactly when `capabilities.typing`). */
export interface TypingSender {
  /** Sends the signal once. Never throws: a failure is a classified SendResult. */
  send(args: TypingArgs, deps: SendDeps): Promise<SendResult>;
  /** The signal fades after a while on the participant's side: sent again this often while the turn runs (null: once). */
  refreshMs: number | null;
}

export interface ChannelAdapter {
  /** Registry name, door path segment and `max_message_chars` key. */
  readonly name: string;
  readonly capabilities: Readonly<ChannelCapabilities>;
  /** Which doors exist and with which methods; anything else is 404/405 at the door. */
  readonly doors: Readonly<Partial<Record<WebhookDoor, readonly WebhookMethod[]>>>;
  /** Status of the plain acknowledgement of a verified webhook (Twilio 204, the others 200). */
  readonly ackStatus: 200 | 204;
  /** True when every required secret is set (non-blank). Unconfigured channels have no doors. */
  isConfigured(env: ChannelEnv): boolean;
  /** Authenticates the raw request before anything parses it: constant time, fail closed. */
  verify(hook: Webhook, env: ChannelEnv, now: Date): Promise<VerifyResult>;
  /** Normalizes a verified webhook. Never throws: unexpected shapes count as `ignored`. */
  parse(hook: Webhook, env: ChannelEnv): ParsedWebhook;
  /**
   * How text written in markdown (src/shared/markdown.ts) is sent here (src/channels/markup.ts):
   * `text` for the text messages, `body` for the text a rich part carries. Absent: sent as written
   * (the web page renders the markdown itself).
   */
  readonly markup?: { readonly text: Markup; readonly body: Markup };
  /** Sends one chunk, already in the channel's markup. Never throws: every failure is a classified SendResult. */
  send(args: SendArgs, deps: SendDeps): Promise<SendResult>;
  /**
   * Carries an operator message's rich part (spec §4.7) for the capabilities the channel
   * advertises; absent on a channel that sends text only. See src/channels/rich/.
   */
  readonly rich?: RichSender;
  /** The typing signal, on a channel whose capabilities say `typing` (src/conversations/thread/live-turn.ts sends it). */
  readonly typing?: TypingSender;
}
