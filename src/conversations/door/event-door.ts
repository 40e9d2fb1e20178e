/**
 * The event door (spec §4.4, §6; decisions §6): a client's structured event delivered into an
 * existing thread as a turn of the route's tool target, through the thread's FIFO. Its router is
 * routers/conversation-events.ts; the steps are admission's (bridge/admission.ts).
 *
 * Idempotency: per route on `event_id` (a ledger claim, namespace `event:<route>`), held for
 * `inbound_dedupe_ttl_seconds`. A live claim answers with its original message_id and only
 * re-offers that record to the thread object, whose accept is idempotent on message_id: a crash
 * between claim and accept loses nothing, and a turn never runs twice. The claim is taken only
 * after the rate cap passed, and released when the queue is full, so a refused admission never
 * burns the key.
 *
 * Where the answer goes: the route's door, like every answer on the route (inline or callback on
 * an api route, a channel send on a channel route). A channel send needs the participant's
 * address, which the record carries: the address the event names, or the one its route thread's
 * id names. A linked person's thread (`bridge:@person:{id}`) names none, so an event sent there by
 * `thread_id` answers to the person's address on this route as the thread's newest record on it
 * decides (a participant's message or an operator's answer), else to the person's address that
 * came in on this route most recently. The thread object answers that together with whether the
 * thread exists, in the one call the door makes anyway: no D1 statement is added.
 */
import { type Admission, composeThreadId, handOverOr503, requireRateToken, threadKey } from "./admission";
import { type ArrivalRoute, mintArrival } from "./arrival";
import { type DedupeClaim, claimKey, liveClaim, releaseKey } from "./dedupe";
import type { InboundEvent } from "../model/record";
import { routeWithKey } from "../route-cache";
import type { Route, RouteWithKey } from "../model/route";
import { parseThreadId, personThreadId, routePrefix } from "../../shared/thread-id";
import { type PersonView, personDirectoryStub } from "../../persons/rpc";
import type { DoorAddress } from "../../persons/pairing";
import type { TargetConversationConfig } from "../../persons/target-configs";
import { threadStub } from "./stubs";
import type { AcceptKey } from "../model/thread-rpc";
import type { Env } from "../../platform/env";
import { HttpError, conflict } from "../../platform/http/errors";
import type { IdempotencyKey } from "../../platform/http/idempotency";
import type { EventBody } from "../operator/schemas";
import { guardThreadOnRoute, threadAddress } from "../operator/thread-guard";
import type { ConversationSettings } from "../../platform/settings/settings";
import { must } from "../../platform/must";

/**
 * Admits one event on route `routeName` from the key `caller` (its user_id; `threadCaller` is the
 * same caller as its threads and rate bucket name it, src/access-control/identity.ts). Throws the door's
 * refusals in this order: 404 route, 409 agent target, the thread guard's 400/404, 404 unknown
 * thread, 429 over the (route, caller) cap, 503 full queue.
 */
export async function admitEvent(
  env: Env,
  s: ConversationSettings,
  routeName: string,
  caller: string,
  body: EventBody,
  prefetched: Promise<RouteWithKey> | undefined,
  threadCaller: string,
  idempotency: IdempotencyKey | null = null,
): Promise<Admission> {
  // The route read started beside the caller's key check (`prefetchDoorRoute`).
  const routeReadAtMs = Date.now();
  const { route, key: executionKey, target } = await (prefetched ?? routeWithKey(env, routeName));
  if (!route) throw new HttpError(404, "route not found");
  if (route.target_kind === "agent") throw conflict("the route's target is an agent; events are delivered to tool targets only");
  // By address the platform composes the thread id as the route's own door does; a multichannel
  // target's person is resolved read-only (an event never creates one) and keys a linked person's
  // event to its person thread, as its messages are.
  const { threadId, person, address } = await eventThread(env, route, target.config, body, threadCaller);

  const event: InboundEvent = { id: body.event.event_id, kind: body.event.kind, payload: body.event.payload };
  const namespace = `event:${route.route_name}`;
  const nowMs = Date.now();
  // The door never creates a thread: an event is about a conversation that already exists. The
  // thread object says so itself (no listing lag), in parallel with the dedupe look-up.
  const stub = threadStub(env, threadId);
  const [seen, original] = await Promise.all([
    address === PERSON_THREAD ? stub.eventTarget(route.route_name) : stub.exists().then((exists) => ({ exists, address: null })),
    liveClaim(env, namespace, event.id, nowMs),
  ]);
  if (!seen.exists) throw new HttpError(404, "thread not found on this route");
  const answerTo = address === PERSON_THREAD ? (seen.address ?? (person ? personAddressOn(route, person) : null)) : address;
  // A redelivery re-offers its original record; were that accept lost, it answers where this one would.
  const addressFor = (held: DedupeClaim) => (held.thread_id === threadId ? answerTo : addressOf(route, held.thread_id));
  // An Idempotency-Key is checked by the thread that holds it, on a redelivery too: the key on
  // another request (another payload, say) is refused there.
  const key = threadKey("event", route.route_name, threadCaller, idempotency, s);
  if (original) return redelivered(env, route, caller, original, event, addressFor(original), key);

  await requireRateToken(env, s, route, threadCaller);

  const mine = { message_id: crypto.randomUUID(), thread_id: threadId };
  const held = await claimKey(env, namespace, event.id, mine, nowMs + s.inboundDedupeTtlSeconds * 1000, nowMs);
  if (held.message_id !== mine.message_id) return redelivered(env, route, caller, held, event, addressFor(held), key);

  const arrival = mintArrival(
    route,
    mine,
    { way: "event", caller, address: answerTo, event },
    person ? { person: { person_id: person.person_id, person_addresses: person.addresses.map((a) => ({ ...a })), locale: person.locale } } : {},
  );
  // Inline answers exist only on the api door; a channel route's answer is a channel send.
  const waitSeconds = route.door === "api" ? Math.min(body.wait_seconds ?? 0, s.syncWaitMaxSeconds) : 0;
  return handOverOr503(env, arrival, { waitMs: Math.round(waitSeconds * 1000), route, executionKey, routeReadAtMs, target, idempotency: key }, () =>
    releaseKey(env, namespace, event.id, mine.message_id),
  );
}

