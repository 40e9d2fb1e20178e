/**
 * Admission (spec §4.3, §4.4, §4.7; decisions §6, §11): what every way in does between a parsed
 * request and the thread object's durable accept. The steps, in this order:
 *
 *   1. the route: read it and refuse what the door refuses (404, the wrong door, …); the message
 *      door's read arrives prefetched in the caller's key lookup (`prefetchDoorRoute`)
 *   2. the thread id: composed from the route and an address (`composeThreadId`), or a named
 *      thread id checked against the route
 *   3. dedupe, on the doors that carry a provider message id or an event id (dedupe.ts)
 *   4. a rate token from the bucket of (route, caller) or (route, sender) (`takeRateToken`)
 *   5. the record and the turn input, minted together (`mintArrival`)
 *   6. `ThreadObject.accept` (`handOver`): queue depth (503 when full), the durable insert, and
 *      the inline wait when the caller asked for one; beside it, the message directory entry
 *
 * No step writes D1: the one D1 round trip of a door is its read of the caller's key and the route
 * (docs/performance.md counts every path).
 *
 * The api message door runs them here (`admitMessage`). The channel door (channel-inbound.ts), the
 * event door (events/event-door.ts) and operator send (operator/operator-send.ts) run the same
 * steps from their own modules; where their order differs (dedupe before or after the rate token,
 * a slow-down answer instead of 429, no token for an operator), the module says why.
 */
import { ledgerShard, messageKey } from "../../shards/rpc";
import { noteShed } from "../../observability/shed-counter";
import type { Env } from "../../platform/env";
import { HttpError, badRequest, tooManyRequests, unavailable } from "../../platform/http/errors";
import type { ConversationSettings } from "../../platform/settings/settings";
import { type MintedArrival, mintArrival } from "./arrival";
import type { AnswerRecord } from "../model/record";
import { getRoute, routeWithKeyFromResult, routeWithKeyStatement } from "../store";
import { NO_TARGET_FACTS, type Route } from "../model/route";
import type { MessageBody } from "../model/schemas";
import { type ThreadRpc, takeToken, threadStub } from "./stubs";
import { apiThreadId, channelThreadId, routePrefix } from "../model/thread-id";
import { ensureInboundPerson, threadFor, turnPerson, undoFirstContact } from "../../persons/inbound-person";

/** `ThreadObject.accept`'s request and answer, as the thread's RPC contract declares them. */
type AcceptRequest = Parameters<ThreadRpc["accept"]>[0];
type AcceptResult = Awaited<ReturnType<ThreadRpc["accept"]>>;

/** How the thread is to take a minted arrival: everything `accept` hears besides the record and turn input. */
export type HandOverOptions = Omit<AcceptRequest, "record" | "inbound">;

/** What a door that answers its caller says: the inline answer, or where the answer will be. */
export type Admission = { kind: "accepted"; message_id: string; thread_id: string } | { kind: "answered"; record: AnswerRecord };

/** The message door's request, parsed, with what the route pipeline prefetched for it. */
export interface MessageRequest {
  routeName: string;
  /** The calling key's user_id (what records and traces attribute the message to). */
  caller: string;
  /**
   * The caller as its threads and rate bucket name it (`threadPrincipal`, src/access-control/identity.ts):
   * its user_id, qualified by its generation once the user_id was re-issued, so a new holder of
   * a user_id never continues an earlier holder's threads.
   */
  threadCaller: string;
  body: MessageBody;
  /** The result of `prefetchDoorRoute`'s statement; undefined when nothing was prefetched. */
  prefetched: D1Result | undefined;
}

/**
 * Step 1 of the message and event doors, declared as their routes' `prefetch`: the route joined
 * with its execution key and owner, batched with the caller's key lookup so the request costs one
 * D1 round trip and the turn that runs at once needs no second read of either. Gets raw path
 * params, used only as bound parameters.
 */
export function prefetchDoorRoute(db: D1Database, rawParams: Record<string, string>): D1PreparedStatement[] {
  return [routeWithKeyStatement(db, rawParams.route_name ?? "")];
}

/**
 * Admits one api-door message (spec §4.3): 404 unknown route, 400 a channel route, 429 over the
 * (route, caller) cap, 503 a full thread queue; none of the refusals writes anything.
 */
