/**
 * Routing of verified channel events (spec §3.1, §4.2; decisions §6, §11): an inbound message
 * becomes a turn on its channel route's thread; a receipt moves the record it is about.
 *
 * Dedupe claims `(channel, provider_message_id)` in its ledger shard with a fresh message_id before the
 * thread's accept. A redelivery finds the claim and re-offers the same message_id to the thread
 * object, whose accept is idempotent: a crash between claim and accept therefore loses nothing,
 * and a turn never runs twice. A refused admission (full queue) releases the claim so the retry can pass.
 */
import type { AnswerFeedbackTap, ChannelEvent, InboundMessage, ReceiptUpdate } from "../../channels/adapter";
import type { Env } from "../../platform/env";
import type { ConversationSettings } from "../../platform/settings/settings";
import { composeThreadId, handOver, locateMessage, takeRateToken } from "./admission";
import { mintArrival } from "./arrival";
import { ledgerShard, outboundKey } from "../../shards/rpc";
import { claimKey, releaseKey, repointClaim } from "./dedupe";
import { SLOW_DOWN_TEXT } from "../model/record";
import { routeWithKeyByChannelIdentity } from "../route-cache";
import type { RouteWithKey } from "../model/route";
import { ensureInboundPerson, threadFor, turnPerson, undoFirstContact } from "../../persons/inbound-person";
import { threadStub } from "./stubs";

/** What became of one verified channel message (a full queue is thrown as RetryLaterError instead). */
export type InboundVerdict = "admitted" | "duplicate" | "unrouted" | "blank" | "slow_down" | "shed" | "queue_full";

/** Thrown when the thread queue is full: the door answers 503 so the provider redelivers later. */
export class RetryLaterError extends Error {}

function isBlank(m: InboundMessage): boolean {
  return m.text.trim() === "" && !m.attachments?.length && !m.location && !m.form;
}

/** Routes a verified webhook's events in order: messages are admitted, receipts and feedback taps applied. */
export async function routeChannelEvents(env: Env, s: ConversationSettings, channel: string, events: ChannelEvent[]): Promise<void> {
  for (const event of events) {
    if (event.kind === "message") await admitChannelMessage(env, s, channel, event);
    else if (event.kind === "feedback") await applyFeedbackTap(env, channel, event);
    else await applyChannelReceipt(env, channel, event);
  }
}

/**
 * A tap on an answer's feedback buttons (docs/channels.md, "Answer feedback buttons"): rates the
 * record the button named, where it lives, for the webhook's sender on the route its identity
 * names; no turn, no record. The thread rates only a record of that very conversation, so a forged
 * button id rates nothing but the sender's own answers. Buttons already sent keep working when the
 * route's switch is turned off. Answers whether a rating was taken.
 */
export async function applyFeedbackTap(env: Env, channel: string, tap: AnswerFeedbackTap): Promise<boolean> {
  const { route } = await routeWithKeyByChannelIdentity(env, channel, tap.our_identity.trim());
  if (!route || route.door !== "channel") return false;
  const home = await locateMessage(env, tap.message_id);
  if (!home) return false;
  const r = await threadStub(env, home.thread_id).rateAnswer(tap.message_id, tap.rating, { channel, address: tap.sender.trim(), route_name: route.route_name });
  return r.ok;
}

/**
 * Admits one verified inbound message through admission's steps. The claim comes before the rate
 * token, unlike the event door's: a message over the cap still gets a record (slow-down or shed),
 * so its redelivery must find that record rather than be admitted anew. Throws RetryLaterError on
 * a full queue (→ 503).
 */
export async function admitChannelMessage(env: Env, s: ConversationSettings, channel: string, m: InboundMessage): Promise<InboundVerdict> {
  return (await admitChannelMessageFor(env, s, channel, m)).verdict;
}

/** What became of one message, with the id of the record it made or found (null: none). */
export interface InboundOutcome {
  verdict: InboundVerdict;
  message_id: string | null;
}