/**
 * A redelivered event_id: the original message, re-offered so a crash after the claim loses
 * nothing. With an Idempotency-Key its first request's answer (inline, say) is the answer.
 */
async function redelivered(
  env: Env,
  route: ArrivalRoute,
  caller: string,
  held: DedupeClaim,
  event: InboundEvent,
  address: string | null,
  key: AcceptKey | undefined,
): Promise<Admission> {
  const arrival = mintArrival(route, held, { way: "event", caller, address, event });
  const answered = await handOverOr503(env, arrival, { waitMs: 0, idempotency: key });
  if (answered.replayed) return answered;
  return { kind: "accepted", message_id: held.message_id, thread_id: held.thread_id };
}

/** The client address a thread id names on the route's door (null for a thread that is not route-keyed). */
function addressOf(route: ArrivalRoute, threadId: string): string | null {
  const parsed = parseThreadId(threadId);
  return parsed.kind === "route" ? threadAddress(route.door, parsed.rest) : null;
}

/** The `address` of a linked person's thread named by `thread_id`: the thread object decides it (see the file's comment). */
const PERSON_THREAD = Symbol("the thread's newest record on the route decides");

/**
 * The thread an event goes to, its person on a multichannel target (read-only), and the client
 * address its answer goes to: the one the event or its route thread names, or PERSON_THREAD.
 */
async function eventThread(
  env: Env,
  route: Route,
  config: TargetConversationConfig | null,
  body: EventBody,
  caller: string,
): Promise<{ threadId: string; person: PersonView | null; address: string | null | typeof PERSON_THREAD }> {
  if (body.thread_id !== undefined) {
    const guarded = await guardThreadOnRoute(env, route.route_name, body.thread_id, route);
    if (guarded.person) return { threadId: guarded.thread_id, person: guarded.person, address: PERSON_THREAD };
    const address = threadAddress(route.door, guarded.rest);
    if (!config?.multichannel) return { threadId: guarded.thread_id, person: null, address };
    const person = await personDirectoryStub(env, route.target_kind, route.target_name).resolve(doorAddressOfThread(route, guarded.rest));
    return { threadId: guarded.thread_id, person, address };
  }
  const routeThread = composeThreadId(route, must(body.address, "an event's address (the body names a thread_id or an address)"), caller);
  const rest = routeThread.slice(routePrefix(route.route_name).length);
  // A linked person's event is keyed to its person thread, and answers to the address it names.
  const address = threadAddress(route.door, rest);
  if (!config?.multichannel) return { threadId: routeThread, person: null, address };
  const person = await personDirectoryStub(env, route.target_kind, route.target_name).resolve(doorAddressOfThread(route, rest));
  return { threadId: person && person.addresses.length >= 2 ? personThreadId(person.person_id) : routeThread, person, address };
}

/** The person's address that came in on `route` most recently, as the record carries a client address; null when none did. */
function personAddressOn(route: Route, person: PersonView): string | null {
  const rows = person.addresses.filter((a) => a.routes.includes(route.route_name) && a.door === route.door);
  const newest = rows.reduce<(typeof rows)[number] | null>((best, a) => (best === null || a.linked_at > best.linked_at ? a : best), null);
  return newest ? threadAddress(newest.door, newest.address) : null;
}

/** The door address a route thread's rest names (its person directory key). */
function doorAddressOfThread(route: Route, rest: string): DoorAddress {
  return route.door === "channel"
    ? { door: "channel", channel: route.channel ?? "", our_identity: route.our_identity ?? "", address: rest }
    : { door: "api", address: rest };
}
