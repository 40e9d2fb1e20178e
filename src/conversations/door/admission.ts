/**
 * Admission (spec §4.3, §4.4, §4.7; decisions §6, §11): what every way in does between a parsed
 * request and the thread object's durable accept. The steps, in this order:
 *
 *   1. the route: read it and refuse what the door refuses (404, the wrong door, …); the message
 *      and event doors start the read beside the caller's key check (`prefetchDoorRoute`), and
 *      both come from the isolate caches while their access epochs are unchanged
 *   2. the thread id: composed from the route and an address (`composeThreadId`), or a named
 *      thread id checked against the route
 *   3. dedupe, on the doors that carry a provider message id or an event id (dedupe.ts)
 *   4. a rate token from the bucket of (route, caller) or (route, sender) (`takeRateToken`)
 *   5. the record and the turn input, minted together (`mintArrival`)
 *   6. `ThreadObject.accept` (`handOver`): queue depth (503 when full), the durable insert, and
 *      the inline wait when the caller asked for one; beside it, the message directory entry
 *
 * No step reads or writes D1 in steady state: the caller's key and the route come from isolate
 * caches validated by their access epochs (docs/performance.md counts every path).
 *
 * The api message door runs them here (`admitMessage`). The channel door (channel-inbound.ts), the
 * event door (events/event-door.ts) and operator send (operator/operator-send.ts) run the same
 * steps from their own modules; where their order differs (dedupe before or after the rate token,
 * a slow-down answer instead of 429, no token for an operator), the module says why.
 */
import { ledgerShard, messageKey } from "../../shards/rpc";
import { noteShed } from "../../observability/shed-counter";
import type { Env } from "../../platform/env";
import { HttpError, badRequest, serverError, tooManyRequests } from "../../platform/http/errors";
import { type IdempotencyKey, keyInFlight, keyReused } from "../../platform/http/idempotency";
import type { ConversationSettings } from "../../platform/settings/settings";
import { type MintedArrival, mintArrival } from "./arrival";
import type { AnswerRecord } from "../model/record";
import { routeWithKey } from "../route-cache";
import type { Route, RouteWithKey } from "../model/route";
import type { Context } from "hono";
import type { AppEnv } from "../../platform/http/app-env";
import type { MessageBody } from "../model/schemas";
import { type ThreadRpc, takeToken, threadStub } from "./stubs";
import { apiThreadId, channelThreadId, routePrefix } from "../../shared/thread-id";
import { ensureInboundPerson, threadFor, turnPerson, undoFirstContact } from "../../persons/inbound-person";

/** `ThreadObject.accept`'s request and answer, as the thread's RPC contract declares them. */
type AcceptRequest = Parameters<ThreadRpc["accept"]>[0];
type AcceptKey = NonNullable<AcceptRequest["idempotency"]>;
type AcceptResult = Awaited<ReturnType<ThreadRpc["accept"]>>;

/** How the thread is to take a minted arrival: everything `accept` hears besides the record and turn input. */
export type HandOverOptions = Omit<AcceptRequest, "record" | "inbound">;

/**
 * What a door that answers its caller says: the inline answer, or where the answer will be;
 * `replayed` when an `Idempotency-Key`'s first request answered it.
 */
export type Admission =
  | { kind: "accepted"; message_id: string; thread_id: string; replayed?: boolean }
  | { kind: "answered"; record: AnswerRecord; replayed?: boolean };

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
  /** The route read `prefetchDoorRoute` started for this request (undefined: none was started). */
  prefetched: Promise<RouteWithKey> | undefined;
  /** The request's `Idempotency-Key` (null: none). */
  idempotency?: IdempotencyKey | null;
}

/**
 * A request's `Idempotency-Key` as its thread keeps it: scoped by the door, the route and the
 * caller's thread principal, for the inbound dedupe window from now.
 */
export function threadKey(
  door: "message" | "event" | "operator",
  routeName: string,
  threadCaller: string,
  k: IdempotencyKey | null | undefined,
  s: Pick<ConversationSettings, "inboundDedupeTtlSeconds">,
): AcceptKey | undefined {
  if (!k) return undefined;
  return { scope: `${door}:${routeName}:${threadCaller}`, key: k.key, fingerprint: k.fingerprint, expiresAtMs: Date.now() + s.inboundDedupeTtlSeconds * 1000 };
}

