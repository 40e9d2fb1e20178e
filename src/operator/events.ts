/**
 * The event door (spec §4.4, §6; decisions §6): a structured event delivered into an existing
 * thread as a turn of the route's tool target, through the thread's FIFO.
 *
 * Idempotency: per route on `event_id` (D1 `inbound_dedupe`, namespace `event:<route>`), held for
 * `inbound_dedupe_ttl_seconds`. A live claim answers with its original message_id and only
 * re-offers that record to the thread object, whose accept is idempotent on message_id: a crash
 * between claim and accept loses nothing, and a turn never runs twice. The claim is taken only
 * after the rate cap passed, and released when the queue is full, so a refused admission never
 * burns the key.
 */
import { type DedupeClaim, claimKey, liveClaim, releaseKey } from "../bridge/dedupe";
import type { TurnInbound } from "../bridge/payload";
import { type AnswerRecord, mintRecord } from "../bridge/record";
import type { RouteRow } from "../bridge/routes-store";
import { takeToken, threadStub } from "../bridge/stubs";
import { apiThreadId, channelThreadId, parseThreadId } from "../bridge/thread-id";
import type { Env } from "../env";
import { HttpError, conflict, tooManyRequests, unavailable } from "../http/errors";
import type { ConversationSettings } from "../settings/settings";
import type { EventBody } from "./schemas";
import { guardThread, threadAddress } from "./thread-guard";

export type EventVerdict =
  | { kind: "accepted"; message_id: string; thread_id: string }
  | { kind: "answered"; record: AnswerRecord };

function buildRecord(route: RouteRow, caller: string, threadId: string, messageId: string, event: EventBody["event"]): { record: AnswerRecord; inbound: TurnInbound } {
  const parsed = parseThreadId(threadId);
  const address = parsed.kind === "route" ? threadAddress(route.door, parsed.rest) : null;
  const inboundEvent = { id: event.event_id, kind: event.kind, payload: event.payload };
  const record = mintRecord(route, {
    message_id: messageId,
    thread_id: threadId,
    client_address: address,
    caller_principal: caller,
    origin: "client",
    inbound_kind: "event",
    inbound_text: "",
    inbound_event: inboundEvent,
    submitted_by: caller,
  });
  const inbound: TurnInbound = {
    message_id: messageId,
    thread_id: threadId,
    kind: "event",
    inbound_id: event.event_id,
    source: `event:${event.kind}`,
    text: null,
    sender: null,
    our_identity: route.our_identity,
    channel: route.channel,
    event: inboundEvent,
  };
  return { record, inbound };
}

/** Admits one event; throws the door's refusals (404, 409, 429, 503) as HttpErrors. */
export async function admitEvent(env: Env, s: ConversationSettings, route: RouteRow, caller: string, body: EventBody): Promise<EventVerdict> {
  const db = env.DB;
  if (route.target_kind === "agent") throw conflict("the route's target is an agent; events are delivered to tool targets only");
  // The platform composes the thread id: by address as the route's own door does (an api route
  // qualifies it by the caller, so a caller reaches only its own threads by address).
  const threadId =
    body.thread_id !== undefined
      ? guardThread(route.route_name, body.thread_id).thread_id
      : route.door === "api"
        ? apiThreadId(route.route_name, caller, body.address!)
        : channelThreadId(route.route_name, body.address!);
  const known = await db.prepare("SELECT 1 AS one FROM threads WHERE route_name = ? AND thread_id = ?").bind(route.route_name, threadId).first();
  if (!known) throw new HttpError(404, "thread not found on this route");

  const namespace = `event:${route.route_name}`;
  const key = body.event.event_id;
  const nowMs = Date.now();
  const original = await liveClaim(db, namespace, key, nowMs);
  if (original) return redelivered(env, route, caller, original, body.event);

  const capacity = route.turns_per_hour_override ?? s.perAddressTurnsPerHour;
  const verdict = await takeToken(env, s, `api:${route.route_name}:${caller}`, capacity);
  if (!verdict.allowed) throw tooManyRequests("rate limit exceeded for this caller on this route", verdict.retryAfterSeconds);

  const mine = { message_id: crypto.randomUUID(), thread_id: threadId };
  const held = await claimKey(db, namespace, key, mine, nowMs + s.inboundDedupeTtlSeconds * 1000, nowMs);
  if (held.message_id !== mine.message_id) return redelivered(env, route, caller, held, body.event);

  const { record, inbound } = buildRecord(route, caller, threadId, mine.message_id, body.event);
  // Inline answers exist only on the api door; a channel route's answer is a channel send.
  const waitSeconds = route.door === "api" ? Math.min(body.wait_seconds ?? 0, s.syncWaitMaxSeconds) : 0;
  const result = await threadStub(env, threadId).accept({ record, inbound, waitMs: Math.round(waitSeconds * 1000) });
  if (result.kind === "queue_full") {
    await releaseKey(db, namespace, key, mine.message_id);
    throw unavailable("thread queue is full; retry later");
  }
  if (result.kind === "answered") return { kind: "answered", record: result.record };
  return { kind: "accepted", message_id: result.message_id, thread_id: result.thread_id };
}

/** A redelivered event_id: the original message, re-offered so a crash after the claim loses nothing. */
async function redelivered(env: Env, route: RouteRow, caller: string, held: DedupeClaim, event: EventBody["event"]): Promise<EventVerdict> {
  const { record, inbound } = buildRecord(route, caller, held.thread_id, held.message_id, event);
  const again = await threadStub(env, held.thread_id).accept({ record, inbound, waitMs: 0 });
  if (again.kind === "queue_full") throw unavailable("thread queue is full; retry later");
  return { kind: "accepted", message_id: held.message_id, thread_id: held.thread_id };
}
