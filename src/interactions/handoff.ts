/**
 * Handing an ended interaction to the thread whose turn parked on it: the thread
 * queues a resume turn whose record carries the resumed reply, delivered like any answer. The
 * record's id was minted once by the interaction, so a retried handoff is the same record; its
 * message directory entry is written first, so the single-record read door finds it at once.
 */
import { ledgerShard, messageKey } from "../shards/rpc";
import type { Env } from "../platform/env";
import type { Waiters } from "./object-kit";
import type { InteractionState } from "./record";

/** The handoff's end: queued in the thread, not held there (nothing to resume), or to be tried again. */
export type HandoffResult = "accepted" | "not_held" | "retry";

export async function handOffToThread(env: Env, waiters: Waiters, s: InteractionState, messageId: string, by: string | null): Promise<HandoffResult> {
  if (s.origin.kind !== "thread" || s.status === "pending") return "not_held";
  const { thread_id, route_name } = s.origin;
  const k = messageKey(messageId);
  const shard = ledgerShard(env, k);
  await shard.put(k, { message_id: messageId, thread_id, route_name }, null);
  const r = await waiters.thread(thread_id).resumeInteraction({ interaction_id: s.interaction_id, message_id: messageId, outcome: s.status, by });
  if (r.accepted) return "accepted";
  if (r.retry) return "retry";
  // Nothing was queued: the directory entry would point at no record.
  await shard.release(k, messageId);
  return "not_held";
}