/** admitChannelMessage, also naming the record: the web door answers the visitor with its id. */
export async function admitChannelMessageFor(
  env: Env,
  s: ConversationSettings,
  channel: string,
  m: InboundMessage,
  /** The door's own read of the route by this identity, when it made one (the web door does, to find the session's thread). */
  read?: { at: number; found: RouteWithKey },
): Promise<InboundOutcome> {
  const routeReadAtMs = read?.at ?? Date.now();
  const { route, key: executionKey, target } = read?.found ?? (await routeWithKeyByChannelIdentity(env, channel, m.our_identity.trim()));
  if (!route || route.door !== "channel") return { verdict: "unrouted", message_id: null };
  if (isBlank(m) || !m.sender.trim()) return { verdict: "blank", message_id: null };

  const routeThread = composeThreadId(route, m.sender, null);
  const namespace = `channel:${channel}`;
  const now = Date.now();
  const fresh = crypto.randomUUID();
  const claim = await claimKey(
    env,
    namespace,
    m.provider_message_id,
    { message_id: fresh, thread_id: routeThread },
    now + s.inboundDedupeTtlSeconds * 1000,
    now,
  );
  const messageId = claim.message_id;

  if (messageId !== fresh) {
    // A redelivery: make sure the original was accepted (idempotent), never a second turn. The
    // claim names the thread the original was keyed to.
    const again = await handOver(env, mintArrival(route, { message_id: messageId, thread_id: claim.thread_id }, { way: "channel", channel, message: m }), {
      waitMs: 0,
    });
    if (again.kind === "queue_full") throw new RetryLaterError("thread queue is full");
    return { verdict: "duplicate", message_id: messageId };
  }

  const verdict = await takeRateToken(env, s, route, { sender: m.cap_key ?? m.sender.trim() });
  if (!verdict.allowed) {
    // Over the cap: no turn. The first refusal of a cooldown window answers with the slow-down
    // text (delivered like any answer); later ones are terminal `shed` with nothing sent.
    const preset = verdict.notify
      ? { status: "pending_delivery" as const, outcome: { answer_status: "answered" as const, answer: SLOW_DOWN_TEXT, error: null } }
      : { status: "shed" as const, outcome: { answer_status: null, answer: null, error: null } };
    await handOver(env, mintArrival(route, { message_id: messageId, thread_id: routeThread }, { way: "channel", channel, message: m }), {
      waitMs: 0,
      preset,
      route,
      executionKey,
      routeReadAtMs,
    });
    return { verdict: verdict.notify ? "slow_down" : "shed", message_id: messageId };
  }

  // A multichannel target's person, after the rate token: a shed inbound never creates one.
  const sender = m.sender.trim();
  const person = await ensureInboundPerson(
    env,
    route,
    target.config,
    { door: "channel", channel, our_identity: route.our_identity ?? m.our_identity.trim(), address: sender },
    now,
    m.locale_hint ?? null,
    m.profile ?? null,
  );
  const threadId = threadFor(routeThread, person);
  // A redelivery must find the thread the message went to: the claim follows it to the person thread.
  if (threadId !== routeThread)
    await repointClaim(env, namespace, m.provider_message_id, { message_id: messageId, thread_id: threadId }, now + s.inboundDedupeTtlSeconds * 1000);
  const arrival = mintArrival(
    route,
    { message_id: messageId, thread_id: threadId },
    { way: "channel", channel, message: m },
    turnPerson(person, target.config),
  );

  // The route snapshot lets the turn skip its own read of the route and key (src/conversations/thread/route-reads.ts).
  const result = await handOver(env, arrival, { waitMs: 0, route, executionKey, routeReadAtMs, target });
  if (result.kind === "queue_full") {
    await undoFirstContact(person);
    await releaseKey(env, namespace, m.provider_message_id, messageId);
    throw new RetryLaterError("thread queue is full");
  }
  return { verdict: "admitted", message_id: messageId };
}

/** Applies a delivery receipt to the record whose chunk it names; unknown ids are ignored. */
export async function applyChannelReceipt(env: Env, channel: string, r: ReceiptUpdate): Promise<boolean> {
  const k = outboundKey(channel, r.provider_message_id);
  const where = await ledgerShard(env, k).find(k, Date.now());
  if (!where) return false;
  return threadStub(env, where.thread_id).applyReceipt(where.message_id, r.status, r.error);
}
