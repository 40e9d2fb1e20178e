/**
 * The notifications doors (spec §4.9, §2.8; platform-facts A1): a one-way send to a
 * human through a channel and/or the internal sink, and the feed read. Tagged `notifications`.
 *
 * The interactions store gate is applied by hand, where the spec needs the sink: a sink send (no
 * channel) and a channel send with an audience answer 501 `interactions-not-configured` without
 * it, before anything is sent; a channel send without audience does not touch the sink; and the
 * feed read answers an honest empty list. See docs/notifications.md.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import { holderOf, threadPrincipal } from "../access-control/identity";
import type { Principal } from "../access-control/principal";
import { REPLAYED_HEADER, unlessRefused } from "../platform/http/idempotency";
import type { AppEnv } from "../platform/http/app-env";
import { badRequest, forbidden } from "../platform/http/errors";
import { addRoute, storeRefusal } from "../platform/http/route";
import { clampAudience, feedOfReader } from "./audience";
import { deliverChannelSend, prepareChannelSend } from "./channel-send";
import { webNotificationSink } from "../web-chat/notify";
import { richPartOf } from "../channels/rich/types";
import { mintNotification } from "./record";
import { NotificationFeedAnswer, NotificationSendBody } from "./schemas";
import { readFeed, recordNotification } from "./sink";
import { notificationFeedStub } from "./rpc";
import { sendKeysObject } from "./send-keys";

export const notificationsRouter = new Hono<AppEnv>();

const SINK_ANSWER = "notification recorded to the internal sink";

addRoute(
  notificationsRouter,
  {
    method: "post",
    path: "/api/notifications",
    summary: "Send a notification to a human (channel and/or internal feed)",
    description:
      "One-way, fire-and-forget, one attempt with no retry. Without `channel` the notification is recorded to the internal sink (the shared feed, and the `audience` identity's own feed when set). With `channel` it is sent through that channel to `recipient` (else the channel's `NOTIFICATIONS_RECIPIENT_<CHANNEL>`), and also recorded when `audience` is set. " +
      "Processing order: `sender_identity` set → 400; message and composition rules → 400; a restricted caller (owned key) may address only itself (omitted audience becomes its own user id, another id → 403); unknown or unconfigured channel → 400; a capability the channel lacks → 501 (never downgraded), all before anything is sent or written. " +
      "With an `Idempotency-Key` (docs/api-notes.md), a retry of the same request by the same key answers the first answer (`Idempotent-Replayed: true`) and sends nothing, for inbound_dedupe_ttl_seconds; the key on another request is 422, while its first request is still sending 409; a send that failed releases its key. " +
      "Composition: options XOR sections; schema excludes options, sections and location; template excludes every other content field; header and footer need options or sections; options, sections, schema and template need a non-blank message; schema needs a channel. Caps: message 65536 characters, media 1–50 items, options 1–100, sections 1–10 with at most 100 rows in all. " +
      "A media item's `kind` (image, document, video, audio) is optional and inferred when absent (document with a filename, else by the url's extension). A transient channel failure is 503 (with `retry_after` seconds when the provider named one), a permanent refusal 502.",
    area: "notifications",
    auth: { tag: "notifications" },
    body: NotificationSendBody,
    response: z.string(),
    errors: [403, 409, 422, 501, 502, 503],
    idempotent: true,
  },
  async (c, { body, principal, idempotency }) => {
    if (!idempotency) return sendNotification(c, body, principal);
    // A retry with the same key and request answers the first answer and sends nothing; a send
    // that failed releases its key, so its retry sends (src/notifications/send-keys.ts).
    const { key, fingerprint } = idempotency;
    const keys = notificationFeedStub(c.env, sendKeysObject(threadPrincipal(principal.key)));
    const windowMs = c.get("settings").conversations.inboundDedupeTtlSeconds * 1000;
    const verdict = unlessRefused(await keys.claimSendKey(key, fingerprint, Date.now() + windowMs));
    if (verdict.kind === "replay") {
      c.header(REPLAYED_HEADER, "true");
      return verdict.answer;
    }
    let answer: string | null = null;
    try {
      answer = await sendNotification(c, body, principal);
      return answer;
    } finally {
      await keys.settleSendKey(key, fingerprint, answer);
    }
  },
);

/** The send itself (see the door's description); answers the door's text. */
async function sendNotification(c: Context<AppEnv>, body: NotificationSendBody, principal: Principal): Promise<string> {
  const settings = c.get("settings");
  const clamp = clampAudience({ restricted: principal.restricted, user_id: principal.key.user_id }, body.audience);
  if (!clamp.ok) throw forbidden();
  const audience = clamp.audience;

  if (body.channel === undefined) {
    if (body.schema !== undefined) throw badRequest("invalid body: schema: needs a channel (a form nobody could submit is not stored)");
    const refusal = storeRefusal("interactions", settings);
    if (refusal) throw refusal;
    await recordNotification(c.env, settings.notifications, mintNotification(body, { audience, recipient: body.recipient }, crypto.randomUUID(), new Date()));
    return SINK_ANSWER;
  }

  const send = prepareChannelSend(c.env, settings, body.channel, body.message, richPartOf(body), body.recipient);
  // The feed record comes after the send (a refused send leaves no entry), so a send that would
  // need the sink is refused before it goes out when the sink is not configured.
  if (audience !== undefined) {
    const refusal = storeRefusal("interactions", settings);
    if (refusal) throw refusal;
  }
  await deliverChannelSend(send, c.env, settings, webNotificationSink);
  if (audience !== undefined) {
    await recordNotification(c.env, settings.notifications, mintNotification(body, { audience, recipient: send.to }, crypto.randomUUID(), new Date()));
  }
  return `notification sent via '${send.adapter.name}'`;
}

addRoute(
  notificationsRouter,
  {
    method: "get",
    path: "/api/notifications",
    summary: "List internal notifications, newest first",
    description:
      'A restricted caller (an owned key) reads its own per-identity feed: every notification addressed to its user_id since its key was minted (what was addressed to the user_id before belongs to an earlier holder, or nobody: docs/access-control.md, "Identities"), within the feed cap, and no broadcasts. Any other caller reads the shared feed, which holds every recorded notification. No paging: a feed holds at most `NOTIFICATIONS_FEED_MAX` entries. Without `INTERACTIONS_STORE_URL` the list is empty.',
    area: "notifications",
    auth: { tag: "notifications" },
    response: NotificationFeedAnswer,
  },
  async (c, { principal }) => {
    const settings = c.get("settings");
    if (!settings.notifications.storeUrl) return { notifications: [] };
    const feed = await readFeed(
      c.env,
      settings.notifications,
      feedOfReader({ restricted: principal.restricted, user_id: principal.key.user_id }),
      holderOf(principal.key).since,
    );
    // The feed answers JSON text; it is embedded as is rather than parsed and serialized again.
    return new Response(`{"data":{"notifications":${feed}}}`, { status: 200, headers: { "content-type": "application/json" } });
  },
);
