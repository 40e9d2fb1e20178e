/** The event door (spec §4.4, §6; decisions §6): structured events into existing threads. */
import { Hono } from "hono";
import { threadPrincipal } from "../../access-control/identity";
import { prefetchDoorRoute, prefetchedRoute } from "../door/admission";
import { messageAccepted, messageAnswered, routeParams } from "../model/schemas";
import { admitEvent } from "../door/event-door";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import { admissionAnswer } from "./answer";
import { eventBody } from "../operator/schemas";

export const conversationEventsRouter = new Hono<AppEnv>();

addRoute(
  conversationEventsRouter,
  {
    method: "post",
    path: "/api/conversations/{route_name}/events",
    summary: "Deliver a structured event into an existing thread as a tool turn",
    description:
      "Exactly one of `address` (composed into the thread id as the route's door does; an api route qualifies it by the caller) or `thread_id` (verified to belong to the route). The turn is queued behind turns already on the thread; its tool sees `event`, with `message` and `sender` null and `turn.inbound.source` = `event:<kind>`. Idempotent per route on `event.event_id` for inbound_dedupe_ttl_seconds: a redelivery answers 202 with the original message_id and starts no turn; a refused admission (429, 503) does not burn the key. An `Idempotency-Key` works as on the message door (docs/api-notes.md): the key on another request is 422, while its first request is still being answered 409. 404 when the thread does not exist on the route (the door never creates one), 409 when the route's target is an agent.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    body: eventBody,
    response: messageAnswered,
    alsoResponds: [{ status: 202, description: "Accepted; the answer follows by the route's door (callback, poll or channel send)", schema: messageAccepted }],
    errors: [404, 409, 422, 429, 503],
    prefetch: prefetchDoorRoute,
    idempotent: true,
  },
  async (c, { params, body, principal, idempotency }) => {
    const key = principal.key;
    const admission = await admitEvent(
      c.env,
      c.get("settings").conversations,
      params.route_name,
      key.user_id,
      body,
      prefetchedRoute(c.req.raw),
      threadPrincipal(key),
      idempotency,
    );
    return admissionAnswer(c, admission);
  },
);
