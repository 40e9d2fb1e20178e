/**
 * Routing of verified channel events (spec §3.1, §4.2; decisions §6, §11): an inbound message
 * becomes a turn on its channel route's thread; a receipt moves the record it is about.
 *
 * Dedupe claims `(channel, provider_message_id)` in D1 before admission with a fresh message_id.
 * A redelivery finds the claim and re-offers the same message_id to the thread object, whose
 * accept is idempotent: a crash between claim and accept therefore loses nothing, and a turn
 * never runs twice. A refused admission (full queue) releases the claim so the retry can pass.
 */
import type { InboundMessage, ReceiptUpdate } from "../channels/adapter";
import type { Env } from "../env";
import type { ConversationSettings } from "../settings/settings";
import { claimKey, releaseKey } from "./dedupe";
import { locateOutbound } from "./indexes";
import type { TurnInbound } from "./payload";
import { type AnswerRecord, SLOW_DOWN_TEXT, mintRecord } from "./record";
import { type RouteRow, routeByChannelIdentity } from "./routes-store";
import { takeToken, threadStub } from "./stubs";
import { channelThreadId } from "./thread-id";

export type InboundVerdict = "admitted" | "duplicate" | "unrouted" | "blank" | "slow_down" | "shed" | "queue_full";

/** Thrown when the thread queue is full: the door answers 503 so the provider redelivers later. */
export class RetryLaterError extends Error {}

function isBlank(m: InboundMessage): boolean {
  return m.text.trim() === "" && !m.attachments?.length && !m.location && !m.form;
}

function buildRecord(route: RouteRow, channel: string, m: InboundMessage, messageId: string, threadId: string): { record: AnswerRecord; inbound: TurnInbound } {
  const sender = m.sender.trim();
  const attachments = m.attachments?.map(({ kind, url, caption, filename }) => ({ kind, url, ...(caption ? { caption } : {}), ...(filename ? { filename } : {}) })) ?? null;
  const record = mintRecord(
    { ...route, callback_url: null },
    {
      message_id: messageId,
      thread_id: threadId,
      client_address: sender,
      channel,
      provider_message_id: m.provider_message_id,
      caller_principal: null,
      origin: "client",
      inbound_kind: "message",
      inbound_text: m.text,
      inbound_form: m.form ?? null,
      inbound_attachments: attachments,
      inbound_location: m.location ?? null,
    },
  );
  const inbound: TurnInbound = {
    message_id: messageId,
    thread_id: threadId,
    kind: "message",
    inbound_id: m.provider_message_id,
    source: channel,
    text: m.text,
    sender,
    our_identity: route.our_identity,
    channel,
    form: m.form ?? null,
    params: m.params ?? null,
    attachments: record.inbound_attachments,
    location: m.location ?? null,
  };
  return { record, inbound };
}

/** Admits one verified inbound message. Throws RetryLaterError on a full queue (→ 503). */
export async function admitChannelMessage(env: Env, s: ConversationSettings, channel: string, m: InboundMessage): Promise<InboundVerdict> {
  const db = env.DB;
  const route = await routeByChannelIdentity(db, channel, m.our_identity.trim());
  if (!route || route.door !== "channel") return "unrouted";
  if (isBlank(m) || !m.sender.trim()) return "blank";

  const threadId = channelThreadId(route.route_name, m.sender);
  const namespace = `channel:${channel}`;
  const now = Date.now();
  const fresh = crypto.randomUUID();
  const messageId = (await claimKey(db, namespace, m.provider_message_id, { message_id: fresh, thread_id: threadId }, now + s.inboundDedupeTtlSeconds * 1000, now)).message_id;
  const { record, inbound } = buildRecord(route, channel, m, messageId, threadId);
  const thread = threadStub(env, threadId);

  if (messageId !== fresh) {
    // A redelivery: make sure the original was accepted (idempotent), never a second turn.
    const again = await thread.accept({ record, inbound, waitMs: 0 });
    if (again.kind === "queue_full") throw new RetryLaterError("thread queue is full");
    return "duplicate";
  }

  const capacity = route.turns_per_hour_override ?? s.perAddressTurnsPerHour;
  const verdict = await takeToken(env, s, `channel:${route.route_name}:${record.client_address}`, capacity);
  if (!verdict.allowed) {
    // Over the cap: no turn. The first refusal of a cooldown window answers with the slow-down
    // text (delivered like any answer); later ones are terminal `shed` with nothing sent.
    const preset = verdict.notify
      ? { status: "pending_delivery" as const, outcome: { answer_status: "answered" as const, answer: SLOW_DOWN_TEXT, error: null } }
      : { status: "shed" as const, outcome: { answer_status: null, answer: null, error: null } };
    await thread.accept({ record, inbound, waitMs: 0, preset });
    return verdict.notify ? "slow_down" : "shed";
  }

  const result = await thread.accept({ record, inbound, waitMs: 0 });
  if (result.kind === "queue_full") {
    await releaseKey(db, namespace, m.provider_message_id, messageId);
    throw new RetryLaterError("thread queue is full");
  }
  return "admitted";
}

/** Applies a delivery receipt to the record whose chunk it names; unknown ids are ignored. */
export async function applyChannelReceipt(env: Env, channel: string, r: ReceiptUpdate): Promise<boolean> {
  const where = await locateOutbound(env.DB, channel, r.provider_message_id);
  if (!where) return false;
  return threadStub(env, where.thread_id).applyReceipt(where.message_id, r.status, r.error);
}
