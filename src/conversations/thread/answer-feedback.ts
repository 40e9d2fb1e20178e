/**
 * Answer feedback (docs/inbox.md, "Answer feedback"): the customer says whether an answer helped.
 * The rating of a record lives beside it in the record's thread (`answer_feedback`), not inside the
 * record's JSON: the turn and the delivery rewrite that JSON from copies they hold across awaits,
 * and a rating given meanwhile (a button tapped while the delivery still runs) would be lost. The
 * read doors join it in (`withFeedback`), so the record, its run trace and the listing all say it.
 *
 * A web visitor's page shows their own rating on the answer's entry; the entry may live in another
 * object than the record (a linked person's record is shown in the visitor's own thread), so the
 * page's copy is kept beside the transcript (`web_ratings`, src/conversations/thread/web-visitor.ts).
 *
 * Both tables are on their own version line (meta `feedback_schema_version`). A rating dies with
 * what it rates: the record's with the record (prune, forget, erase: src/conversations/thread/store.ts),
 * the page's with its entry.
 *
 * A change of rating is one synchronous step: the row, the metrics counters and the listing's
 * refresh (the outbox note), and the `rated` conversation event. Nothing reaches D1 but through
 * the outbox's batched push.
 */
import type { AnswerFeedback, AnswerRating, AnswerRecord } from "../model/record";
import { type ObjectSql, objectSql } from "../../platform/persistence/object-sql";
import { type CounterDelta, ledgerShard, messageKey } from "../../shards/rpc";
import { FEEDBACK_COUNTER, OPERATOR_TARGET, feedbackLabel } from "../../observability/answer-feedback-figures";
import type { IndexWriter, ThreadDeps } from "./deps";
import type { InboxEvent } from "./inbox";
import { getStored } from "./store";
import { type RateResult, type Rater, threadStub } from "../model/thread-rpc";
import type { WebVisitor } from "./web-visitor";
import { feedbackOf } from "./answer-feedback-table";

function feedbackSql(storage: DurableObjectStorage, name: string): ObjectSql {
  return objectSql(storage.sql, `thread feedback (${name})`);
}

/** Can this record's answer be rated: an answer was given (not silence, an error or a shed message)? */
export function rateable(r: AnswerRecord): boolean {
  return r.answer_status === "answered" && ((r.answer ?? "").trim() !== "" || r.answer_part != null);
}

/**
 * The counters of a change from `prev` to `next` (pure): one taken back from the minute `prev`
 * was given in, one added in the minute `next` is given in (docs/observability.md, "Metrics").
 */
export function feedbackCounters(label: string, prev: AnswerFeedback | null, next: { rating: AnswerRating; at: number } | null): CounterDelta[] {
  const out: CounterDelta[] = [];
  if (prev) out.push({ minute: Math.floor(Date.parse(prev.at) / 60_000), name: FEEDBACK_COUNTER[prev.rating], label, value: -1 });
  if (next) out.push({ minute: Math.floor(next.at / 60_000), name: FEEDBACK_COUNTER[next.rating], label, value: 1 });
  return out;
}

/** The thread's ratings of its records' answers. */
export class ThreadFeedback {
  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "clock">,
    private readonly parts: { index: IndexWriter; inbox: { emit(events: InboxEvent[]): void } },
  ) {}

  /**
   * Sets (or with null clears) the rating of record `messageId`'s answer, for `who`: only a live
   * record of that very conversation (channel, client address, route) whose answer was given can
   * be rated; anything else answers `ok: false` and changes nothing. The same rating again changes
   * nothing either (no event, no count).
   */
  rate(messageId: string, rating: AnswerRating | null, who: Rater): RateResult {
    const { storage } = this.deps;
    const now = this.deps.clock.now();
    const cur = getStored(storage, messageId);
    if (!cur || (cur.expires_at !== null && cur.expires_at <= now)) return { ok: false };
    const rec = cur.record;
    if (rec.channel !== who.channel || rec.client_address !== who.address || rec.route_name !== who.route_name || !rateable(rec)) return { ok: false };
    const prev = feedbackOf(storage, [messageId]).get(messageId) ?? null;
    if ((prev?.rating ?? null) === rating) return { ok: true, rating };
    const q = feedbackSql(storage, "write");
    if (rating === null) q.run`DELETE FROM answer_feedback WHERE message_id = ${messageId}`;
    else q.run`INSERT OR REPLACE INTO answer_feedback (message_id, rating, at) VALUES (${messageId}, ${rating}, ${now})`;
    const label = feedbackLabel(rec.route_name, ...this.targetOf(rec));
    // The listing's count of down-rated answers is read at push time; the note carries the counts.
    this.parts.index.note({ counters: feedbackCounters(label, prev, rating === null ? null : { rating, at: now }) });
    this.parts.inbox.emit([{ kind: "rated", at: now, route_name: rec.route_name, by: null, detail: { message_id: messageId, rating } }]);
    return { ok: true, rating };
  }

  /** The target that answered: the turn's, from its run trace; an operator's message has none. */
  private targetOf(rec: AnswerRecord): [kind: string, name: string] {
    if (rec.origin === "operator") return [OPERATOR_TARGET, ""];
    const t = feedbackSql(this.deps.storage, "target").one<{
      kind: string | null;
      name: string | null;
    }>`SELECT json_extract(trace, '$.target.kind') AS kind, json_extract(trace, '$.target.name') AS name FROM run_traces WHERE message_id = ${rec.message_id}`;
    return t?.kind && t.name ? [t.kind, t.name] : ["tool", "(unknown)"];
  }
}

/**
 * A web visitor rates an answer of their own page (ThreadRpc.webRate), in the visitor's own thread:
 * only an answer entry its transcript holds, while its session lives. The record is rated where it
 * lives: here, or on the linked person's thread its directory entry names, which checks again that
 * it is this visitor's. The page's copy follows the record's rating.
 */
export async function rateFromPage(
  deps: Pick<ThreadDeps, "storage" | "env" | "clock">,
  parts: { web: Pick<WebVisitor, "hasSession" | "answerEntry" | "setRating">; feedback: ThreadFeedback },
  messageId: string,
  rating: AnswerRating | null,
  who: { route_name: string; visitor: string },
): Promise<RateResult> {
  if (!parts.web.hasSession() || !parts.web.answerEntry(messageId)) return { ok: false };
  const rater: Rater = { channel: "web", address: who.visitor, route_name: who.route_name };
  let r: RateResult;
  if (getStored(deps.storage, messageId)) r = parts.feedback.rate(messageId, rating, rater);
  else {
    const env = deps.env();
    const k = messageKey(messageId);
    const home = await ledgerShard(env, k).find(k, deps.clock.now());
    r = home ? await threadStub(env, home.thread_id).rateAnswer(messageId, rating, rater) : { ok: false };
  }
  if (r.ok) parts.web.setRating(messageId, r.rating);
  return r;
}