export async function admitMessage(env: Env, s: ConversationSettings, req: MessageRequest): Promise<Admission> {
  // The snapshot's date, which the thread trusts only briefly: the read came with the key lookup (or comes next).
  const routeReadAtMs = Date.now();
  const {
    route,
    key: executionKey,
    target,
  } = req.prefetched ? routeWithKeyFromResult(req.prefetched) : { route: await getRoute(env.DB, req.routeName), key: undefined, target: NO_TARGET_FACTS };
  if (!route) throw new HttpError(404, "route not found");
  if (route.door !== "api") throw badRequest("route is a channel route; its messages arrive through the channel webhook");

  const routeThread = composeThreadId(route, req.body.external_user_id, req.threadCaller);
  await requireRateToken(env, s, route, req.threadCaller);
  // A multichannel target's person, after the rate token: an inbound refused before never creates one.
  const person = await ensureInboundPerson(
    env,
    route,
    target.config,
    { door: "api", address: routeThread.slice(routePrefix(route.route_name).length) },
    routeReadAtMs,
  );
  const threadId = threadFor(routeThread, person);
  const arrival = mintArrival(
    route,
    { message_id: crypto.randomUUID(), thread_id: threadId },
    { way: "message", caller: req.caller, body: req.body },
    turnPerson(person, target.config),
  );
  const waitSeconds = Math.min(req.body.wait_seconds ?? 0, s.syncWaitMaxSeconds);
  // The route snapshot lets a turn that runs at once skip its own read of the route and key.
  return handOverOr503(env, arrival, { waitMs: Math.round(waitSeconds * 1000), route, executionKey, routeReadAtMs, target }, () => undoFirstContact(person));
}

/**
 * Step 2: the thread `address` names on `route`, composed as the route's door composes it. An api
 * route qualifies it by the calling key (`caller`: its thread principal), so a caller reaches only
 * its own threads; a channel route's thread is the sender's alone (`caller` is not used).
 */
export function composeThreadId(route: Pick<Route, "route_name" | "door">, address: string, caller: string | null): string {
  if (route.door === "channel") return channelThreadId(route.route_name, address);
  if (caller === null) throw new Error("an api route's thread id needs the calling key");
  return apiThreadId(route.route_name, caller, address);
}

/** Whose turns a rate bucket counts. */
export type RateSubject =
  /** The calling key (api message and event doors): a varying external_user_id or address buys nothing. */
  | { caller: string }
  /** A channel participant, by the sender's address. */
  | { sender: string };

/** Step 4: one token from the route's bucket for `subject`; the route's override, else the per-address cap. */
export async function takeRateToken(env: Env, s: ConversationSettings, route: Pick<Route, "route_name" | "turns_per_hour_override">, subject: RateSubject) {
  const key = "caller" in subject ? `api:${route.route_name}:${subject.caller}` : `channel:${route.route_name}:${subject.sender}`;
  const verdict = await takeToken(env, s, key, route.turns_per_hour_override ?? s.perAddressTurnsPerHour);
  // Every refused token is a rate-cap shed for the metrics: counted in memory, handed on in the background.
  if (!verdict.allowed) noteShed(env, route.route_name);
  return verdict;
}

/** Step 4 on a door that answers its caller: over the (route, caller) cap is 429 with Retry-After. */
export async function requireRateToken(
  env: Env,
  s: ConversationSettings,
  route: Pick<Route, "route_name" | "turns_per_hour_override">,
  caller: string,
): Promise<void> {
  const verdict = await takeRateToken(env, s, route, { caller });
  if (!verdict.allowed) throw tooManyRequests("rate limit exceeded for this caller on this route", verdict.retryAfterSeconds);
}

/**
 * Step 6: hands the minted arrival to its thread's object (accept is idempotent on message_id)
 * and, at the same time, writes the message's directory entry (message_id → thread) in its
 * ledger shard, so the single-record read door finds the record the moment the door answers,
 * with no D1 write. A refused accept (a full queue) releases the entry again.
 */
export async function handOver(env: Env, arrival: MintedArrival, how: HandOverOptions): Promise<AcceptResult> {
  const { message_id, thread_id, route_name } = arrival.record;
  const k = messageKey(message_id);
  const shard = ledgerShard(env, k);
  const [result] = await Promise.all([threadStub(env, thread_id).accept({ ...arrival, ...how }), shard.put(k, { message_id, thread_id, route_name }, null)]);
  // A refused accept stores nothing, so neither does its directory.
  if (result.kind === "queue_full") await shard.release(k, message_id);
  return result;
}

/** Where message `messageId` lives, from its directory entry (null: unknown). */
export async function locateMessage(env: Env, messageId: string): Promise<{ route_name: string | null; thread_id: string } | null> {
  const k = messageKey(messageId);
  return ledgerShard(env, k).find(k, Date.now());
}

/**
 * Step 6 on a door that answers its caller: a full queue is 503, after `onQueueFull` (which
 * releases what the refused admission must not keep, such as a dedupe claim).
 */
export async function handOverOr503(env: Env, arrival: MintedArrival, how: HandOverOptions, onQueueFull?: () => Promise<void>): Promise<Admission> {
  const result = await handOver(env, arrival, how);
  if (result.kind === "queue_full") {
    await onQueueFull?.();
    throw unavailable("thread queue is full; retry later");
  }
  if (result.kind === "answered") return { kind: "answered", record: result.record };
  return { kind: "accepted", message_id: result.message_id, thread_id: result.thread_id };
}