/** The route reads started by `prefetchDoorRoute`, by request. */
const started = new WeakMap<Request, Promise<RouteWithKey>>();

/**
 * Step 1 of the message and event doors, declared as their routes' `prefetch`: the route read
 * (with its execution key and target facts) starts while the caller's key is checked, so the two
 * epoch checks, or on a miss the two D1 reads, run side by side. A refused request leaves it unused.
 */
export function prefetchDoorRoute(c: Context<AppEnv>): void {
  const read = routeWithKey(c.env, c.req.param("route_name") ?? "");
  // Awaited by the handler; a request refused before that must not leave a rejection unhandled.
  read.catch(() => undefined);
  started.set(c.req.raw, read);
}

/** The route read `prefetchDoorRoute` started for `request`, if it did. */
export function prefetchedRoute(request: Request): Promise<RouteWithKey> | undefined {
  return started.get(request);
}

/**
 * Admits one api-door message (spec §4.3): 404 unknown route, 400 a channel route, 429 over the
 * (route, caller) cap, 503 a full thread queue; none of the refusals writes anything.
 */
export async function admitMessage(env: Env, s: ConversationSettings, req: MessageRequest): Promise<Admission> {
  // The snapshot's date, which the thread trusts only briefly: the read came with the key lookup (or comes next).
  const routeReadAtMs = Date.now();
  const { route, key: executionKey, target } = await (req.prefetched ?? routeWithKey(env, req.routeName));
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
  const idempotency = threadKey("message", route.route_name, req.threadCaller, req.idempotency, s);
  return handOverOr503(env, arrival, { waitMs: Math.round(waitSeconds * 1000), route, executionKey, routeReadAtMs, target, idempotency }, () =>
    undoFirstContact(person),
  );
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
 * with no D1 write. An accept that stored nothing (a full queue, an `Idempotency-Key` refused or
 * answered by its first request) releases the entry again.
 */
export async function handOver(env: Env, arrival: MintedArrival, how: HandOverOptions): Promise<AcceptResult> {
  const { message_id, thread_id, route_name } = arrival.record;
  const k = messageKey(message_id);
  const shard = ledgerShard(env, k);
  const [result] = await Promise.all([threadStub(env, thread_id).accept({ ...arrival, ...how }), shard.put(k, { message_id, thread_id, route_name }, null)]);
  // A refused or replayed accept stores nothing, so neither does its directory.
  if (!stored(result, message_id)) await shard.release(k, message_id);
  return result;
}

/** Did `accept` store the arrival minted as `messageId`? */
function stored(result: AcceptResult, messageId: string): boolean {
  if (result.kind === "accepted") return result.message_id === messageId;
  if (result.kind === "answered") return result.record.message_id === messageId;
  return false;
}

/** Where message `messageId` lives, from its directory entry (null: unknown). */
export async function locateMessage(env: Env, messageId: string): Promise<{ route_name: string | null; thread_id: string } | null> {
  const k = messageKey(messageId);
  return ledgerShard(env, k).find(k, Date.now());
}

/**
 * Step 6 on a door that answers its caller: a full queue is 503, an `Idempotency-Key` used for
 * another request 422, one whose first request is still being answered 409, each after
 * `onRefused` (which releases what the refused admission must not keep, such as a dedupe claim or
 * a person created for it); `onRefused` runs too when the key's first request answers instead.
 */
export async function handOverOr503(env: Env, arrival: MintedArrival, how: HandOverOptions, onRefused?: () => Promise<void>): Promise<Admission> {
  const result = await handOver(env, arrival, how);
  if (!stored(result, arrival.record.message_id)) await onRefused?.();
  if (result.kind === "queue_full") {
    throw serverError("queue_full", "thread queue is full; retry later", {
      reason: "the thread already holds CONVERSATIONS_THREAD_QUEUE_DEPTH queued turns",
      retryAfterSeconds: 1,
    });
  }
  if (result.kind === "key_reused") throw keyReused();
  if (result.kind === "key_in_flight") throw keyInFlight();
  // Only an operator's send carries a claim check; a participant's message never meets one.
  if (result.kind === "claimed") throw new HttpError(409, "the thread is claimed by another operator");
  const replayed = result.replayed ? { replayed: true } : {};
  if (result.kind === "answered") return { kind: "answered", record: result.record, ...replayed };
  return { kind: "accepted", message_id: result.message_id, thread_id: result.thread_id, ...replayed };
}
