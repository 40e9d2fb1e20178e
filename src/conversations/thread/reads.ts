import type { AnswerRecord } from "../model/record";
import type { ForgetResult, SearchScan, TranscriptPage, TranscriptQuery } from "../model/thread-rpc";
import { deleteCheckpoint } from "../../targets/checkpoints/thread-memory";
import type { AlarmArm, ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import type { IndexOutbox } from "./index-outbox";
import { countAll, countLive, deleteAllRecords, getStored, hasTurnInFlight, liveRecords, newestAddressOn } from "./store";
import type { ThreadInbox } from "./inbox";
import type { ThreadNotes } from "./notes";
import type { ThreadMode } from "./thread-mode";
import { withFeedback } from "./answer-feedback-table";

function matchesText(r: AnswerRecord, needle: string): boolean {
  return r.inbound_text.toLowerCase().includes(needle) || (r.answer ?? "").toLowerCase().includes(needle);
}

/**
 * The thread's read doors (record, transcript, search) and forget. Reads treat an expired record as
 * gone, and join in each record's rating (src/conversations/thread/answer-feedback.ts).
 */
export class ThreadReads {
  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "clock">,
    private readonly parts: {
      identity: ThreadIdentity;
      mode: ThreadMode;
      alarm: AlarmArm;
      index: Pick<IndexOutbox, "drained" | "clear">;
      inbox: ThreadInbox;
      notes: Pick<ThreadNotes, "clear">;
    },
  ) {}

  /** Does the thread hold any record, expired or not (the event door never creates a thread)? */
  exists(): boolean {
    return countAll(this.deps.storage) > 0;
  }

  /** See ThreadRpc.eventTarget. */
  eventTarget(routeName: string): { exists: boolean; address: string | null } {
    return { exists: this.exists(), address: newestAddressOn(this.deps.storage, routeName, this.deps.clock.now()) };
  }

  /** One live record (expired reads as absent). */
  getRecord(messageId: string): AnswerRecord | null {
    const cur = getStored(this.deps.storage, messageId);
    if (!cur || (cur.expires_at !== null && cur.expires_at <= this.deps.clock.now())) return null;
    return withFeedback(this.deps.storage, [cur.record])[0];
  }

  /** See ThreadRpc.transcript. */
  transcript(opts: TranscriptQuery): TranscriptPage {
    const { storage } = this.deps;
    const now = this.deps.clock.now();
    if (!opts.q) {
      return { items: withFeedback(storage, liveRecords(storage, now, opts.order, opts.offset, opts.limit)), total: countLive(storage, now), truncated: false };
    }
    const needle = opts.q.toLowerCase();
    const budget = opts.scanBudget ?? 1000;
    const scanned = liveRecords(storage, now, opts.order, 0, budget + 1);
    const truncated = scanned.length > budget;
    const matches = scanned.slice(0, budget).filter((r) => matchesText(r, needle));
    return { items: withFeedback(storage, matches.slice(opts.offset, opts.offset + opts.limit)), total: matches.length, truncated };
  }

  /** See ThreadRpc.search: the caller can cut at a smaller budget by each match's scan position. */
  search(opts: { q: string; budget: number }): SearchScan {
    const rows = liveRecords(this.deps.storage, this.deps.clock.now(), "desc", 0, opts.budget + 1);
    const needle = opts.q.toLowerCase();
    const scanned = Math.min(rows.length, opts.budget);
    const found = rows.slice(0, scanned).flatMap((record, pos) => (matchesText(record, needle) ? [{ pos, record }] : []));
    const rated = withFeedback(
      this.deps.storage,
      found.map((m) => m.record),
    );
    const matches = found.map((m, i) => ({ pos: m.pos, record: rated[i] }));
    return { matches, scanned, more: rows.length > opts.budget };
  }

  /**
   * Forgets the thread: records, its unpushed index notes, mode override, inbox state, private
   * notes and kv agent memory.
   * Refused while a turn is queued or running. `beforeDelete` runs right before the records go.
   */
  async forget(beforeDelete?: () => void): Promise<ForgetResult> {
    const { storage } = this.deps;
    if (hasTurnInFlight(storage)) return { ok: false, reason: "turn_in_flight" };
    // A push in flight must land before the caller clears the shards, or it would list the thread again.
    await this.parts.index.drained();
    if (hasTurnInFlight(storage)) return { ok: false, reason: "turn_in_flight" };
    const threadId = this.parts.identity.get();
    // In the same synchronous step as the delete: what the caller reads of the records is exactly what goes.
    beforeDelete?.();
    const removed = deleteAllRecords(storage);
    this.parts.index.clear();
    this.parts.mode.clear();
    this.parts.inbox.clear();
    this.parts.notes.clear();
    if (threadId) deleteCheckpoint({ storage, threadId });
    await this.parts.alarm.arm();
    return { ok: true, removed };
  }
}
