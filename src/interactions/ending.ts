/**
 * Records an interaction's end in its object: the state, what it owes the run (nothing when the
 * thread's participant claimed it: the run resumes in that inbound's turn), the event, the purge
 * instant; the ticket is spent. The alarm does the owed work (src/interactions/alarm.ts).
 */
import type { ObjectSettings } from "../config/object-settings";
import { eventFor, resumeOwed } from "./lifecycle";
import { type InteractionKit, iso } from "./object-kit";
import { queueEvent, saveRow } from "./object-store";
import type { InteractionState } from "./record";

export async function recordEnd(
  kit: InteractionKit,
  state: InteractionState,
  by: string | null,
  claimedBy: string | null,
  cfg: ObjectSettings,
  nowMs: number,
  arm = true,
): Promise<InteractionState> {
  const owed = claimedBy ? "done" : resumeOwed(state);
  const replyId = state.origin.kind === "thread" ? (claimedBy ?? crypto.randomUUID()) : null;
  const ended: InteractionState = { ...state, reply_message_id: replyId };
  const retention = cfg.settings.interactions.retentionSeconds * 1000;
  saveRow(kit.sql, {
    state: ended,
    index_dirty: true,
    ticket_due: false,
    ticket_hash: null,
    ticket_expires_at: null,
    resume: owed,
    resume_message_id: owed === "handoff" ? replyId : null,
    ended_by: by,
    claimed_by: claimedBy,
    purge_at: nowMs + retention,
  });
  queueEvent(kit.sql, eventFor(ended, ended.ended_at ?? iso(nowMs)));
  if (arm) await kit.arm(nowMs);
  return ended;
}
