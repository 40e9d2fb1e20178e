/**
 * Channel provider webhooks (decisions §11): public doors that read the raw body (≤ 1 MiB) and
 * verify the provider's signature on those exact bytes before anything parses them. A verified
 * webhook is acknowledged (Twilio 204, others 200) even when duplicate, unrouted or blank, so
 * providers do not retry-storm; a full thread queue or a store fault answers 503 so the provider
 * redelivers; a missing or bad signature is 401 and runs no turn.
 */
import { Hono } from "hono";
import { z } from "zod";
import { RetryLaterError, routeChannelEvents } from "../../conversations/door/channel-inbound";
import type { WebhookDoor } from "../adapter";
import { receiveWebhook, webhookAck, webhookOf } from "../webhook";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, describeFailure, platformFailure, serverError } from "../../platform/http/errors";
import { addPublicRoute } from "../../platform/http/route";
import type { Context } from "hono";

export const channelWebhooksRouter = new Hono<AppEnv>();

const channelParams = z.object({ channel: z.string().regex(/^[a-z0-9-]{1,32}$/, { message: "is not a channel name" }) });

async function handle(c: Context<AppEnv>, door: WebhookDoor, channel: string, raw: Uint8Array): Promise<Response> {
  const out = await receiveWebhook(channel, webhookOf(door, c.req.raw, raw), c.env, new Date());
  if (out.kind === "refused") throw new HttpError(out.status, out.error, undefined, undefined, out.allow ? { Allow: out.allow } : undefined);
  if (out.kind === "reply") return out.response;
  const settings = c.get("settings").conversations;
  if (!settings.storeUrl) {
    // Verified but nowhere to route: acknowledge so the provider does not retry forever.
    return webhookAck(out.adapter);
  }
  try {
    await routeChannelEvents(c.env, settings, out.adapter.name, out.events);
  } catch (err) {
    if (err instanceof RetryLaterError)
      throw serverError("queue_full", "busy; redeliver later", { reason: `channel ${out.adapter.name}: the thread queue is full`, retryAfterSeconds: 1 });
    const why = platformFailure(err)?.reason ?? "routing a verified webhook failed";
    throw serverError("inbound_unavailable", "temporarily unable to accept; redeliver later", {
      reason: `channel ${out.adapter.name}: ${why}: ${describeFailure(err)}`,
      retryAfterSeconds: 1,
    });
  }
  return webhookAck(out.adapter);
}

const description =
  "Public: authenticated by the provider's signature over the raw body (401 when missing or bad; 404 when the channel's secrets are unset). Verified webhooks are acknowledged even when duplicate, unrouted or blank; 503 asks the provider to redeliver.";

for (const method of ["get", "post"] as const) {
  addPublicRoute(
    channelWebhooksRouter,
    {
      method,
      path: "/api/channels/{channel}/inbound",
      summary: method === "get" ? "Provider webhook handshake (WhatsApp hub.challenge)" : "Provider inbound webhook (messages; WhatsApp statuses)",
      description,
      area: "channels",
      auth: { public: true },
      params: channelParams,
      rawBody: method === "post",
      // A provider's message can carry a pairing code its turn redeems; the GET handshake carries none.
      ...(method === "post" ? { links: "redeem" as const } : {}),
      errors: [401, 403, 404, 405, 503],
    },
    (c, { params, raw }) => handle(c, "inbound", params.channel, raw ?? new Uint8Array(0)),
  );
}

addPublicRoute(
  channelWebhooksRouter,
  {
    method: "post",
    path: "/api/channels/{channel}/status",
    summary: "Provider delivery-status webhook (Twilio status callbacks)",
    description,
    area: "channels",
    auth: { public: true },
    params: channelParams,
    rawBody: true,
    errors: [401, 404, 405, 503],
  },
  (c, { params, raw }) => handle(c, "status", params.channel, raw ?? new Uint8Array(0)),
);
